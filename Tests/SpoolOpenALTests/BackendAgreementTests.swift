import Foundation
import SpoolBufferQueue
import SpoolCore
import SpoolOutput
import SpoolDecoding
import Testing
@testable import SpoolOpenAL
import SpoolTestSupport

/// The same voice, fed the same way through the `PlaybackBackend` seam, rendered offline by
/// both back-ends: what comes out must agree.
@Suite("OpenAL and the buffer queue agree")
struct BackendAgreementTests {
    /// Renders `audio` through a fresh voice of each back-end at `pan`.
    func renderBoth(_ audio: PCMBuffer, pan: Float, frames: Int) throws -> (queue: [Float], openAL: [Float]) {
        let offline = try OfflineDevice(configuration: OutputConfiguration(sampleRate: 48_000, periodFrames: 256))
        let queueBackend = try BufferQueueBackend(device: offline)
        let openALBackend = OpenALBackend(device: try makeLoopback(periodFrames: 256))
        var outputs: [[Float]] = []
        for backend in [queueBackend, openALBackend] as [any PlaybackBackend] {
            let voice = try backend.makeVoice(format: audio.format)
            try voice.setPan(pan)
            let feeder = try VoiceFeeder(voice: voice, source: .buffer(audio), bufferFrames: 1024, buffersAhead: 3)
            try feeder.prime()
            try voice.start()
            outputs.append(backend === queueBackend ? try offline.render(frames: frames).samples
                                                    : try openALBackend.device.render(frames: frames).samples)
            voice.dispose()
        }
        return (outputs[0], outputs[1])
    }

    @Test(arguments: [-1, -0.5, 0, 0.5, 1] as [Float])
    func monoVoicesPanAlike(pan: Float) throws {
        let audio = try PCMBuffer(format: try AudioFormat(sampleRate: 48_000, channelCount: 1),
                                  samples: sine(frequency: 500, frames: 9600, channels: 1))
        let (queue, openAL) = try renderBoth(audio, pan: pan, frames: 9600)
        for side in 0..<2 {
            let a = rms(channel(queue, side)[960..<8640]), b = rms(channel(openAL, side)[960..<8640])
            if a < 1e-4 {
                #expect(b < 1e-4, "side \(side) at pan \(pan): queue silent, OpenAL \(b)")
            } else {
                #expect(abs(decibels(b / a)) < 0.1, "side \(side) at pan \(pan): queue \(decibels(a)) dB, OpenAL \(decibels(b)) dB")
            }
        }
    }

    @Test func stereoAndFoldedDownVoicesComeOutTheSame() throws {
        let stereo = try pcm(ramp(frames: 4000, channels: 2))
        let (queue, openAL) = try renderBoth(stereo, pan: 0, frames: 4096)
        #expect(mismatch(openAL, queue) == nil)

        let balanced = try renderBoth(stereo, pan: -0.4, frames: 4096)
        #expect(zip(balanced.queue, balanced.openAL).allSatisfy { abs($0 - $1) <= 1e-6 })

        let surround = try PCMBuffer(format: try AudioFormat(sampleRate: 48_000, channelCount: 6),
                                     samples: (0..<(3000 * 6)).map { Float(($0 * 7919) % 1000) / 2000 - 0.25 })
        let folded = try renderBoth(surround, pan: 0, frames: 3072)
        let worst = zip(folded.queue, folded.openAL).map { abs($0 - $1) }.max() ?? 1
        #expect(worst <= 1e-6, "5.1 folded down differs by up to \(worst)")
    }

    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures")

    /// A file decoded and played through each back-end (device at the file's rate, stereo
    /// out) matches the other back-end and the decoder's own PCM to ≥ 80 dB SNR. Mono plays
    /// at the centre, so the reference is the decoded signal × cos 45° on both sides.
    @Test(arguments: ["vorbis-44100-stereo.ogg", "mp3-22050-mono-vbr.mp3", "flac-48000-mono-s24.flac",
                      "wav-44100-stereo-s16.wav"])
    func aFilePlaysTheSameThroughBothBackends(_ file: String) throws {
        let path = Self.fixtures.appendingPathComponent(file).path
        let decoded = try DecoderRegistry.shared.open(path: path).decodeAll()
        let rate = decoded.format.sampleRate
        let frames = decoded.frameCount
        var reference = [Float](repeating: 0, count: frames * 2)
        for i in 0..<frames {
            for side in 0..<2 {
                reference[2 * i + side] = decoded.format.channelCount == 2
                    ? decoded.sample(frame: i, channel: side)! : decoded.sample(frame: i, channel: 0)! * PanLaw.mono(0).left
            }
        }
        let offline = try OfflineDevice(configuration: OutputConfiguration(sampleRate: rate, periodFrames: 256))
        let queueBackend = try BufferQueueBackend(device: offline)
        let openALBackend = OpenALBackend(device: try makeLoopback(rate: rate, periodFrames: 256))
        var outputs: [[Float]] = []
        for backend in [queueBackend, openALBackend] as [any PlaybackBackend] {
            let voice = try backend.makeVoice(format: decoded.format)
            let feeder = try VoiceFeeder(voice: voice, source: .decoder(try DecoderRegistry.shared.open(path: path)),
                                         bufferFrames: 2048, buffersAhead: 3)
            try feeder.prime()
            try voice.start()
            outputs.append(backend === queueBackend ? try offline.render(frames: frames).samples
                                                    : try openALBackend.device.render(frames: frames).samples)
            voice.dispose()
        }
        func snr(_ a: [Float], _ b: [Float]) -> Double {
            var signal = 0.0, noise = 0.0
            for (x, y) in zip(a, b) { signal += Double(y) * Double(y); noise += Double(x - y) * Double(x - y) }
            return noise == 0 ? .infinity : 10 * log10(signal / noise)
        }
        #expect(snr(outputs[0], reference) >= 80, "queue against the decoder: \(snr(outputs[0], reference)) dB")
        #expect(snr(outputs[1], reference) >= 80, "OpenAL against the decoder: \(snr(outputs[1], reference)) dB")
        #expect(snr(outputs[1], outputs[0]) >= 80, "OpenAL against the queue: \(snr(outputs[1], outputs[0])) dB")
    }
}
