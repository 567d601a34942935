import SpoolCore

/// A parsed 4-byte MPEG audio frame header (ISO 11172-3 / 13818-3, and the 2.5 extension).
/// Spool reads headers itself to recognise MP3 bytes and to check a Xing/LAME header's claims
/// against the real file size; libmpg123 does the decoding.
struct MPEGAudioHeader: Equatable {
    enum Version { case mpeg1, mpeg2, mpeg25 }
    let version: Version
    let layer: Int
    let bitRate: Int  // bits per second
    let sampleRate: Int
    let channelCount: Int
    let frameBytes: Int
    let samplesPerFrame: Int

    init?(_ b: [UInt8], at offset: Int = 0) {
        guard b.count >= offset + 4, b[offset] == 0xFF, b[offset + 1] & 0xE0 == 0xE0 else { return nil }
        let versionBits = (b[offset + 1] >> 3) & 3
        let layerBits = (b[offset + 1] >> 1) & 3
        let bitRateIndex = Int(b[offset + 2] >> 4)
        let rateIndex = Int((b[offset + 2] >> 2) & 3)
        let padding = Int((b[offset + 2] >> 1) & 1)
        guard versionBits != 1, layerBits != 0, bitRateIndex != 0, bitRateIndex != 15, rateIndex != 3 else { return nil }
        version = versionBits == 3 ? .mpeg1 : versionBits == 2 ? .mpeg2 : .mpeg25
        layer = 4 - Int(layerBits)
        let baseRates = [44100, 48000, 32000]
        sampleRate = baseRates[rateIndex] / (version == .mpeg1 ? 1 : version == .mpeg2 ? 2 : 4)
        let table: [Int] = switch (version == .mpeg1, layer) {
        case (true, 1): [0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448]
        case (true, 2): [0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384]
        case (true, _): [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320]
        case (false, 1): [0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256]
        case (false, _): [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160]
        }
        bitRate = table[bitRateIndex] * 1000
        channelCount = (b[offset + 3] >> 6) == 3 ? 1 : 2
        switch layer {
        case 1:
            samplesPerFrame = 384
            frameBytes = (12 * bitRate / sampleRate + padding) * 4
        case 2:
            samplesPerFrame = 1152
            frameBytes = 144 * bitRate / sampleRate + padding
        default:
            samplesPerFrame = version == .mpeg1 ? 1152 : 576
            frameBytes = (version == .mpeg1 ? 144 : 72) * bitRate / sampleRate + padding
        }
    }

    var codecName: String {
        let v = switch version { case .mpeg1: "MPEG-1"; case .mpeg2: "MPEG-2"; case .mpeg25: "MPEG-2.5" }
        return "\(v) Layer \(["I", "II", "III"][layer - 1])"
    }

    /// Bytes of side information after the header in a Layer III frame, where a Xing header sits.
    var sideInfoBytes: Int {
        switch (version == .mpeg1, channelCount) {
        case (true, 1): 17
        case (true, _): 32
        case (false, 1): 9
        case (false, _): 17
        }
    }
}

/// The frame and byte counts a Xing/Info (LAME) or VBRI header claims.
struct XingHeader {
    var frames: Int?
    var bytes: Int?

    /// Looks for the header inside the first frame at `offset`.
    init?(_ b: [UInt8], frameAt offset: Int, header: MPEGAudioHeader) {
        let xing = offset + 4 + header.sideInfoBytes
        if b.matches("Xing", at: xing) || b.matches("Info", at: xing) {
            guard b.count >= xing + 8 else { return nil }
            let flags = Self.bigEndian(b, xing + 4)
            var cursor = xing + 8
            if flags & 1 != 0, b.count >= cursor + 4 { frames = Self.bigEndian(b, cursor); cursor += 4 }
            if flags & 2 != 0, b.count >= cursor + 4 { bytes = Self.bigEndian(b, cursor) }
        } else if b.matches("VBRI", at: offset + 36), b.count >= offset + 36 + 18 {
            bytes = Self.bigEndian(b, offset + 36 + 10)
            frames = Self.bigEndian(b, offset + 36 + 14)
        } else {
            return nil
        }
    }

