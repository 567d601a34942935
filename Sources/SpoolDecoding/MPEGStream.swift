import SpoolCore

/// Where everything lies in an MP3 file: its tags (ID3v2 in front, once or more; ID3v1,
/// APEv2 with or without header, Lyrics3 v1/v2 and ID3v2 with footer stacked at the end in
/// any order; any of these between frames), the header frame (Xing/Info/LAME or VBRI), every
/// audio frame, and what is none of these: corrupt regions and a last frame cut short.
///
/// libmpg123 is then shown the audio frames and nothing else, so what it decodes is known
/// before it decodes: `audioFrames` frames of `samplesPerFrame` samples each. Tags are never
/// played and never counted as damage; only bytes that are neither frame nor tag are.
struct MPEGStream {
    /// The first frame's header; every audio frame continues it.
    let header: MPEGAudioHeader
    /// Offset of the first frame (the header frame when there is one).
    let firstFrame: Int
    /// The Xing/Info/LAME or VBRI header frame, which is not audio.
    let infoFrame: MPEGInfoFrame?
    /// The audio frames lie in `audioStart..<audioEnd`, less `hidden` and `corruptRegions`.
    let audioStart: Int
    let audioEnd: Int
    let audioFrames: Int
    /// Bytes of the audio frames, the header frame not included.
    let audioBytes: Int
    /// Whether the audio frames' bit rates differ.
    let bitRatesVary: Bool
    /// The first audio frame's bit rate (bits per second).
    let firstBitRate: Int
    /// Tags and padding between frames: skipped, and no damage.
    let hidden: [Range<Int>]
    /// Bytes that are neither frames nor tags (with the frame before them, whose end they
    /// may have overwritten).
    let corruptRegions: [Range<Int>]
    /// Offset of a last frame that the file ends inside.
    let truncatedFrameAt: Int?
    /// Layer III frames whose main data begins further back than the frames before them hold
    /// (`main_data_begin` past the bit reservoir): libmpg123 plays them as silence. Each with
    /// the bytes missing; consecutive ones are given once, at the first.
    let starvedFrames: [(offset: Int, missingBytes: Int)]
    /// The text of every tag: ID3v2 first, then APEv2, then ID3v1.
    let tags: AudioTags

    /// At most this many tags are looked for at either end (a file of nothing but tag
    /// headers must not take long).
    private static let tagLimit = 64

