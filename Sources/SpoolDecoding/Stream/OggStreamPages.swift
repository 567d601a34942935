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
    /// The logical stream the page belongs to.
    let serialNumber: UInt32
    /// The page's number in its stream, from 0.
    let sequenceNumber: UInt32
    /// The segment table: a packet ends at every value below 255.
    let lacing: [UInt8]
    /// The body.
    let body: [UInt8]

    /// Whether the page's first segment continues a packet of the page before.
    var isContinued: Bool { headerType & 0x01 != 0 }
    /// Whether the page is its stream's first (beginning of stream).
    var isFirst: Bool { headerType & 0x02 != 0 }
    /// Whether the page is its stream's last (end of stream).
    var isLast: Bool { headerType & 0x04 != 0 }
    /// Stream offset of the body's first byte.
    var bodyOffset: Int { offset + 27 + lacing.count }
    /// Stream offset of the byte after the page.
    var end: Int { offset + size }
}

/// Finds the pages in the bytes a stream parser holds: the capture pattern, the header,
/// the segment table and the body, kept only when the checksum matches. Bytes that belong to
/// no page (garbage, a damaged page, a page cut short) are skipped up to the next `OggS`.
struct OggStreamPageReader {
    /// Runs of bytes skipped between valid pages (at most `gapLimit`: beyond, the last grows).
    private(set) var gaps: [Range<Int>] = []
    /// A page the stream ended inside: where it began and the bytes it lacked (0 when its
    /// header was cut).
    private(set) var cutPage: (offset: Int, missing: Int)?
    /// Where the run of bytes being skipped began.
    private var runStart: Int?
    /// Restarted at a seek's byte, which may lie inside a page: the bytes before the first
    /// page found are the rest of that page, not damage.
    private var seeking = false
    /// Most gaps kept apart.
    private static let gapLimit = 256

    /// The next whole, valid page, consumed from `input`; nil until more bytes are held.
    mutating func next(_ input: inout StreamInput) -> OggStreamPage? {
        while input.count >= 4 {
            guard input[0] == 0x4F, input[1] == 0x67, input[2] == 0x67, input[3] == 0x53 else {
                skipToCapturePattern(&input)
                continue
            }
            guard let header = input.peek(27) else {
                if passOverAtEnd(&input, missing: 0) { continue }
                return nil
            }
            let h = header.startIndex
            guard header[h + 4] == 0 else {
                skip(1, &input)
                continue
            }
            let segments = Int(header[h + 26])
            guard let table = input.peek(segments, from: 27) else {
                if passOverAtEnd(&input, missing: 0) { continue }
                return nil
            }
            let bodySize = table.reduce(0) { $0 + Int($1) }
            let size = 27 + segments + bodySize
            guard let whole = input.peek(size) else {
                if passOverAtEnd(&input, missing: size - input.count) { continue }
                return nil
            }
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
            if let start = runStart, !seeking { addGap(start..<input.offset) }
            runStart = nil
            seeking = false
            cutPage = nil
            input.consume(size)
            return page
        }
        return nil
    }

    /// A candidate page is not all there: wait for more bytes, or at the end of the stream,
    /// pass over its capture pattern (it may be garbage that claims a large page, with real
    /// pages inside what it claims).
    /// - Returns: Whether the search goes on (the stream has ended).
    private mutating func passOverAtEnd(_ input: inout StreamInput, missing: Int) -> Bool {
        guard input.isFinished else { return false }
        if cutPage == nil, runStart == nil { cutPage = (input.offset, missing) }
        skip(1, &input)
        return true
    }

    /// Drops what is held at the end of the stream: a page cut short, or garbage.
    mutating func dropRest(_ input: inout StreamInput) {
        if input.count > 0 { skip(input.count, &input) }
        guard let start = runStart else { return }
        runStart = nil
        if let cut = cutPage, cut.offset == start { return }  // a page cut short, not garbage
        addGap(start..<input.offset)
    }

    /// Notes a run of skipped bytes (past `gapLimit`, the last gap grows to take it).
    private mutating func addGap(_ gap: Range<Int>) {
        if gaps.count < Self.gapLimit {
            gaps.append(gap)
        } else if let last = gaps.last {
            gaps[gaps.count - 1] = last.lowerBound..<gap.upperBound
        }
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

    /// Drops `count` held bytes as no page.
    private mutating func skip(_ count: Int, _ input: inout StreamInput) {
        if runStart == nil { runStart = input.offset }
        input.consume(count)
    }

    /// Forgets a run being skipped: the next bytes come from elsewhere.
    mutating func restart() {
        runStart = nil
        cutPage = nil
        seeking = true
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
        /// Where it begins in the stream.
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
    /// The packet in progress.
    private var partial: Packet?
    /// The sequence number the next page should have.
    private var nextSequence: UInt32?
    /// Pages whose sequence number jumped (pages lost before them).
    private(set) var holes = 0

    /// An assembler holding at most `keepLimit` bytes of a packet.
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
