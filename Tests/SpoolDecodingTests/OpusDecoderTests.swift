import Foundation
import Testing
import SpoolCore
@testable import SpoolDecoding
import SpoolTestSupport

/// The Ogg Opus fixtures (`Fixtures/opus`, made by `Fixtures/make-opus-fixtures.sh`) and
/// their references, decoded by ffmpeg's own Opus decoder, an implementation independent
/// of libopus and libopusfile.
enum OpusFixtures {
    struct Entry: Sendable, CustomStringConvertible {
        let file: String
        let channels: Int
        let reference: String
        /// What libopusfile reaches against the reference here, less 3 dB: the two decoders
        /// agree to about 138 dB on a single link (float rounding); at the end of the
        /// chained file's second link they differ more (107 dB over its last 50 ms).
        let minimumSNR: Double
        var description: String { file }
    }

    static let good: [Entry] = [
        Entry(file: "opus-48000-mono.opus", channels: 1, reference: "opus-48000-mono.opus.f32", minimumSNR: 137),
        Entry(file: "opus-48000-stereo.opus", channels: 2, reference: "opus-48000-stereo.opus.f32", minimumSNR: 135),
        Entry(file: "opus-48000-5.1.opus", channels: 6, reference: "opus-48000-5.1.opus.f32", minimumSNR: 136),
        Entry(file: "opus-44100-stereo.opus", channels: 2, reference: "opus-44100-stereo.opus.f32", minimumSNR: 135),
        // The same signal and settings as the stereo file: the same audio.
        Entry(file: "opus-48000-stereo-tags.opus", channels: 2, reference: "opus-48000-stereo.opus.f32", minimumSNR: 135),
        Entry(file: "opus-48000-stereo-chained.opus", channels: 2, reference: "opus-48000-stereo-chained.opus.f32", minimumSNR: 115),
    ]

    static func path(_ name: String) -> String { OggFixtures.path(name) }

    static func data(_ name: String) throws -> Data { try OggFixtures.data(name) }

    static func reference(_ name: String) throws -> [Float] {
        try data("reference/\(name)").withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    static func open(_ name: String) throws -> any AudioDecoder {
        try DecoderRegistry.shared.open(path: path(name))
    }
}

@Suite("Ogg Opus decoding")
struct OpusDecoderTests {
    @Test("48 kHz, exact frames, samples against ffmpeg's decoder", arguments: OpusFixtures.good)
    func decodesToReference(_ entry: OpusFixtures.Entry) throws {
        let decoder = try OpusFixtures.open(entry.file)
        let reference = try OpusFixtures.reference(entry.reference)
        let frames = reference.count / entry.channels
        #expect(decoder is OpusDecoder)
        #expect(decoder.info.container == "Ogg")
        #expect(decoder.info.codec == "Opus")
        #expect(decoder.format.sampleRate == 48_000)
        #expect(decoder.format.channelCount == entry.channels)
        #expect(decoder.frameCount == frames)
        #expect(decoder.isFrameCountExact)
        let pcm = try decoder.decodeAll()
        #expect(pcm.frameCount == frames)
        #expect(decoder.warnings.isEmpty)
        let ratio = snr(pcm.samples[...], reference[...])
        #expect(ratio >= entry.minimumSNR, "SNR \(ratio) dB against the reference")
    }

    @Test func fiveOneComesOutInWAVOrder() throws {
        // Channel k of the fixture signal carries its own pair of tones; Opus stores 5.1 in
        // Vorbis order (L C R BL BR LFE), so an unmapped decode puts C where R belongs.
        let pcm = try OpusFixtures.open("opus-48000-5.1.opus").decodeAll()
        let reference = try OpusFixtures.reference("opus-48000-5.1.opus.f32")
        let samples = pcm.samples
        for channel in 0..<6 {
            let decoded = stride(from: channel, to: samples.count, by: 6).map { samples[$0] }
            let expected = stride(from: channel, to: reference.count, by: 6).map { reference[$0] }
            #expect(snr(decoded[...], expected[...]) >= 130, "channel \(channel)")
        }
    }

