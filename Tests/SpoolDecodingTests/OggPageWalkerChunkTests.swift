import Foundation
import Testing
import SpoolCore
@testable import SpoolDecoding
import SpoolTestSupport

/// The page walk reads its input a chunk at a time into one reused buffer: across megabytes of
/// pages of every size, some straddling a chunk's end and junk between some, it finds every
/// page with its own bytes, from a file as from memory, and the pages it hands out keep their
/// bytes after the buffer is reused.
@Suite("Ogg page walk across chunks")
struct OggPageWalkerChunkTests {
    struct Built {
        let bytes: [UInt8]
        /// (offset, body) of every page, in order.
        let pages: [(offset: Int, body: [UInt8])]
        let gaps: [Range<Int>]
    }

    /// CRC-32 of RFC 3533 §6, a bit at a time, over the page with its checksum field zero.
    private static func checksum(_ page: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0
        for (i, byte) in page.enumerated() {
            crc ^= UInt32(22..<26 ~= i ? 0 : byte) << 24
            for _ in 0..<8 { crc = crc & 0x8000_0000 != 0 ? (crc << 1) ^ 0x04C1_1DB7 : crc << 1 }
        }
        return crc
    }

    private static func page(body: [UInt8], sequence: UInt32, granule: Int64, first: Bool) -> [UInt8] {
        var lacing = [UInt8](repeating: 255, count: body.count / 255)
        lacing.append(UInt8(body.count % 255))
        var page = Array("OggS".utf8) + [0, first ? 0x02 : 0]
        withUnsafeBytes(of: granule.littleEndian) { page += $0 }
        withUnsafeBytes(of: UInt32(0x5EED).littleEndian) { page += $0 }
        withUnsafeBytes(of: sequence.littleEndian) { page += $0 }
        page += [0, 0, 0, 0, UInt8(lacing.count)] + lacing + body
        let crc = checksum(page)
        withUnsafeBytes(of: crc.littleEndian) { page.replaceSubrange(22..<26, with: $0) }
        return page
    }

    /// About 1.25 MiB (five chunks) of pages of random sizes (up to the largest one lacing value short of 255
    /// allows), with junk that holds no capture pattern after every 23rd.
    private static func build() -> Built {
        var generator = SplitMix(seed: 0xC4_0C5)
        var bytes: [UInt8] = [], pages: [(Int, [UInt8])] = [], gaps: [Range<Int>] = []
        var sequence: UInt32 = 0
        while bytes.count < 5 << 18 {
            let size = Int(generator.next() % 65_000)
            let body = SplitMix.bytes(size, seed: generator.next()).map { $0 == 0x4F ? 0x4E : $0 }
            pages.append((bytes.count, body))
            bytes += page(body: body, sequence: sequence, granule: Int64(sequence) * 1024, first: sequence == 0)
            sequence += 1
            if sequence % 23 == 0 {
                let junk = SplitMix.bytes(1 + Int(generator.next() % 3000), seed: generator.next()).map { $0 == 0x4F ? 0x4E : $0 }
                gaps.append(bytes.count..<(bytes.count + junk.count))
                bytes += junk
            }
        }
        return Built(bytes: bytes, pages: pages, gaps: gaps)
    }

    private static func walkChecking(_ reader: ByteReader, _ built: Built) -> Int {
        var walker = OggPageWalker(reader: reader)
        var index = 0
        while let page = walker.next() {
            guard index < built.pages.count else { Issue.record("a page too many at \(page.offset)"); break }
            #expect(page.offset == built.pages[index].offset)
            #expect(Array(page.body) == built.pages[index].body, "page \(index)")
            #expect(page.sequenceNumber == UInt32(index) && page.granulePosition == Int64(index) * 1024)
            index += 1
        }
        #expect(walker.gaps == built.gaps)
        return index
    }

    @Test func everyPageIsFoundWithItsBytesFromMemoryAndFromAFile() throws {
        let built = Self.build()
        #expect(Self.walkChecking(try ByteReader(source: .memory(Data(built.bytes))), built) == built.pages.count)

        let path = FileManager.default.temporaryDirectory.appendingPathComponent("spool-pages-\(UUID()).ogg").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data(built.bytes).write(to: URL(fileURLWithPath: path))
        #expect(Self.walkChecking(try ByteReader(source: .file(path: path)), built) == built.pages.count)
    }

    @Test func pagesKeptFromAWalkKeepTheirBytes() throws {
        let built = Self.build()
        let (pages, gaps) = OggPageWalker.walk(try ByteReader(source: .memory(Data(built.bytes))))
        #expect(gaps == built.gaps)
        #expect(pages.count == built.pages.count)
        for (page, expected) in zip(pages, built.pages) {
            #expect(page.offset == expected.offset)
            #expect(Array(page.body) == expected.body)
        }
    }
}
