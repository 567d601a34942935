import Foundation
import Testing
import SpoolCore
@testable import SpoolDecoding
import SpoolTestSupport

/// The setup header is checked against the Vorbis I specification before libvorbis decodes
/// with it. libvorbis 1.3.7 accepts a codebook whose Huffman tree is over- or
/// underspecified, fails when decoding starts and leaves its codebooks half built; the next
/// call divides by their dimension 0 (SIGFPE in `res2_inverse`).
@Suite("Vorbis setup header")
struct VorbisSetupHeaderTests {
    static let vorbisFixtures = Fixtures.all.filter { $0.container == "Ogg" }.map(\.file)
    static let setupCases = OggCases.all.keys.filter { $0.hasPrefix("setup-") }.sorted()

    @Test("every good file's setup header passes", arguments: vorbisFixtures)
    func goodHeaders(_ file: String) throws {
        let packets = try oggPackets([UInt8](try Data(contentsOf: URL(fileURLWithPath: Fixtures.path(file)))))
        let identification = try VorbisIdentification(packet: packets[0].packet)
        let setup = try VorbisSetupHeader(packet: packets[2].packet, channels: identification.channels)
        #expect(!setup.modeIsLong.isEmpty)
        #expect(identification.blockSizes.short <= identification.blockSizes.long)
    }

    @Test("an invalid setup header is refused, naming what is wrong", arguments: setupCases)
    func invalidHeader(_ file: String) throws {
        let expected = try #require(OggCases.all[file]?.problem)
        do {
            let decoder = try VorbisDecoder(source: .file(path: OggCases.path(file)))
            // What libvorbis did with it: the first read fails, the next one crashes.
            var buffer = [Float](repeating: 0, count: 4096 * decoder.format.channelCount)
            for _ in 0..<3 { _ = try? buffer.withUnsafeMutableBufferPointer { try decoder.read(into: $0) } }
            Issue.record("\(file) opened")
        } catch let error as AudioError {
            #expect(error.code == .corruptData)
            #expect(error.message.contains(expected), "\(error.message)")
            #expect(error.message.contains(file))
        }
    }

    @Test func lookupValues() {
        #expect(VorbisSetupHeader.lookup1Values(entries: 6561, dimensions: 8) == 3)
        #expect(VorbisSetupHeader.lookup1Values(entries: 6560, dimensions: 8) == 2)
        #expect(VorbisSetupHeader.lookup1Values(entries: 289, dimensions: 2) == 17)
        #expect(VorbisSetupHeader.lookup1Values(entries: 65_536, dimensions: 1) == 65_536)
        #expect(VorbisSetupHeader.lookup1Values(entries: 65_536, dimensions: 65_535) == 1)
        #expect(VorbisSetupHeader.lookup1Values(entries: 0, dimensions: 4) == 0)
    }

    @Test func bitReaderReadsLeastSignificantBitFirst() throws {
        var bits = VorbisBitReader([0b1011_0110, 0xFF, 0x01])
        #expect(try bits.read(1, "x") == 0)
        #expect(try bits.read(3, "x") == 0b011)
        #expect(try bits.read(8, "x") == 0b1111_1011)
        #expect(try bits.read(12, "x") == 0x01F)
        #expect(throws: VorbisHeaderError.self) { try bits.read(1, "x") }
    }

    /// The reader takes eight bytes at once away from the end and byte by byte near it: both
    /// give what reading one bit at a time gives, for widths 0…32, up to the last bit.
    @Test func bitReaderAgreesWithBitByBitReadingEverywhere() throws {
        var generator = SeededGenerator(seed: 0x5EED)
        for length in [1, 7, 8, 9, 15, 16, 17, 40] {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            var bits = VorbisBitReader(bytes)
            var position = 0
            while true {
                let width = Int.random(in: 0...32, using: &generator)
                guard width <= bytes.count * 8 - position else {
                    #expect(throws: VorbisHeaderError.self) { try bits.read(width, "x") }
                    break
                }
                var expected = 0
                for bit in 0..<width where bytes[(position + bit) >> 3] >> ((position + bit) & 7) & 1 == 1 {
                    expected |= 1 << bit
                }
                #expect(try bits.read(width, "x") == expected, "\(width) bits at \(position) of \(length) bytes")
                position += width
            }
        }
        var bits = VorbisBitReader([0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
        #expect(throws: VorbisHeaderError.self) { try bits.read(33, "x") }
        #expect(throws: VorbisHeaderError.self) { try bits.read(-1, "x") }
        #expect(try bits.read(32, "x") == 0xFFFF_FFFF)
    }

    /// Random changes of one or two bytes of each fixture's setup header, checksums
    /// recomputed: the checker refuses or the decoder decodes, and nothing crashes, however
    /// often a failed decoder is called again.
    @Test("setup headers with random byte changes never crash", arguments: vorbisFixtures.prefix(4))
    func fuzzedHeaders(_ file: String) throws {
        let original = [UInt8](try Data(contentsOf: URL(fileURLWithPath: Fixtures.path(file))))
        let setup = try oggPackets(original)[2]
        var generator = SeededGenerator(seed: UInt64(file.utf8.reduce(0) { $0 &* 31 &+ Int($1) }.magnitude))
        var refused = 0, decoded = 0
        for _ in 0..<300 {
            var bytes = original
            var touched: Set<Int> = []
            for _ in 0..<Int.random(in: 1...2, using: &generator) {
                // Past the 7-byte packet type and signature.
                let offset = setup.offsets[Int.random(in: 7..<setup.offsets.count, using: &generator)]
                if Bool.random(using: &generator) {
                    bytes[offset] ^= 1 << UInt8.random(in: 0...7, using: &generator)
                } else {
                    bytes[offset] = UInt8.random(in: 0...255, using: &generator)
                }
                touched.insert(offset)
            }
            recomputeChecksums(&bytes, around: touched)
            guard let decoder = try? VorbisDecoder(source: .memory(Data(bytes), name: "fuzzed.ogg")) else {
                refused += 1
                continue
            }
            decoded += 1
            var buffer = [Float](repeating: 0, count: 4096 * decoder.format.channelCount)
            for _ in 0..<8 {
                _ = try? buffer.withUnsafeMutableBufferPointer { try decoder.read(into: $0) }
            }
            try? decoder.seek(toFrame: 0)
            _ = try? buffer.withUnsafeMutableBufferPointer { try decoder.read(into: $0) }
        }
        #expect(refused + decoded == 300)
        #expect(refused > 0)
    }
}
