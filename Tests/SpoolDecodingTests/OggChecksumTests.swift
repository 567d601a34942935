import Foundation
import Testing
import SpoolCore
@testable import SpoolDecoding
import SpoolTestSupport

/// The page checksum, sixteen bytes a step, against the CRC-32 of RFC 3533 §6 computed a bit
/// at a time.
@Suite("Ogg page checksum")
struct OggChecksumTests {
    /// CRC-32, polynomial 0x04C11DB7, MSB first, initial value 0, no final xor; one bit a step.
    private static func bitwiseCRC(_ bytes: some Sequence<UInt8>) -> UInt32 {
        var crc: UInt32 = 0
        for byte in bytes {
            crc ^= UInt32(byte) << 24
            for _ in 0..<8 { crc = crc & 0x8000_0000 != 0 ? (crc << 1) ^ 0x04C1_1DB7 : crc << 1 }
        }
        return crc
    }

    /// The checksum of a page is taken with its checksum field (bytes 22–25) as zero.
    private static func reference(_ page: ArraySlice<UInt8>) -> UInt32 {
        var bytes = Array(page)
        guard bytes.count >= 26 else { return bitwiseCRC(bytes.prefix(22)) }
        bytes[22..<26] = [0, 0, 0, 0]
        return bitwiseCRC(bytes)
    }

    @Test func everyLengthAndAlignmentMatchesTheBitwiseCRC() {
        var generator = SplitMix(seed: 0x0CC5)
        let bytes = (0..<(OggPageWalker.maximumPageSize + 64)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        // Every length up to a few steps of eight, at every offset within a step, then long ones.
        for offset in 0..<9 {
            for length in 0..<80 {
                let slice = bytes[offset..<(offset + length)]
                #expect(OggPageWalker.checksum(slice) == Self.reference(slice), "length \(length) at \(offset)")
            }
        }
        for length in [255, 4096, 4097, 65_307 - 7, OggPageWalker.maximumPageSize] {
            let slice = bytes[3..<(3 + length)]
            #expect(OggPageWalker.checksum(slice) == Self.reference(slice), "length \(length)")
        }
    }

    /// The check value of "123456789": POSIX `cksum`'s CRC (the same polynomial, unreflected,
    /// initial value 0) is 0x765E7680 after its final inversion, which Ogg does not apply.
    @Test func knownValue() {
        let digits = Array("123456789".utf8)
        #expect(Self.bitwiseCRC(digits) == 0x765E_7680 ^ 0xFFFF_FFFF)
        #expect(digits.withUnsafeBufferPointer { OggPageWalker.crc32(0, $0) } == 0x89A1_897F)
    }

    @Test(arguments: ["vorbis-22050-mono.ogg", "vorbis-48000-5.1.ogg", "vorbis-44100-stereo-chained.ogg", "ogg/opus-48000-stereo.opus"])
    func everyPageOfAFixtureCarriesTheChecksumComputed(name: String) throws {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: Fixtures.path(name))))
        let (pages, gaps) = OggPageWalker.walk(try ByteReader(source: .memory(Data(bytes))))
        #expect(!pages.isEmpty)
        #expect(gaps.isEmpty)
        for page in pages {
            let stored = UInt32(bytes[page.offset + 22]) | UInt32(bytes[page.offset + 23]) << 8
                | UInt32(bytes[page.offset + 24]) << 16 | UInt32(bytes[page.offset + 25]) << 24
            #expect(Self.reference(bytes[page.offset..<page.end]) == stored)
        }
    }
}