    @Test("memory decodes the same as the file", arguments: OpusFixtures.good)
    func memoryMatchesFile(_ entry: OpusFixtures.Entry) throws {
        let fromFile = try OpusFixtures.open(entry.file).decodeAll()
        let memory = try DecoderRegistry.shared.open(.memory(try OpusFixtures.data(entry.file), name: entry.file))
        #expect(memory.frameCount == fromFile.frameCount)
        #expect(try memory.decodeAll().samples == fromFile.samples)
    }

    @Test("a seek lands on the frame", arguments: OpusFixtures.good)
    func seekIsExact(_ entry: OpusFixtures.Entry) throws {
        let decoder = try OpusFixtures.open(entry.file)
        try expectExactSeeks(decoder)
    }

    @Test func aSeekFarFromTheStartDecodesWhatAFullDecodeHasThere() throws {
        // 1.5 s: these targets lie more than Spool's 0.5 s of convergence from the start,
        // so each seek goes through op_pcm_seek and decodes its way to the target.
        let decoder = try OpusFixtures.open("opus-48000-mono-long.opus")
        #expect(decoder.frameCount == 72_000)
        let whole = try decoder.decodeAll().samples
        for target in [30_000, 48_000, 71_000, 24_001, 50_001] {
            try decoder.seek(toFrame: target)
            #expect(decoder.position == target)
            let part = try decoder.decodeAll(maximumFrames: 960).samples
            let ratio = snr(part[...], whole[target..<min(72_000, target + 960)])
            // Measured: 142.7 dB and up (float rounding); libopusfile's seek alone gives 15 dB.
            #expect(ratio >= 138, "seek to \(target): \(ratio) dB")
        }
    }

    @Test func tags() throws {
        let tags = try OpusFixtures.open("opus-48000-stereo-tags.opus").info.tags
        #expect(tags.title == "Spool Test")
        #expect(tags.artist == "Spool")
        #expect(tags.album == "Fixtures")
        #expect(tags["date"] == "2024")
        #expect(tags["genre"] == "Test")
        #expect(tags["tracknumber"] == "3")
        #expect(tags["comment"] == "Ogg Opus fixture")
        #expect(tags["composer"] == "Zoë")
        #expect(tags["encoder"] == "opusenc from opus-tools 0.2")
        // The untagged file has only what the encoder wrote about itself.
        let plain = try OpusFixtures.open("opus-48000-stereo.opus").info.tags
        #expect(plain.title == nil)
        #expect(Set(plain.fields.keys) == ["encoder", "encoder_options"])
    }

    @Test func bitRateAndVBR() throws {
        for (file, vbr) in [("opus-48000-mono.opus", false), ("opus-48000-stereo.opus", true), ("opus-48000-5.1.opus", true)] {
            let decoder = try OpusFixtures.open(file)
            // op_bitrate: every byte of the stream over its playing time.
            let bytes = try OpusFixtures.data(file).count
            let expected = Double(bytes) * 8 / decoder.duration
            #expect(abs(Double(decoder.info.bitRate) - expected) <= 1, "\(file): \(decoder.info.bitRate) bit/s")
            #expect(decoder.info.isVBR == vbr, "\(file)")
        }
    }

    @Test func aSourceAt44100HzDecodesAt48000Hz() throws {
        let decoder = try OpusFixtures.open("opus-44100-stereo.opus")
        #expect(decoder.format.sampleRate == 48_000)
        // 0.5 s of input is 0.5 s of output, in 48 kHz frames.
        #expect(decoder.frameCount == 24_000)
    }

    @Test func chainedLinksPlayAsOneStream() throws {
        let decoder = try OpusFixtures.open("opus-48000-stereo-chained.opus")
        let link1 = try OpusFixtures.open("opus-48000-stereo.opus").frameCount
        #expect(decoder.frameCount == 38_400)
        // Across the boundary a seek lands exactly too, in either link.
        let whole = try decoder.decodeAll().samples
        for target in [link1 - 10, link1, link1 + 321, 38_400 - 960] {
            try decoder.seek(toFrame: target)
            let part = try decoder.decodeAll(maximumFrames: 960).samples
            #expect(part[...] == whole[(target * 2)..<(min(38_400, target + 960) * 2)], "seek to \(target)")
        }
    }

