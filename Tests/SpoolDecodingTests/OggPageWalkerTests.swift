import Foundation
import Testing
import SpoolCore
@testable import SpoolDecoding
import SpoolTestSupport

/// The Ogg page walk: every valid page found, every byte outside one reported as a gap, in
/// time linear in the input (it used to read 64 KiB at every byte offset of a damaged
/// region: 2.5 s per MB).
@Suite("Ogg page walk")
struct OggPageWalkerTests {
    static let oggFixtures = Fixtures.all.filter { $0.container == "Ogg" }.map(\.file)

    func reader(_ bytes: [UInt8], _ name: String = "test.ogg") throws -> ByteReader {
        try ByteReader(source: .memory(Data(bytes), name: name))
    }

    func bytes(_ file: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: URL(fileURLWithPath: Fixtures.path(file))))
    }

    @Test("a good file is pages end to end", arguments: oggFixtures)
    func goodFile(_ file: String) throws {
        let data = try bytes(file)
        let (pages, gaps) = OggPageWalker.walk(try reader(data))
        #expect(gaps.isEmpty)
        #expect(pages.first?.offset == 0)
        #expect(zip(pages, pages.dropFirst()).allSatisfy { $0.end == $1.offset })
        #expect(pages.last?.end == data.count)
        #expect(pages.last?.isLast == true)
    }

    @Test func garbageIsOneGapAroundTheDamage() throws {
        // 2000 random bytes written over the middle of the file at byte 9701 (manifest).
        let data = try bytes("broken/corrupt-middle.ogg")
        let gaps = OggPageWalker.corruptRegions(reader: try reader(data))
        #expect(gaps.count == 1)
        let gap = try #require(gaps.first)
        #expect(gap.contains(9701) && gap.contains(9701 + 1999))
        // The gap starts at a page boundary before the damage and ends at the next good page.
        #expect(gap.lowerBound <= 9701 && gap.upperBound >= 11_701)
        #expect(gap.count < 2000 + 2 * OggPageWalker.maximumPageSize)
    }

    @Test func megabytesOfNonPageBytesWalkInLinearTime() throws {
        // A page hole (page 3 of link 1 removed) and 1 or 4 MiB of bytes that are no page in
        // its place: the walk must find the gap exactly, and four times the junk must take
        // about four times as long (a walk that restarted its search at every byte would take
        // sixteen). A ratio, not a time: a sanitizer slows both alike.
        let original = try bytes("vorbis-44100-stereo-chained.ogg")
        let (pages, _) = OggPageWalker.walk(try reader(original))
        let removed = pages[3]
        func walkSeconds(junkBytes: Int) throws -> Double {
            let junk = SeededGenerator.bytes(junkBytes, seed: 42)
            let damaged = Array(original[..<removed.offset]) + junk + Array(original[removed.end...])
            var fastest = Double.infinity
            for _ in 0..<2 {
                let start = DispatchTime.now().uptimeNanoseconds
                let gaps = OggPageWalker.corruptRegions(reader: try reader(damaged))
                fastest = min(fastest, Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
                #expect(gaps == [removed.offset..<(removed.offset + junk.count)])
            }
            return fastest
        }
        let one = try walkSeconds(junkBytes: 1 << 20), four = try walkSeconds(junkBytes: 4 << 20)
        #expect(four < 8 * max(one, 0.001), "1 MiB of junk took \(one) s, 4 MiB \(four) s")
    }

    @Test func aCutLastPageIsATrailingGap() throws {
        let data = try bytes("vorbis-44100-stereo.ogg")
        let cut = Array(data.prefix(data.count - 100))
        let (pages, gaps) = OggPageWalker.walk(try reader(cut))
        #expect(gaps.count == 1)
        #expect(gaps.first?.upperBound == cut.count)
        #expect(pages.last.map { $0.end } == gaps.first?.lowerBound)
    }

    @Test func aPageWithABadChecksumIsAGap() throws {
        var data = try bytes("vorbis-44100-stereo-chained.ogg")
        let (pages, _) = OggPageWalker.walk(try reader(data))
        let victim = pages[4]
        data[victim.offset + 40] ^= 0x01
        let (after, gaps) = OggPageWalker.walk(try reader(data))
        #expect(gaps == [victim.offset..<victim.end])
        #expect(after.count == pages.count - 1)
        #expect(OggPageWalker.checksum(data[victim.offset..<victim.end]) != UInt32(data[victim.offset + 22])
                | UInt32(data[victim.offset + 23]) << 8 | UInt32(data[victim.offset + 24]) << 16
                | UInt32(data[victim.offset + 25]) << 24)
    }
}
