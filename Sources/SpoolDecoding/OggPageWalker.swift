import Foundation
import SpoolCore

/// One Ogg page (RFC 3533 §6) whose header is whole and whose checksum matches.
struct OggPage {
    /// Absolute offset of the capture pattern `OggS`.
    let offset: Int
    /// Header, lacing table and body.
    let size: Int
    /// `header_type`: 0x01 continued packet, 0x02 first page of a stream, 0x04 last page.
    let headerType: UInt8
    /// The granule position; −1 when no packet ends on this page.
    let granulePosition: Int64
    let serialNumber: UInt32
    let sequenceNumber: UInt32
    /// The segment table: a packet ends at every value below 255.
    let lacing: ArraySlice<UInt8>
    /// The body, `size − 27 − lacing.count` bytes.
    let body: ArraySlice<UInt8>

    var isContinued: Bool { headerType & 0x01 != 0 }
    var isFirst: Bool { headerType & 0x02 != 0 }
    var isLast: Bool { headerType & 0x04 != 0 }
    var end: Int { offset + size }
    /// Whether the page's last packet goes on in the next page.
    var endsInsidePacket: Bool { lacing.last == 255 }
    /// Number of packets that end on this page.
    var packetsEnding: Int { lacing.reduce(0) { $1 < 255 ? $0 + 1 : $0 } }
}

/// Walks the Ogg pages of an input in one linear pass: each byte is read once, checksums
/// are computed only where the capture pattern `OggS` stands, and the bytes that belong to
/// no valid page (damage, cut pages, junk) are collected as gaps.
///
/// A candidate page whose checksum fails costs at most its claimed size (≤ 65 307 bytes)
/// of checksum work; libogg pays the same for the same input.
struct OggPageWalker {
    /// Byte ranges that are not part of any page with a valid header and checksum.
    private(set) var gaps: [Range<Int>] = []

    private let reader: ByteReader
    private var buffer: [UInt8] = []
    /// Absolute offset of `buffer[0]`.
    private var bufferStart = 0
    /// Absolute offset where the search for the next page begins.
    private var offset: Int
    /// End of the last valid page (or where the walk began).
    private var lastEnd: Int
    private var finished = false

    /// Bytes read from the input at a time, into the same buffer each time: small enough to
    /// stay in cache while its pages are checksummed and parsed (a new 1 MiB array per read
    /// cost page faults and cache misses), and several of the largest pages.
    private static let chunk = 1 << 18
    /// Longest possible page: 27 header bytes, 255 lacing values of 255 each.
    static let maximumPageSize = 27 + 255 + 255 * 255

    init(reader: ByteReader, from start: Int = 0) {
        self.reader = reader
        offset = max(0, start)
        lastEnd = offset
    }

    /// All pages of the input, and the gaps between them.
    static func walk(_ reader: ByteReader) -> (pages: [OggPage], gaps: [Range<Int>]) {
        var walker = OggPageWalker(reader: reader)
        var pages: [OggPage] = []
        while let page = walker.next() { pages.append(page) }
        return (pages, walker.gaps)
    }

    /// The next valid page, or nil at the end of the input.
    mutating func next() -> OggPage? {
        guard !finished else { return nil }
        while true {
            guard let candidate = findCapturePattern() else {
                finish()
                return nil
            }
            if let page = page(at: candidate) {
                if candidate > lastEnd { gaps.append(lastEnd..<candidate) }
                lastEnd = page.end
                offset = page.end
                return page
            }
            offset = candidate + 1
        }
    }

    private mutating func finish() {
        finished = true
        if reader.totalSize > lastEnd { gaps.append(lastEnd..<reader.totalSize) }
    }

