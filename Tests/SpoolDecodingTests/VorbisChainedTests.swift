import Foundation
import Testing
import SpoolCore
@testable import SpoolDecoding
import SpoolTestSupport

/// A chained Ogg file whose second link changes format: everything before the change is
/// decoded (decodeAll threw `.formatChanged` and returned nothing), the change is reported
/// with its frame and both formats, and a link is never read with another link's channels.
@Suite("Chained Ogg Vorbis that changes format")
struct VorbisChainedTests {
    /// The reference of link 1 of broken/vorbis-chained-mixed.ogg (manifest: frames 0..<22050
    /// of the chained fixture's reference).
    static func firstLinkReference() throws -> [Float] {
        let chained = try #require(Fixtures.all.first { $0.file == "vorbis-44100-stereo-chained.ogg" })
        return Array(try Fixtures.reference(chained).prefix(22050 * 2))
    }

    @Test func decodeAllReturnsEverythingBeforeTheChange() throws {
        let decoder = try DecoderRegistry.shared.open(path: Fixtures.path("broken/vorbis-chained-mixed.ogg"))
        #expect(decoder.frameCount == 22050)
        #expect(decoder.isFrameCountExact)
        // Reported as soon as the decoder is open (spool info shows it).
        let change = try #require(decoder.warnings.first { $0.kind == .formatChanged })
        #expect(change.formatChange == DecodeWarning.FormatChange(
            frame: 22050, from: try AudioFormat(sampleRate: 44100, channelCount: 2),
            toSampleRate: 22050, toChannelCount: 1, toCodec: "Vorbis"))
        // Link 1 is the first link of vorbis-44100-stereo-chained.ogg: 6474 bytes.
        #expect(change.byteOffset == 6474)
        #expect(change.byteCount == 10878 - 6474)
        #expect(change.description.contains("22050 Hz, 1 ch"))

        let pcm = try decoder.decodeAll()
        #expect(pcm.frameCount == 22050)
        #expect(snr(pcm.samples[...], try Self.firstLinkReference()[...]) >= 60)
        #expect(decoder.warnings.filter { $0.kind == .formatChanged }.count == 1)
        // At the boundary, decodeAll returns nothing more and read keeps saying why.
        #expect(try decoder.decodeAll().frameCount == 0)
        var buffer = [Float](repeating: 0, count: 1024 * 2)
        #expect(throws: AudioError.self) { try buffer.withUnsafeMutableBufferPointer { try decoder.read(into: $0) } }
    }

    @Test func fewerChannelsAndARaisedGranuleNeverMixTheLinks() throws {
        // Link 1's last granule position claims 20000 frames more than it holds: a decoder
        // that believes it reads into link 2 (mono) with link 1's stereo channel map.
        let file = "chained-fewer-channels-raised-granule.ogg"
        let facts = try #require(OggCases.all[file])
        let decoder = try VorbisDecoder(source: .file(path: OggCases.path(file)))
        #expect(decoder.format.channelCount == 2)
        let counted = decoder.frameCount
        let exact = decoder.isFrameCountExact
        let pcm = try decoder.decodeAll()
        #expect(!exact || pcm.frameCount == counted)
        #expect(decoder.frameCount == pcm.frameCount)
        #expect(decoder.isFrameCountExact)
        // Link 1's audio, whole, and nothing of link 2: its packets hold 22050 frames and
        // libvorbis trims nothing when the last granule position is too high.
        let link1 = try #require(facts.link1Frames)
        #expect(pcm.frameCount >= link1 && pcm.frameCount < link1 + 1024)
        #expect(snr(pcm.samples[..<(link1 * 2)], try Self.firstLinkReference()[...]) >= 60)
        let change = try #require(decoder.warnings.first { $0.kind == .formatChanged })
        #expect(change.byteOffset == facts.link2Offset)
        #expect(change.formatChange?.frame == pcm.frameCount)
        #expect(change.formatChange?.toChannelCount == 1)
    }

    @Test func seekingBeforeTheChangeAndToIt() throws {
        let decoder = try VorbisDecoder(source: .file(path: Fixtures.path("broken/vorbis-chained-mixed.ogg")))
        let whole = try decoder.decodeAll().samples
        try decoder.seek(toFrame: 11_000)
        let part = try decoder.decodeAll(maximumFrames: 500).samples
        #expect(snr(part[...], whole[(11_000 * 2)..<(11_500 * 2)]) >= 60)
        try decoder.seek(toFrame: 22050)
        #expect(try decoder.decodeAll().frameCount == 0)
        #expect(throws: AudioError.self) { try decoder.seek(toFrame: 22051) }
    }

    @Test func aLinkOfAnotherCodecEndsTheStream() throws {
        // A Vorbis link followed by an Opus link.
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: Fixtures.path("vorbis-44100-stereo.ogg"))))
        bytes += try OggCases.bytes("opus-48000-stereo.opus")
        let decoder = try VorbisDecoder(source: .memory(Data(bytes), name: "vorbis-then-opus.ogg"))
        #expect(decoder.frameCount == 22050)
        #expect(try decoder.decodeAll().frameCount == 22050)
        let change = try #require(decoder.warnings.first { $0.kind == .formatChanged })
        #expect(change.formatChange?.toCodec == "Opus")
        #expect(change.byteOffset == 6446)
    }

    @Test func aLinkWithAnInvalidSetupHeaderEndsTheStream() throws {
        // A good link followed by one whose setup header libvorbis would crash on.
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: Fixtures.path("vorbis-44100-stereo.ogg"))))
        var second = try OggCases.bytes("setup-huffman-overspecified.ogg")
        // Give the second link its own serial number, as a chained file has.
        var at = 0
        while at + 27 <= second.count {
            let size = 27 + Int(second[at + 26]) + second[(at + 27)..<(at + 27 + Int(second[at + 26]))].reduce(0) { $0 + Int($1) }
            second[at + 14] ^= 0x55
            recomputeChecksums(&second, around: [at])
            at += size
        }
        bytes += second
        let decoder = try VorbisDecoder(source: .memory(Data(bytes), name: "good-then-bad.ogg"))
        #expect(decoder.frameCount == 22050)
        #expect(try decoder.decodeAll().frameCount == 22050)
        let skipped = try #require(decoder.warnings.first { $0.kind == .skippedCorruptData })
        #expect(skipped.byteOffset == 6446)
        #expect(skipped.description.contains("Huffman tree is overspecified"))
    }
}
