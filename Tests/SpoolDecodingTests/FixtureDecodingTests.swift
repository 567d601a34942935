import Foundation
import Testing
import SpoolCore
@testable import SpoolDecoding
import SpoolTestSupport

@Suite("Every fixture decodes to its reference")
struct FixtureDecodingTests {
    @Test("format, exact frames and samples", arguments: Fixtures.all)
    func decodesToReference(_ entry: Fixtures.Entry) throws {
        let decoder = try DecoderRegistry.shared.open(path: Fixtures.path(entry.file))
        #expect(decoder.format.sampleRate == entry.sampleRate)
        #expect(decoder.format.channelCount == entry.channels)
        #expect(decoder.info.container == entry.container)
        #expect(decoder.frameCount == entry.frames)
        let pcm = try decoder.decodeAll()
        #expect(pcm.frameCount == entry.frames)
        #expect(decoder.warnings.isEmpty)
        let reference = try Fixtures.reference(entry)
        let samples = pcm.samples
        if entry.lossless {
            #expect(samples == reference, "lossless decode must be bit-exact")
        } else {
            let ratio = snr(samples[...], reference[...])
            let floor = Self.lossyFloorDB(codec: entry.codec)
            #expect(ratio >= floor, "SNR \(ratio) dB against the reference, below \(floor) dB")
        }
    }

    /// What each lossy decoder reaches against ffmpeg's float decode of the same file, less a
    /// margin of about 10 dB: measured 121.7–123.7 dB for Layer III, 85.9 for Layer II,
    /// 135.9–136.9 for Vorbis, 62.6 for IMA ADPCM (libsndfile and ffmpeg round its predictor
    /// differently). A decoder that went through 16-bit integers would land near 90 dB and fail.
    static func lossyFloorDB(codec: String) -> Double {
        switch codec {
        case let c where c.hasSuffix("Layer III"): 110
        case let c where c.hasSuffix("Layer II"): 80
        case "Vorbis": 120
        case "Opus": 100
        case "IMA ADPCM": 58
        default: 60
        }
    }

    @Test("memory decodes the same as the file", arguments: Fixtures.all)
    func memoryMatchesFile(_ entry: Fixtures.Entry) throws {
        let path = Fixtures.path(entry.file)
        let fromFile = try DecoderRegistry.shared.open(path: path).decodeAll()
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let memory = try DecoderRegistry.shared.open(.memory(data, name: entry.file))
        #expect(memory.frameCount == entry.frames)
        #expect(try memory.decodeAll().samples == fromFile.samples)
    }

    @Test("tags", arguments: Fixtures.all.filter { $0.tags != nil })
    func tags(_ entry: Fixtures.Entry) throws {
        let decoder = try DecoderRegistry.shared.open(path: Fixtures.path(entry.file))
        for (key, value) in entry.tags ?? [:] {
            #expect(decoder.info.tags[key] == value, "\(key)")
        }
    }

    @Test("seek lands exactly on the frame", arguments: Fixtures.all)
    func seekIsExact(_ entry: Fixtures.Entry) throws {
        let decoder = try DecoderRegistry.shared.open(path: Fixtures.path(entry.file))
        let whole = try decoder.decodeAll().samples
        let channels = entry.channels
        for target in [entry.frames / 2, 1, entry.frames - 100, 0, entry.frames / 3 + 7] {
            try decoder.seek(toFrame: target)
            #expect(decoder.position == target)
            let part = try decoder.decodeAll(maximumFrames: 64).samples
            let expected = whole[(target * channels)..<(min(entry.frames, target + 64) * channels)]
            if !entry.lossless {
                // Lossy decoders restart their filters at a seek: equal to rounding, not bit-exact.
                #expect(snr(part[...], expected) >= 60, "seek to \(target)")
            } else {
                #expect(part[...] == expected, "seek to \(target)")
            }
        }
        try decoder.seek(toFrame: entry.frames)
        #expect(try decoder.decodeAll().frameCount == 0)
    }
}

@Suite("Chained Ogg Vorbis")
struct ChainedVorbisTests {
    @Test func singlePageLinksPlayFromTheFirstLink() throws {
        // libvorbisfile alone starts this file at its second link.
        let decoder = try DecoderRegistry.shared.open(path: Fixtures.path("broken/vorbis-chained-short-links.ogg"))
        #expect(decoder.frameCount == 44_100)
        let pcm = try decoder.decodeAll()
        #expect(pcm.frameCount == 44_100)
        let link = try Fixtures.reference(Fixtures.all.first { $0.file == "vorbis-44100-stereo.ogg" }!)
        let samples = pcm.samples
        #expect(snr(samples[0..<44_100], link[...]) >= 60)
        #expect(snr(samples[44_100...], link[...]) >= 60)
    }
}