    @Test func aLinkThatChangesChannelCountEndsDecodingThere() throws {
        let decoder = try OpusFixtures.open("opus-48000-chained-channels.opus")
        #expect(decoder.format.channelCount == 2)
        #expect(decoder.frameCount == 24_000)
        var buffer = [Float](repeating: 0, count: 4096 * 2)
        var samples: [Float] = []
        var failure: AudioError?
        do {
            while true {
                let got = try buffer.withUnsafeMutableBufferPointer { try decoder.read(into: $0) }
                if got == 0 { break }
                samples += buffer[0..<(got * 2)]
            }
        } catch let error as AudioError { failure = error }
        #expect(samples.count == 48_000)
        #expect(failure?.code == .formatChanged)
        #expect(failure?.message.contains("1 ch") == true)
        let reference = try OpusFixtures.reference("opus-48000-stereo.opus.f32")
        #expect(snr(samples[...], reference[...]) >= 135)
    }
}

@Suite("Ogg Opus damage and bad input")
struct OpusBadInputTests {
    func code(_ body: () throws -> Void) -> AudioError? {
        do { try body() } catch let error as AudioError { return error } catch { return nil }
        return nil
    }

    @Test func aTruncatedFileDecodesItsWholePagesAndWarnsOnce() throws {
        let decoder = try OpusFixtures.open("broken/opus-truncated.opus")
        // The cut falls in the page that ends at granule 19200; the pages before it hold
        // 14400 samples, less the 312 of pre-skip.
        #expect(decoder.frameCount == 14_088)
        #expect(decoder.isFrameCountExact)
        let pcm = try decoder.decodeAll()
        #expect(pcm.frameCount == 14_088)
        #expect(decoder.warnings == [DecodeWarning(kind: .truncated, byteOffset: 6842, byteCount: 956)])
        // Up to the cut, the same samples as the whole file.
        let whole = try OpusFixtures.open("opus-48000-stereo.opus").decodeAll().samples
        #expect(pcm.samples[...] == whole[0..<(14_088 * 2)])
        #expect(try decoder.decodeAll().frameCount == 0)
        #expect(decoder.warnings.count == 1)
    }

    @Test func aCorruptPageIsAHoleThatIsCountedAndNamed() throws {
        let decoder = try OpusFixtures.open("broken/opus-corrupt-page.opus")
        let pcm = try decoder.decodeAll()
        // What info says is what decode writes, though the granule positions still claim 24000.
        #expect(decoder.isFrameCountExact)
        #expect(pcm.frameCount == decoder.frameCount)
        #expect(pcm.frameCount <= 24_000 - 4800)
        // The page with the random body (Fixtures/opus/broken/opus-corrupt-page.json).
        #expect(decoder.warnings == [DecodeWarning(kind: .skippedCorruptData, byteOffset: 6842, byteCount: 1942)])
        // Before the hole, the intact file's samples.
        let whole = try OpusFixtures.open("opus-48000-stereo.opus").decodeAll().samples
        #expect(pcm.samples[0..<(14_088 * 2)] == whole[0..<(14_088 * 2)])
        #expect(pcm.samples.allSatisfy { $0.isFinite && abs($0) <= 1 })
        // Seeks agree with the decode, on both sides of the hole.
        try expectExactSeeks(decoder)
    }

    @Test("bad headers get an error that names what is wrong", arguments: [
        ("opus-bad-version.opus", AudioError.Code.unsupportedFormat, "version 16"),
        ("opus-zero-channels.opus", .corruptData, "0 channels"),
        ("opus-family-255.opus", .unsupportedFormat, "mapping family 255"),
        ("opus-bad-timestamp.opus", .corruptData, "granule position"),
    ])
    func badHeader(_ file: String, _ expected: AudioError.Code, _ words: String) throws {
        let error = code { _ = try OpusFixtures.open("broken/\(file)") }
        #expect(error?.code == expected)
        #expect(error?.message.contains(file) == true)
        #expect(error?.message.contains(words) == true, "\(error?.message ?? "no error")")
    }