    private static func bigEndian(_ b: [UInt8], _ i: Int) -> Int {
        Int(b[i]) << 24 | Int(b[i + 1]) << 16 | Int(b[i + 2]) << 8 | Int(b[i + 3])
    }
}

/// Where the MPEG frames lie in a file: after an ID3v2 tag, before APEv2 and ID3v1 tags, and
/// the text of those trailing tags (libmpg123 reads ID3v2 itself).
struct MPEGLayout {
    var id3v2Bytes = 0
    var audioEnd: Int
    var tags = AudioTags()

    init(reader: ByteReader) {
        audioEnd = reader.totalSize
        let head = reader.bytes(at: 0, count: 10)
        if head.count == 10, head.matches("ID3") {
            let size = Int(head[6] & 0x7F) << 21 | Int(head[7] & 0x7F) << 14 | Int(head[8] & 0x7F) << 7 | Int(head[9] & 0x7F)
            id3v2Bytes = 10 + size + (head[5] & 0x10 != 0 ? 10 : 0)
        }
        if audioEnd >= 128 {
            let v1 = reader.bytes(at: audioEnd - 128, count: 128)
            if v1.matches("TAG") {
                audioEnd -= 128
                func field(_ range: Range<Int>) -> String {
                    let bytes = v1[range].prefix { $0 != 0 }
                    return String(decoding: bytes, as: UTF8.self)
                }
                tags.merge("title", field(3..<33))
                tags.merge("artist", field(33..<63))
                tags.merge("album", field(63..<93))
                tags.merge("date", field(93..<97))
            }
        }
        readAPE(reader: reader)
    }

    /// An APEv2 tag ends with a 32-byte footer `APETAGEX`, version, size (items + footer),
    /// item count and flags, all little-endian.
    private mutating func readAPE(reader: ByteReader) {
        guard audioEnd >= 32 else { return }
        let footer = reader.bytes(at: audioEnd - 32, count: 32)
        guard footer.matches("APETAGEX") else { return }
        func le32(_ b: [UInt8], _ i: Int) -> Int { Int(b[i]) | Int(b[i + 1]) << 8 | Int(b[i + 2]) << 16 | Int(b[i + 3]) << 24 }
        let size = le32(footer, 12)
        let count = le32(footer, 16)
        let hasHeader = le32(footer, 20) & (1 << 31) != 0
        guard size >= 32, size <= audioEnd else { return }
        let itemsStart = audioEnd - size
        let items = reader.bytes(at: itemsStart, count: size - 32)
        var cursor = 0
        // Item: value size, flags, NUL-terminated key, value. Bounded by `items` and `count`.
        for _ in 0..<min(count, 1024) {
            guard cursor + 8 <= items.count else { break }
            let valueSize = le32(items, cursor)
            let flags = le32(items, cursor + 4)
            var keyEnd = cursor + 8
            while keyEnd < items.count, items[keyEnd] != 0 { keyEnd += 1 }
            guard keyEnd < items.count, valueSize >= 0, keyEnd + 1 + valueSize <= items.count else { break }
            let key = String(decoding: items[(cursor + 8)..<keyEnd], as: UTF8.self).lowercased()
            if (flags >> 1) & 3 == 0 {  // UTF-8 text (not binary or an external link)
                let value = String(decoding: items[(keyEnd + 1)..<(keyEnd + 1 + valueSize)], as: UTF8.self)
                tags.merge(key == "year" ? "date" : key == "track" ? "tracknumber" : key, value)
            }
            cursor = keyEnd + 1 + valueSize
        }
        audioEnd = itemsStart - (hasHeader ? 32 : 0)
    }

