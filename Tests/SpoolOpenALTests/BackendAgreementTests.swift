import Foundation
import SpoolBufferQueue
import SpoolCore
import Testing
@testable import SpoolOpenAL

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
}
