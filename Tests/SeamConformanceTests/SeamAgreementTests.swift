import Foundation
import SpoolCore
import SpoolDecoding
import Testing
import SpoolTestSupport

/// What the two back-ends render from the same input, fed the same way through the seam:
/// the same samples, within 80 dB, at equal and at converted rates, mono and stereo, with
/// every source frame played.
@Suite("Seam conformance: both back-ends render the same")
struct SeamAgreementTests {
    /// Source and device rates the devices meet in practice.
    static let ratePairs: [(source: Double, device: Double)] = [
        (48_000, 48_000), (44_100, 48_000), (48_000, 44_100), (22_050, 48_000), (32_000, 48_000),
    ]

    struct Case: Sendable, CustomTestStringConvertible {
        let source: Double
        let device: Double
        let channels: Int
        var testDescription: String { "\(Int(source)) → \(Int(device)) Hz, \(channels == 1 ? "mono" : "stereo")" }
    }

    static let cases: [Case] = ratePairs.flatMap { pair in
        [1, 2].map { Case(source: pair.source, device: pair.device, channels: $0) }
    }

    /// Two tones per channel (different on each side), faded in and out over 10 ms.
    static func program(rate: Double, channels: Int, seconds: Double) throws -> PCMBuffer {
        let frames = Int(rate * seconds)
        let fade = Int(rate * 0.01)
        var samples = [Float](repeating: 0, count: frames * channels)
        for i in 0..<frames {
            let t = Double(i) / rate
            let envelope = Double(min(1, Double(min(i, frames - 1 - i)) / Double(fade)))
            for c in 0..<channels {
                let low = sin(2 * .pi * (440 + 110 * Double(c)) * t), high = sin(2 * .pi * (3_100 + 250 * Double(c)) * t)
                samples[i * channels + c] = Float(envelope * (0.3 * low + 0.15 * high))
            }
        }
        return try PCMBuffer(format: try AudioFormat(sampleRate: rate, channelCount: channels), samples: samples)
    }

    /// Plays `source` through a feeder on each back-end until the voice finishes, then a
    /// little more, and reports what came out and what the voice counted.
    static func renderBoth(_ source: VoiceFeeder.Source, format: AudioFormat, deviceRate: Double,
                           playbackRate: Float = 1) throws -> [(out: [Float], framesPlayed: Int, finishes: [String])] {
        try Backend.allCases.map { kind in
            let rig = try Rig(kind, rate: deviceRate)
            let voice = try rig.voice(format)
            let log = Recorder(voice)
            try voice.setPlaybackRate(playbackRate)
            let feeder = try VoiceFeeder(voice: voice, source: source, bufferFrames: 1024, buffersAhead: 3)
            try feeder.prime()
            try voice.start()
            var out = try rig.render(until: { !log.finishes.isEmpty }, limit: Int(deviceRate * 5))
            out += try rig.render(2048)
            return (out, voice.framesPlayed, log.finishes)
        }
    }

    @Test(arguments: cases)
    func bothBackEndsRenderTheSameProgram(_ c: Case) throws {
        let source = try Self.program(rate: c.source, channels: c.channels, seconds: 0.7)
        let results = try Self.renderBoth(.buffer(source), format: source.format, deviceRate: c.device)
        let (queue, openAL) = (results[0], results[1])
        for (name, result) in [("queue", queue), ("OpenAL", openAL)] {
            #expect(result.finishes == ["playedOut"], "\(name): \(result.finishes)")
            #expect(result.framesPlayed == source.frameCount, "\(name) played \(result.framesPlayed) of \(source.frameCount) frames")
        }
        let agreement = snr(openAL.out, queue.out)
        #expect(agreement >= 80, "OpenAL against the queue: \(agreement) dB")
        // And it is the program: the level of each channel, while it sounds, is the source's.
        let expected = rms(channel(source.samples, 0, of: c.channels))
        let sounding = Int(Double(source.frameCount) * c.device / c.source)
        let measured = rms(channel(queue.out, 0)[0..<sounding])
        #expect(abs(20 * log10(measured / expected)) < 0.2, "queue level \(measured) against \(expected)")
    }

    @Test(arguments: [(48_000.0, Float(1.25)), (44_100, 0.8)])
    func bothBackEndsRenderTheSameVarispeed(_ sourceRate: Double, _ rate: Float) throws {
        let source = try Self.program(rate: sourceRate, channels: 2, seconds: 0.5)
        let results = try Self.renderBoth(.buffer(source), format: source.format, deviceRate: 48_000, playbackRate: rate)
        for result in results {
            #expect(result.finishes == ["playedOut"])
            #expect(result.framesPlayed == source.frameCount)
        }
        let agreement = snr(results[1].out, results[0].out)
        #expect(agreement >= 80, "OpenAL against the queue at rate \(rate): \(agreement) dB")
    }

    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures")

    @Test(arguments: ["flac-44100-stereo-s16.flac", "mp3-22050-mono-vbr.mp3", "vorbis-44100-stereo.ogg"])
    func aDecodedFileOnA48kDeviceSoundsTheSameOnBoth(_ file: String) throws {
        let path = Self.fixtures.appendingPathComponent(file).path
        let frames = try DecoderRegistry.shared.open(path: path).decodeAll().frameCount
        var outputs: [[Float]] = []
        for kind in Backend.allCases {
            let decoder = try DecoderRegistry.shared.open(path: path)
            let rig = try Rig(kind, rate: 48_000)
            let voice = try rig.voice(decoder.format)
            let log = Recorder(voice)
            let feeder = try VoiceFeeder(voice: voice, source: .decoder(decoder), bufferFrames: 2048, buffersAhead: 3)
            try feeder.prime()
            try voice.start()
            var out = try rig.render(until: { !log.finishes.isEmpty }, limit: 48_000 * 5)
            out += try rig.render(2048)
            #expect(voice.framesPlayed == frames, "\(kind): \(voice.framesPlayed) of \(frames) frames")
            #expect(log.finishes == ["playedOut"])
            outputs.append(out)
        }
        #expect(snr(outputs[1], outputs[0]) >= 80, "OpenAL against the queue: \(snr(outputs[1], outputs[0])) dB")
    }
}
