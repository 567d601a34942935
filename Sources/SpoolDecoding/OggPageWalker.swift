import SpoolCore

/// Walks Ogg pages (RFC 3533) to find what libvorbisfile skips silently: a last page cut
/// short, and regions whose pages fail their checksum.
enum OggPageWalker {
    /// A warning when the last page in the input is cut short or missing its end-of-stream mark.
    static func truncatedTail(reader: ByteReader) -> DecodeWarning? {
        let tailStart = max(0, reader.totalSize - 65_536)
        let tail = reader.bytes(at: tailStart, count: reader.totalSize - tailStart)
        var last: Int?
        var i = tail.count - 4
        while i >= 0 {
            if tail[i] == 0x4F, tail.matches("OggS", at: i) { last = i; break }
            i -= 1
        }
        guard let last else { return nil }
        let pageStart = tailStart + last
        guard let size = pageSize(tail, at: last) else {
            return DecodeWarning(kind: .truncated, byteOffset: pageStart, byteCount: 0)
        }
        if last + size > tail.count {
            return DecodeWarning(kind: .truncated, byteOffset: pageStart, byteCount: last + size - tail.count)
        }
        let endOfStream = tail[last + 5] & 0x04 != 0
        return endOfStream ? nil : DecodeWarning(kind: .truncated, byteOffset: reader.totalSize, byteCount: 0)
    }

    /// Byte ranges that are not part of any page with a valid checksum.
    static func corruptRegions(reader: ByteReader) -> [Range<Int>] {
        var regions: [Range<Int>] = []
        var offset = 0
        var badStart: Int?
        let chunk = 1 << 16
        while offset < reader.totalSize {
            let page = reader.bytes(at: offset, count: min(chunk, reader.totalSize - offset))
            if page.matches("OggS"), let size = pageSize(page, at: 0) {
                let bytes = size <= page.count ? page : reader.bytes(at: offset, count: size)
                if bytes.count >= size, checksumMatches(Array(bytes[0..<size])) {
                    if let start = badStart { regions.append(start..<offset); badStart = nil }
                    offset += size
                    continue
                }
            }
            if badStart == nil { badStart = offset }
            offset += 1
        }
        if let start = badStart { regions.append(start..<reader.totalSize) }
        return regions
    }

    /// Header (27 bytes) plus lacing table plus body, or nil when the header is cut short.
    private static func pageSize(_ b: [UInt8], at i: Int) -> Int? {
        guard b.count >= i + 27 else { return nil }
        let segments = Int(b[i + 26])
        guard b.count >= i + 27 + segments else { return nil }
        return 27 + segments + b[(i + 27)..<(i + 27 + segments)].reduce(0) { $0 + Int($1) }
    }

    private static func checksumMatches(_ page: [UInt8]) -> Bool {
        var copy = page
        let stored = UInt32(page[22]) | UInt32(page[23]) << 8 | UInt32(page[24]) << 16 | UInt32(page[25]) << 24
        copy[22] = 0; copy[23] = 0; copy[24] = 0; copy[25] = 0
        var crc: UInt32 = 0
        for byte in copy { crc = (crc << 8) ^ crcTable[Int((crc >> 24) ^ UInt32(byte))] }
        return crc == stored
    }

    /// CRC-32 with polynomial 0x04C11DB7, unreflected, initial value 0 (RFC 3533 §6).
    private static let crcTable: [UInt32] = (0..<256).map { n in
        var r = UInt32(n) << 24
        for _ in 0..<8 { r = r & 0x8000_0000 != 0 ? (r << 1) ^ 0x04C1_1DB7 : r << 1 }
        return r
    }
}