    @Test func whatIsNotOpusIsNamedByTheOpusDecoder() throws {
        let vorbis = try Data(contentsOf: URL(fileURLWithPath: Fixtures.path("vorbis-44100-stereo.ogg")))
        let notOpus = code { _ = try OpusDecoder(source: .memory(vorbis, name: "v.ogg")) }
        #expect(notOpus?.code == .unsupportedFormat)
        #expect(notOpus?.message == "v.ogg: an Ogg stream carrying Vorbis, not Opus")
        let random = code { _ = try OpusDecoder(source: .memory(try OpusFixtures.data("ogg/random.ogg"), name: "r.opus")) }
        #expect(random?.code == .unsupportedFormat)
        #expect(random?.message == "r.opus: not an Ogg stream at all")
        #expect(code { _ = try OpusDecoder(source: .memory(Data(), name: "e.opus")) }?.code == .emptyInput)
    }

    @Test func everyPrefixOfAFileFailsCleanlyOrDecodesWhatItHolds() throws {
        // Cut anywhere, from the first byte to the last page: an error or a decode whose
        // length is what it said, never a crash.
        let data = try OpusFixtures.data("opus-48000-stereo.opus")
        for length in stride(from: 1, to: data.count, by: 97) {
            do {
                let decoder = try OpusDecoder(source: .memory(data.prefix(length), name: "cut"))
                let pcm = try decoder.decodeAll()
                #expect(pcm.frameCount == decoder.frameCount, "cut at \(length)")
            } catch let error as AudioError {
                #expect(error.message.hasPrefix("cut: "), "cut at \(length)")
            }
        }
    }

    @Test func callbacksFromLibopusfileAreClamped() throws {
        // libopusfile hands the seek callback any 64-bit offset; the reader adds it to a
        // position, which would overflow and trap.
        let reader = try ByteReader(source: .memory(try OpusFixtures.data("opus-48000-stereo.opus")))
        let stream = Unmanaged.passUnretained(reader).toOpaque()
        #expect(OpusFile.seek(stream, 47, SEEK_SET) == 0)
        #expect(OpusFile.seek(stream, .max, SEEK_CUR) == -1)
        #expect(OpusFile.seek(stream, .max, SEEK_END) == -1)
        #expect(OpusFile.seek(stream, .min, SEEK_CUR) == -1)
        #expect(OpusFile.seek(stream, -1, SEEK_SET) == -1)
        #expect(OpusFile.seek(stream, 100, 99) == -1)
        #expect(OpusFile.tell(stream) == 47)
        var byte: UInt8 = 0
        #expect(OpusFile.read(stream, &byte, -5) == 0)
        #expect(OpusFile.read(stream, nil, 10) == 0)
        #expect(OpusFile.read(stream, &byte, 1) == 1)
        #expect(byte == UInt8(ascii: "O"))
        #expect(OpusFile.seek(stream, 0, SEEK_END) == 0)
        #expect(OpusFile.read(stream, &byte, 1) == 0)
    }
}

/// Seeks to frames all over the stream: the position is the target, and what decodes from
/// there is what a full decode has there. Within 0.5 s of the start of a link a seek decodes
/// from the start, so the samples are the same bit for bit; further on, the decoder
/// converges to within float rounding (a seek one frame off would give about 18 dB here).
func expectExactSeeks(_ decoder: any AudioDecoder, sourceLocation: SourceLocation = #_sourceLocation) throws {
    try decoder.seek(toFrame: 0)
    let whole = try decoder.decodeAll().samples
    let frames = decoder.frameCount
    let channels = decoder.format.channelCount
    #expect(whole.count == frames * channels, sourceLocation: sourceLocation)
    for target in [frames / 2, 1, frames - 100, 0, frames / 3 + 7, frames - 1, 5000] where target < frames {
        try decoder.seek(toFrame: target)
        #expect(decoder.position == target, sourceLocation: sourceLocation)
        let part = try decoder.decodeAll(maximumFrames: 960).samples
        let expected = whole[(target * channels)..<(min(frames, target + 960) * channels)]
        if target <= OpusDecoder.seekConvergenceFrames {
            #expect(part[...] == expected, "seek to \(target)", sourceLocation: sourceLocation)
        } else {
            let ratio = snr(part[...], expected)
            #expect(ratio >= 138, "seek to \(target): \(ratio) dB", sourceLocation: sourceLocation)
        }
    }
    try decoder.seek(toFrame: frames)
    #expect(try decoder.decodeAll().frameCount == 0, sourceLocation: sourceLocation)
    #expect(throws: AudioError.self, sourceLocation: sourceLocation) { try decoder.seek(toFrame: frames + 1) }
}
