/// One Ogg page (RFC 3533 §6) taken from a stream's bytes, its checksum checked.
struct OggStreamPage {
    /// Stream offset of its capture pattern.
    let offset: Int
    /// Header, segment table and body.
    let size: Int
    /// `header_type`: 0x01 continued packet, 0x02 first page of a stream, 0x04 last page.
    let headerType: UInt8
    /// The granule position; −1 when no packet ends on the page.
    let granulePosition: Int64
    let serialNumber: UInt32
    let sequenceNumber: UInt32
    /// The segment table: a packet ends at every value below 255.
    let lacing: [UInt8]
    /// The body.
    let body: [UInt8]

    var isContinued: Bool { headerType & 0x01 != 0 }
    var isFirst: Bool { headerType & 0x02 != 0 }
    var isLast: Bool { headerType & 0x04 != 0 }
    /// Stream offset of the body's first byte.
    var bodyOffset: Int { offset + 27 + lacing.count }
    var end: Int { offset + size }
}

/// Finds the pages in the bytes a stream parser holds: the capture pattern, the header,
/// the segment table and the body, kept only when the checksum matches. Bytes that belong to
/// no page (garbage, a damaged page, a page cut short) are skipped up to the next `OggS`.
struct OggStreamPageReader {
    /// Bytes skipped because they belong to no valid page.
    private(set) var skippedBytes = 0
    /// Where the first skipped run began, for messages.
    private(set) var firstSkipOffset: Int?

    /// The next whole, valid page, consumed from `input`; nil until more bytes are held.
    mutating func next(_ input: inout StreamInput) -> OggStreamPage? {
        while input.count >= 4 {
            guard input[0] == 0x4F, input[1] == 0x67, input[2] == 0x67, input[3] == 0x53 else {
                skipToCapturePattern(&input)
                continue
            }
            guard let header = input.peek(27) else { return nil }
            let h = header.startIndex
            guard header[h + 4] == 0 else {
                skip(1, &input)
                continue
            }
            let segments = Int(header[h + 26])
            guard let table = input.peek(segments, from: 27) else { return nil }
            let bodySize = table.reduce(0) { $0 + Int($1) }
            let size = 27 + segments + bodySize
            guard let whole = input.peek(size) else { return nil }
            let w = whole.startIndex
            let stored = UInt32(whole[w + 22]) | UInt32(whole[w + 23]) << 8 | UInt32(whole[w + 24]) << 16
                | UInt32(whole[w + 25]) << 24
            guard OggPageWalker.checksum(whole) == stored else {
                skip(1, &input)
                continue
            }
            func le<T: FixedWidthInteger>(_ at: Int, _: T.Type) -> T {
                var value: T = 0
                for k in 0..<MemoryLayout<T>.size { value |= T(truncatingIfNeeded: whole[w + at + k]) << (8 * k) }
                return value
            }
            let page = OggStreamPage(
                offset: input.offset, size: size, headerType: whole[w + 5], granulePosition: le(6, Int64.self),
                serialNumber: le(14, UInt32.self), sequenceNumber: le(18, UInt32.self), lacing: Array(table),
                body: Array(whole[(w + 27 + segments)...]))
            input.consume(size)
            return page
        }
        return nil
    }

    /// Drops what is held at the end of the stream: a page cut short, or garbage.
    mutating func dropRest(_ input: inout StreamInput) {
        if input.count > 0 { skip(input.count, &input) }
    }

    /// Drops bytes up to the next `OggS` held, or all but the last three (a pattern may
    /// straddle what has arrived).
    private mutating func skipToCapturePattern(_ input: inout StreamInput) {
        let held = input.held
        var i = held.startIndex + 1
        let last = held.endIndex - 4
        while i <= last {
            if held[i] == 0x4F, held[i + 1] == 0x67, held[i + 2] == 0x67, held[i + 3] == 0x53 { break }
            i += 1
        }
        skip(min(i, last + 1) - held.startIndex, &input)
    }

    private mutating func skip(_ count: Int, _ input: inout StreamInput) {
        if firstSkipOffset == nil { firstSkipOffset = input.offset }
        skippedBytes &+= count
        input.consume(count)
    }
}

/// Joins the segments of one logical stream's pages into packets, as libogg does: a page
/// whose sequence number jumps drops the packet in progress, a continued page with no packet
/// in progress drops its first (continued) segments, and a page not marked continued while a
/// packet is in progress continues it anyway.
///
/// A packet is held whole up to `keepLimit` bytes; beyond, its bytes are counted and dropped
/// (a comment header with cover art can be megabytes), so that no packet grows without bound.
struct OggPacketAssembler {
    /// One packet completed on a page.
    struct Packet {
        /// Stream offset of its first byte.
        var byteOffset: Int
        /// Its bytes, the first `keepLimit` when it is longer.
        var bytes: [UInt8]
        /// Its length in the stream (more than `bytes.count` when it was cut).
        var length: Int
        /// Whether it is the last packet completed on its page (it carries the granule).
        var isLastOnPage: Bool
    }

    /// Most bytes of one packet held; the parser lowers it for a comment header.
    var keepLimit: Int
    private var partial: Packet?
    private var nextSequence: UInt32?
    /// Pages whose sequence number jumped (pages lost before them).
    private(set) var holes = 0

    init(keepLimit: Int) { self.keepLimit = keepLimit }

    /// Forgets the packet in progress and the sequence: the next page follows a gap.
    mutating func restart() {
        partial = nil
        nextSequence = nil
    }

    /// The packets that end on `page`.
    mutating func packets(of page: OggStreamPage) -> [Packet] {
        if let expected = nextSequence, page.sequenceNumber != expected {
            holes += 1
            partial = nil
        }
        nextSequence = page.sequenceNumber &+ 1
        var segment = 0
        var position = 0
        if page.isContinued, partial == nil {
            while segment < page.lacing.count {
                let length = Int(page.lacing[segment])
                position += length
                segment += 1
                if length < 255 { break }
            }
        }
        var completed: [Packet] = []
        while segment < page.lacing.count {
            let length = Int(page.lacing[segment])
            if partial == nil {
                partial = Packet(byteOffset: page.bodyOffset + position, bytes: [], length: 0, isLastOnPage: false)
            }
            let room = max(0, keepLimit - (partial?.bytes.count ?? 0))
            if room > 0 { partial?.bytes.append(contentsOf: page.body[position..<(position + min(room, length))]) }
            partial?.length &+= length
            position += length
            segment += 1
            if length < 255, let done = partial {
                completed.append(done)
                partial = nil
            }
        }
        if !completed.isEmpty { completed[completed.count - 1].isLastOnPage = true }
        return completed
    }
}