    /// Reads the structure of the file behind `reader`.
    /// - Throws: `.unsupportedFormat` when no run of MPEG frames is found.
    init(reader: ByteReader, name: String) throws {
        var id3v2 = AudioTags(), ape = AudioTags(), id3v1 = AudioTags()

        // Tags in front: ID3v2 (there may be more than one) and, rarely, APEv2.
        var start = 0
        for _ in 0..<Self.tagLimit {
            let head = reader.bytes(at: start, count: APETagFrame.size)
            if let size = ID3v2Tag.size(header: head), size <= reader.totalSize - start {
                ID3v2Tag.read(reader.bytes(at: start, count: min(size, MP3Tags.textBytesLimit)), into: &id3v2)
                start += size
            } else if let header = APETagFrame(head), header.isHeader, header.totalSize <= reader.totalSize - start {
                let items = reader.bytes(at: start + APETagFrame.size, count: min(header.tagSize - APETagFrame.size, MP3Tags.textBytesLimit))
                APETagFrame.read(items: items, count: header.itemCount, into: &ape)
                start += header.totalSize
            } else {
                break
            }
        }

        // Tags at the end, peeled off one by one whatever their order.
        var end = reader.totalSize
        peeling: for _ in 0..<Self.tagLimit {
            let room = end - start
            let tail = reader.bytes(at: max(start, end - 32), count: min(32, room))
            if room >= ID3v1Tag.size, reader.bytes(at: end - ID3v1Tag.size, count: 3).matches("TAG") {
                ID3v1Tag.read(reader.bytes(at: end - ID3v1Tag.size, count: ID3v1Tag.size), into: &id3v1)
                end -= ID3v1Tag.size
                if end - start >= ID3v1Tag.enhancedSize,
                   reader.bytes(at: end - ID3v1Tag.enhancedSize, count: 4).matches("TAG+") {
                    end -= ID3v1Tag.enhancedSize
                }
                continue
            }
            if tail.count == 32, let footer = APETagFrame(tail), !footer.isHeader, footer.totalSize <= room {
                let items = reader.bytes(at: end - footer.tagSize, count: min(footer.tagSize - 32, MP3Tags.textBytesLimit))
                APETagFrame.read(items: items, count: footer.itemCount, into: &ape)
                // A footer may claim a header the tag does not have.
                let withHeader = footer.hasHeader && reader.bytes(at: end - footer.totalSize, count: 8).matches("APETAGEX")
                end -= withHeader ? footer.totalSize : footer.tagSize
                continue
            }
            if room >= 15 + Lyrics3Tag.begin.utf8.count, tail.matches("LYRICS200", at: tail.count - 9),
               let size = Lyrics3Tag.sixDigits(tail, at: tail.count - 15), size + 15 <= room,
               reader.bytes(at: end - 15 - size, count: 11).matches(Lyrics3Tag.begin) {
                end -= 15 + size
                continue
            }
            if room >= 20, tail.matches("LYRICSEND", at: tail.count - 9) {
                let searched = min(room - 9, Lyrics3Tag.v1Limit + 11)
                let window = reader.bytes(at: end - 9 - searched, count: searched)
                if let begin = Self.lastIndex(of: Lyrics3Tag.begin, in: window) {
                    end -= 9 + searched - begin
                    continue
                }
            }
            if room >= 20, let size = ID3v2Tag.size(footer: Array(tail.suffix(10))), size <= room,
               reader.bytes(at: end - size, count: 3).matches("ID3") {
                ID3v2Tag.read(reader.bytes(at: end - size, count: min(size, MP3Tags.textBytesLimit)), into: &id3v2)
                end -= size
                continue
            }
            break peeling
        }

        // The frames in between.
        var scan = FrameScanner(reader: reader, end: end)
        guard let (first, header) = scan.firstFrame(from: start) else {
            throw AudioError(.unsupportedFormat, "\(name): no MPEG audio frame found")
        }
        self.header = header
        firstFrame = first
        infoFrame = MPEGInfoFrame(frame: reader.bytes(at: first, count: min(header.frameBytes, end - first)), header: header)
        audioStart = infoFrame == nil ? first : min(end, first + header.frameBytes)

        var offset = audioStart
        var frames = 0, bytes = 0, lastFrameEnd = audioStart
        var previousFrame: (offset: Int, bytes: Int)?
        var vary = false, firstRate = 0
        var hidden: [Range<Int>] = [], corrupt: [Range<Int>] = []
        var truncatedAt: Int?
        var tagsBetween = 0
        // The header frame is not shown to libmpg123: the reservoir starts after it.
        var reservoir = LayerIIIReservoir()
        var starved: [(offset: Int, missingBytes: Int)] = []
        while offset < end {
            if let h = scan.header(at: offset, continuing: header) {
                if h.frameBytes > end - offset {
                    truncatedAt = offset
                    break
                }
                if frames == 0 { firstRate = h.bitRate } else if h.bitRate != firstRate { vary = true }
                if let missing = reservoir.take(h, byte: { scan.byte(at: offset + $0) }) { starved.append((offset, missing)) }
                frames += 1
                bytes += h.frameBytes
                previousFrame = (offset, h.frameBytes)
                offset += h.frameBytes
                lastFrameEnd = offset
                continue
            }
            if let size = scan.tagSize(at: offset) {
                if tagsBetween < Self.tagLimit {
                    let tag = reader.bytes(at: offset, count: min(size, MP3Tags.textBytesLimit))
                    switch tag.first {
                    case UInt8(ascii: "I"): ID3v2Tag.read(tag, into: &id3v2)
                    case UInt8(ascii: "T"): ID3v1Tag.read(tag, into: &id3v1)
                    case UInt8(ascii: "A"):
                        if let header = APETagFrame(tag) {
                            APETagFrame.read(items: Array(tag.dropFirst(APETagFrame.size)), count: header.itemCount, into: &ape)
                        }
                    default: break
                    }
                }
                tagsBetween += 1
                hidden.append(offset..<(offset + size))
                offset += size
                previousFrame = nil
                continue
            }
            if scan.isZero(from: offset) { break }  // padding to the end
            // Neither frame nor tag: look for the place the stream picks up again.
            let resync = scan.resync(after: offset, continuing: header)
            if let apeEnd = resync.apeTagEnd {
                hidden.append(offset..<apeEnd)
                offset = apeEnd
                previousFrame = nil
                continue
            }
            // The frame before a broken header is damaged too when the garbage began inside
            // it; drop it rather than decode noise from it. Not so before bytes that run to
            // the end of the audio: those were added after the frames, not written over them.
            var damagedStart = offset
            if let previous = previousFrame, resync.next < end {
                damagedStart = previous.offset
                frames -= 1
                bytes -= previous.bytes
                lastFrameEnd = previous.offset
            }
            corrupt.append(damagedStart..<resync.next)
            offset = resync.next
            previousFrame = nil
        }
        audioEnd = max(audioStart, lastFrameEnd)
        audioFrames = frames
        audioBytes = bytes
        bitRatesVary = vary
        firstBitRate = frames > 0 ? firstRate : header.bitRate
        self.hidden = hidden
        corruptRegions = corrupt
        truncatedFrameAt = truncatedAt
        starvedFrames = starved
        var tags = id3v2
        for (key, value) in ape.fields.sorted(by: { $0.key < $1.key }) { tags.merge(key, value) }
        for (key, value) in id3v1.fields.sorted(by: { $0.key < $1.key }) { tags.merge(key, value) }
        self.tags = tags
    }