    /// The first frame header at or after the ID3v2 tag, confirmed by the header of the frame
    /// that follows it (so random bytes that happen to look like a header are not taken).
    static func firstFrame(in b: [UInt8], from start: Int) -> (offset: Int, header: MPEGAudioHeader)? {
        var offset = start
        while offset + 4 <= b.count {
            if let header = MPEGAudioHeader(b, at: offset), header.frameBytes > 0 {
                let next = offset + header.frameBytes
                if next + 4 > b.count { return (offset, header) }
                if let second = MPEGAudioHeader(b, at: next), second.sampleRate == header.sampleRate,
                   second.layer == header.layer {
                    return (offset, header)
                }
            }
            offset += 1
        }
        return nil
    }
}

/// Walks the chain of frame headers from the first frame to the end of the audio, the way a
/// player's resync would, and records what does not belong to the chain: corrupt regions
/// (bytes between a broken header and the next run of three chained frames) and a last frame
/// cut short. libmpg123 is then shown the bytes without the corrupt regions, so a false
/// header inside garbage can never switch the stream to another rate.
struct MPEGFrameWalk {
    var corruptRegions: [Range<Int>] = []
    var truncatedFrameAt: Int?
    var frames = 0

    init(reader: ByteReader, firstFrame: Int, header first: MPEGAudioHeader, end: Int) {
        var cursor = ChunkCursor(reader: reader, end: end)
        var offset = firstFrame
        func matches(_ h: MPEGAudioHeader) -> Bool {
            h.version == first.version && h.layer == first.layer && h.sampleRate == first.sampleRate && h.frameBytes > 0
        }
        func header(at position: Int) -> MPEGAudioHeader? {
            guard position + 4 <= end, let h = MPEGAudioHeader(cursor.bytes(at: position, count: 4)), matches(h) else { return nil }
            return h
        }
        /// Three frames chained from `position`, or a chain that ends exactly at `end`.
        func chainStarts(at position: Int) -> Bool {
            var p = position
            for _ in 0..<3 {
                guard let h = header(at: p) else { return false }
                p += h.frameBytes
                if p == end { return true }
            }
            return true
        }
        var previousFrame = firstFrame
        while offset < end {
            if let h = header(at: offset) {
                if offset + h.frameBytes > end {
                    truncatedFrameAt = offset
                    break
                }
                frames += 1
                previousFrame = offset
                offset += h.frameBytes
                continue
            }
            // The frame before a broken header is damaged too when the garbage began inside
            // it; drop it rather than decode noise from it.
            let damagedStart = previousFrame > firstFrame ? previousFrame : offset
            if damagedStart < offset { frames -= 1 }
            // A broken header: look for the next place the chain picks up again.
            var next = offset + 1
            while next + 4 <= end, !(cursor.byte(at: next) == 0xFF && chainStarts(at: next)) { next += 1 }
            if next + 4 > end { next = end }
            corruptRegions.append(damagedStart..<next)
            offset = next
            previousFrame = next
        }
    }
}

/// Reads a file through a 64 KiB window so that walking headers costs few system calls.
private struct ChunkCursor {
    let reader: ByteReader
    let end: Int
    private var chunkStart = 0
    private var chunk: [UInt8] = []

    init(reader: ByteReader, end: Int) {
        self.reader = reader
        self.end = end
    }

    mutating func byte(at position: Int) -> UInt8 {
        load(position, 1)
        return chunk[position - chunkStart]
    }

    mutating func bytes(at position: Int, count: Int) -> [UInt8] {
        load(position, count)
        let start = position - chunkStart
        return Array(chunk[start..<min(chunk.count, start + count)])
    }

    private mutating func load(_ position: Int, _ count: Int) {
        if position >= chunkStart, position + count <= chunkStart + chunk.count { return }
        chunkStart = position
        chunk = reader.bytes(at: position, count: max(count, min(65_536, end - position)))
        if chunk.isEmpty { chunk = [0] }
    }
}
