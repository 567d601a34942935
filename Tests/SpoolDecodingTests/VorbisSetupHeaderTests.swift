import Foundation
import Testing
import SpoolCore
@testable import SpoolDecoding

/// The setup header is checked against the Vorbis I specification before libvorbis decodes
/// with it. libvorbis 1.3.7 accepts a codebook whose Huffman tree is over- or
/// underspecified, fails when decoding starts and leaves its codebooks half built; the next
/// call divides by their dimension 0 (SIGFPE in `res2_inverse`).
@Suite("Vorbis setup header")
struct VorbisSetupHeaderTests {
    static let vorbisFixtures = Fixtures.all.filter { $0.container == "Ogg" }.map(\.file)

    @Test("every good file's setup header passes", arguments: vorbisFixtures)
    func goodHeaders(_ file: String) throws {
        let packets = try oggPackets([UInt8](try Data(contentsOf: URL(fileURLWithPath: Fixtures.path(file)))))
        let identification = try VorbisIdentification(packet: packets[0].packet)
        let setup = try VorbisSetupHeader(packet: packets[2].packet, channels: identification.channels)
        #expect(!setup.modeIsLong.isEmpty)
        #expect(identification.blockSizes.short <= identification.blockSizes.long)
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
}