    /// Makes `buffer` hold `absolute..<absolute + count`, or as much of it as the input has,
    /// reading a new chunk only when the buffer does not cover it; returns how many of those
    /// bytes are there.
    @discardableResult
    private mutating func load(_ absolute: Int, _ count: Int) -> Int {
        let wanted = min(count, max(0, reader.totalSize - absolute))
        if absolute >= bufferStart, absolute + wanted <= bufferStart + buffer.count { return wanted }
        reader.bytes(at: absolute, count: max(Self.chunk, count), into: &buffer)
        bufferStart = absolute
        return min(wanted, buffer.count)
    }

    /// Offset of the next `OggS` at or after `offset`, searching what is buffered before
    /// reading on.
    private mutating func findCapturePattern() -> Int? {
        var from = offset
        while from + 27 <= reader.totalSize {
            guard load(from, 4) == 4 else { return nil }
            let start = from - bufferStart
            let found: Int? = buffer.withUnsafeBufferPointer { bytes in
                guard let base = bytes.baseAddress else { return nil }
                var i = start
                let last = bytes.count - 4
                while i <= last {
                    // memchr finds the next 'O' at memory speed; the rest is checked here.
                    guard let hit = memchr(base + i, 0x4F, last - i + 1) else { return nil }
                    let at = UnsafeRawPointer(base).distance(to: UnsafeRawPointer(hit))
                    if bytes[at + 1] == 0x67, bytes[at + 2] == 0x67, bytes[at + 3] == 0x53 { return at }
                    i = at + 1
                }
                return nil
            }
            if let found { return bufferStart + found }
            let bufferEnd = bufferStart + buffer.count
            guard bufferEnd < reader.totalSize else { return nil }
            // Keep the last three bytes: a pattern may straddle the chunk boundary.
            from = bufferEnd - 3
        }
        return nil
    }

    /// The page at `at` when its header is whole, its version is 0 and its checksum matches.
    private mutating func page(at start: Int) -> OggPage? {
        let at = start
        guard load(at, 27) == 27 else { return nil }
        var i = at - bufferStart
        guard buffer[i + 4] == 0 else { return nil }
        let segments = Int(buffer[i + 26])
        guard load(at, 27 + segments) == 27 + segments else { return nil }
        i = at - bufferStart
        var bodySize = 0
        for s in 0..<segments { bodySize += Int(buffer[i + 27 + s]) }
        let size = 27 + segments + bodySize
        guard load(at, size) == size else { return nil }
        i = at - bufferStart
        let stored = UInt32(buffer[i + 22]) | UInt32(buffer[i + 23]) << 8 | UInt32(buffer[i + 24]) << 16
            | UInt32(buffer[i + 25]) << 24
        guard Self.checksum(buffer[i..<(i + size)]) == stored else { return nil }
        func le<T: FixedWidthInteger>(_ at: Int, _: T.Type) -> T {
            var v: T = 0
            for k in 0..<MemoryLayout<T>.size { v |= T(truncatingIfNeeded: buffer[i + at + k]) << (8 * k) }
            return v
        }
        return OggPage(offset: at, size: size, headerType: buffer[i + 5],
                       granulePosition: le(6, Int64.self), serialNumber: le(14, UInt32.self),
                       sequenceNumber: le(18, UInt32.self),
                       lacing: buffer[(i + 27)..<(i + 27 + segments)],
                       body: buffer[(i + 27 + segments)..<(i + size)])
    }

    /// The page checksum of `page` (a whole page), computed as if its checksum field
    /// (bytes 22–25) were zero.
    static func checksum(_ page: ArraySlice<UInt8>) -> UInt32 {
        page.withUnsafeBufferPointer { bytes in
            var crc = crc32(0, UnsafeBufferPointer(rebasing: bytes.prefix(22)))
            guard bytes.count >= 26 else { return crc }
            for _ in 0..<4 { crc = (crc << 8) ^ crcTables[Int(crc >> 24)] }
            return crc32(crc, UnsafeBufferPointer(rebasing: bytes[26...]))
        }
    }