    /// Ranges inside `audioStart..<audioEnd` libmpg123 must not see: sorted, and ranges
    /// that touch (a tag right after a tag) merged, so no two are adjacent.
    var excluded: [Range<Int>] {
        let ranges = (hidden + corruptRegions)
            .compactMap { range -> Range<Int>? in
                let lower = max(range.lowerBound, audioStart), upper = min(range.upperBound, audioEnd)
                return lower < upper ? lower..<upper : nil
            }
            .sorted { $0.lowerBound < $1.lowerBound }
        var merged: [Range<Int>] = []
        for range in ranges {
            if let last = merged.last, range.lowerBound <= last.upperBound {
                merged[merged.count - 1] = last.lowerBound..<max(last.upperBound, range.upperBound)
            } else {
                merged.append(range)
            }
        }
        return merged
    }

    /// Whether the file ends before the header frame says it should: a last frame cut
    /// short, or (with no frames lost to corruption, which would explain it) fewer frames
    /// than the header counts. One frame of slack: some encoders count the header frame.
    var isTruncated: Bool {
        if truncatedFrameAt != nil { return true }
        guard corruptRegions.isEmpty else { return false }
        if let claimed = infoFrame?.frames { return claimed > audioFrames + 1 }
        if let claimed = infoFrame?.bytes { return claimed > audioEnd - firstFrame + 4096 }
        return false
    }

    /// Bytes the header says are missing at the end, when it says.
    var missingBytes: Int {
        guard let claimed = infoFrame?.bytes else { return 0 }
        return max(0, claimed - (audioEnd - firstFrame))
    }

    private static func lastIndex(of text: String, in b: [UInt8]) -> Int? {
        let t = Array(text.utf8)
        guard b.count >= t.count else { return nil }
        for i in stride(from: b.count - t.count, through: 0, by: -1) where b[i] == t[0] && b.matches(text, at: i) {
            return i
        }
        return nil
    }

    /// The first frame header at the start of `b` (a sniffed prefix), confirmed by the frame
    /// that follows it when the prefix holds it.
    static func startsWithFrame(_ b: [UInt8]) -> Bool {
        guard let header = MPEGAudioHeader(b), header.frameBytes > 0 else { return false }
        let next = header.frameBytes
        if next + 4 > b.count { return true }
        return MPEGAudioHeader(b, at: next)?.continues(header) ?? false
    }
}

/// Walks the bytes of a file through a 64 KiB window, so reading every header costs few
/// system calls; nothing at or past `end` is read.
private struct FrameScanner {
    let reader: ByteReader
    let end: Int
    private var chunkStart = 0
    private var chunk: [UInt8] = []

    init(reader: ByteReader, end: Int) {
        self.reader = reader
        self.end = end
    }

    mutating func byte(at position: Int) -> UInt8? {
        guard position >= 0, position < end else { return nil }
        load(position, 1)
        let i = position - chunkStart
        return i < chunk.count ? chunk[i] : nil
    }

    /// Up to `count` bytes at `position`, fewer at the end.
    mutating func bytes(at position: Int, count: Int) -> [UInt8] {
        guard position >= 0, position < end, count > 0 else { return [] }
        load(position, min(count, end - position))
        let i = position - chunkStart
        return Array(chunk[i..<min(chunk.count, i + count)])
    }

    private mutating func load(_ position: Int, _ count: Int) {
        if position >= chunkStart, count <= chunk.count - (position - chunkStart) { return }
        chunkStart = position
        chunk = reader.bytes(at: position, count: max(count, min(65_536, end - position)))
    }

    /// The header at `position` when it continues `first` (any header when `first` is nil).
    mutating func header(at position: Int, continuing first: MPEGAudioHeader?) -> MPEGAudioHeader? {
        guard position >= 0, end - position >= 4 else { return nil }
        load(position, 4)
        let i = position - chunkStart
        guard chunk.count - i >= 4,
              let h = MPEGAudioHeader(chunk[i], chunk[i + 1], chunk[i + 2], chunk[i + 3]) else { return nil }
        if let first, !h.continues(first) { return nil }
        return h
    }