    /// The Ogg CRC-32 of `bytes` continued from `crc`, sixteen bytes a step ("slicing by
    /// 16": sixteen tables, so a step's lookups do not wait on one another, and only four of
    /// them on the CRC so far; the terms are combined as a tree, not a chain). The
    /// byte-at-a-time loop waited on a table lookup for every byte and made the page walk of
    /// an 8-minute file cost more than its start-up.
    static func crc32(_ crc: UInt32, _ bytes: UnsafeBufferPointer<UInt8>) -> UInt32 {
        guard let base = bytes.baseAddress else { return crc }
        return crcTables.withUnsafeBufferPointer { tables -> UInt32 in
            guard let t = tables.baseAddress else { return crc }
            // swift-format-ignore: AlwaysUseLowerCamelCase
            func T(_ k: Int, _ byte: UInt8) -> UInt32 { t[k &* 256 &+ Int(byte)] }
            var crc = crc
            var p = base
            let end = base + bytes.count
            while end - p >= 16 {
                let a = (T(11, p[4]) ^ T(10, p[5])) ^ (T(9, p[6]) ^ T(8, p[7]))
                let b = (T(7, p[8]) ^ T(6, p[9])) ^ (T(5, p[10]) ^ T(4, p[11]))
                let c = (T(3, p[12]) ^ T(2, p[13])) ^ (T(1, p[14]) ^ T(0, p[15]))
                let high = crc ^ (UInt32(p[0]) << 24 | UInt32(p[1]) << 16 | UInt32(p[2]) << 8 | UInt32(p[3]))
                let h = (T(15, UInt8(high >> 24)) ^ T(14, UInt8(truncatingIfNeeded: high >> 16)))
                    ^ (T(13, UInt8(truncatingIfNeeded: high >> 8)) ^ T(12, UInt8(truncatingIfNeeded: high)))
                crc = h ^ (a ^ (b ^ c))
                p += 16
            }
            while p < end {
                crc = (crc << 8) ^ T(0, UInt8(crc >> 24) ^ p[0])
                p += 1
            }
            return crc
        }
    }

    /// CRC-32 with polynomial 0x04C11DB7, unreflected, initial value 0 (RFC 3533 §6): table
    /// `k` (at `k * 256`) holds the CRC of a byte followed by `k` zero bytes.
    private static let crcTables: [UInt32] = {
        var tables = [UInt32](repeating: 0, count: 16 * 256)
        for n in 0..<256 {
            var r = UInt32(n) << 24
            for _ in 0..<8 { r = r & 0x8000_0000 != 0 ? (r << 1) ^ 0x04C1_1DB7 : r << 1 }
            tables[n] = r
        }
        for k in 1..<16 {
            for n in 0..<256 {
                let previous = tables[(k - 1) * 256 + n]
                tables[k * 256 + n] = (previous << 8) ^ tables[Int(previous >> 24)]
            }
        }
        return tables
    }()
}

extension OggPageWalker {
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
        guard tail.count >= last + 27 else { return DecodeWarning(kind: .truncated, byteOffset: pageStart, byteCount: 0) }
        let segments = Int(tail[last + 26])
        guard tail.count >= last + 27 + segments else {
            return DecodeWarning(kind: .truncated, byteOffset: pageStart, byteCount: 0)
        }
        let size = 27 + segments + tail[(last + 27)..<(last + 27 + segments)].reduce(0) { $0 + Int($1) }
        if last + size > tail.count {
            return DecodeWarning(kind: .truncated, byteOffset: pageStart, byteCount: last + size - tail.count)
        }
        let endOfStream = tail[last + 5] & 0x04 != 0
        return endOfStream ? nil : DecodeWarning(kind: .truncated, byteOffset: reader.totalSize, byteCount: 0)
    }

    /// Byte ranges that are not part of any page with a valid checksum, in one linear pass.
    static func corruptRegions(reader: ByteReader) -> [Range<Int>] {
        // The pages are not kept: each refers to the chunk it was read in.
        var walker = OggPageWalker(reader: reader)
        while walker.next() != nil {}
        return walker.gaps
    }
}