    /// Three frames chained from `position`, or a shorter chain that ends at the end of the
    /// audio, at a tag, or in a last frame the file ends inside.
    mutating func chainStarts(at position: Int, continuing first: MPEGAudioHeader?) -> MPEGAudioHeader? {
        guard let start = header(at: position, continuing: first) else { return nil }
        var p = position
        var h = start
        for _ in 0..<3 {
            guard h.frameBytes <= end - p else { return p > position ? start : nil }
            p += h.frameBytes
            if p == end || tagSize(at: p) != nil { return start }
            guard let next = header(at: p, continuing: start) else { return nil }
            h = next
        }
        return start
    }

    /// The first chain of frames at or after `start`.
    mutating func firstFrame(from start: Int) -> (Int, MPEGAudioHeader)? {
        var p = start
        while let sync = nextSync(from: p) {
            if let h = chainStarts(at: sync, continuing: nil) { return (sync, h) }
            p = sync + 1
        }
        return nil
    }

    /// The next 0xFF byte at or after `position` (a whole window searched at a time).
    private mutating func nextSync(from position: Int) -> Int? {
        var p = position
        while p < end {
            let window = bytes(at: p, count: 65_536)
            if window.isEmpty { return nil }
            if let i = window.firstIndex(of: 0xFF) { return p + i }
            p += window.count
        }
        return nil
    }

    /// Bytes of the tag that starts at `position` and ends by the end of the audio: ID3v2,
    /// APEv2 with its header, ID3v1, Lyrics3 v1 or v2.
    mutating func tagSize(at position: Int) -> Int? {
        guard let first = byte(at: position) else { return nil }
        let room = end - position
        switch first {
        case UInt8(ascii: "I"):
            guard let size = ID3v2Tag.size(header: bytes(at: position, count: 10)), size <= room else { return nil }
            return size
        case UInt8(ascii: "A"):
            guard let ape = APETagFrame(bytes(at: position, count: APETagFrame.size)), ape.isHeader,
                  ape.totalSize <= room else { return nil }
            return ape.totalSize
        case UInt8(ascii: "T"):
            guard room >= ID3v1Tag.size, bytes(at: position, count: 3).matches("TAG") else { return nil }
            return ID3v1Tag.size
        case UInt8(ascii: "L"):
            guard bytes(at: position, count: 11).matches(Lyrics3Tag.begin) else { return nil }
            // v2: a 6-digit size (of everything from LYRICSBEGIN) then LYRICS200; v1:
            // LYRICSEND within 5100 bytes.
            let searched = bytes(at: position, count: min(room, Lyrics3Tag.v2Limit + 15))
            var i = 11
            while i + 9 <= searched.count {
                if searched[i] == UInt8(ascii: "L") {
                    if searched.matches("LYRICS200", at: i), let size = Lyrics3Tag.sixDigits(searched, at: i - 6), size == i - 6 {
                        return i + 9
                    }
                    if i <= Lyrics3Tag.v1Limit + 11, searched.matches("LYRICSEND", at: i) { return i + 9 }
                }
                i += 1
            }
            return nil
        default:
            return nil
        }
    }

    /// Whether every byte from `position` to the end is zero.
    mutating func isZero(from position: Int) -> Bool {
        var p = position
        while p < end {
            let b = bytes(at: p, count: 65_536)
            if b.isEmpty { break }
            if b.contains(where: { $0 != 0 }) { return false }
            p += b.count
        }
        return true
    }

    /// Where the stream picks up after the bytes at `position` that are neither a frame nor a
    /// tag: the next chain of frames or tag (or the end). When those bytes turn out to be the
    /// items of an APEv2 tag without header, `apeTagEnd` is where its footer ends.
    mutating func resync(after position: Int, continuing first: MPEGAudioHeader) -> (next: Int, apeTagEnd: Int?) {
        var p = position + 1
        while p < end {
            switch byte(at: p) {
            case 0xFF:
                if chainStarts(at: p, continuing: first) != nil { return (p, nil) }
            case UInt8(ascii: "A"):
                if let ape = APETagFrame(bytes(at: p, count: APETagFrame.size)) {
                    if !ape.isHeader, p + APETagFrame.size - ape.tagSize == position { return (p, p + APETagFrame.size) }
                    if ape.isHeader, ape.totalSize <= end - p { return (p, nil) }
                }
            case UInt8(ascii: "I"), UInt8(ascii: "T"), UInt8(ascii: "L"):
                if tagSize(at: p) != nil { return (p, nil) }
            default:
                break
            }
            p += 1
        }
        return (end, nil)
    }
}
