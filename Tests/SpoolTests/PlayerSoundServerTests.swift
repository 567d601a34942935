import Foundation
import SoundServerTestSupport
import Spool
import Testing
import SpoolTestSupport

/// `AudioPlayer` playing a file to a real PulseAudio server, on each back-end, recorded from
/// the sink's monitor.
@Suite("AudioPlayer on a real sound server", .serialized, .disabled(if: SoundServer.underSanitizer, "real-time timing means nothing under a sanitizer's slow-down; the plain run checks it"))
struct PlayerSoundServerTests {
    // Outside CI a machine without a PulseAudio server skips these (reported as skipped); in CI
    // they run and fail, because CI must start one (scripts/pulseaudio.sh).
    static let enabled = SoundServer.isRunning || SoundServer.isCI

    @Test("A player plays a 1 kHz tone file to a null sink whole, on each back-end",
          .enabled(if: enabled, "no PulseAudio server answers `pactl info`; start one with scripts/pulseaudio.sh"),
          arguments: Backend.allCases)
    func aPlayerPlaysAToneFileToTheNullSinkWhole(_ kind: Backend) throws {
        guard SoundServer.expectRunning() else { return }
        // 2.5 s of silence first (an idle null sink asks a new stream for nothing for about a
        // second), then 1 s of 1 kHz at 44.1 kHz mono: the player converts it to the device.
        let format = try AudioFormat(sampleRate: 44_100, channelCount: 1)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("spool-player-tone-\(UUID().uuidString).wav").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let writer = try WAVFileWriter(path: path, format: format)
        let silence = [Float](repeating: 0, count: 110_250)
        let tone = (0..<44_100).map { Float(0.5 * sin(2 * Double.pi * 1_000 * Double($0) / 44_100)) }
        try writer.write(try PCMBuffer(format: format, samples: silence + tone + [Float](repeating: 0, count: 22_050)))
        try writer.finish()

        let sink = try PrivateNullSink()
        let recorder = try MonitorRecorder(source: sink.monitor)
        let backend = try Self.backend(kind, on: sink, periodFrames: 1024)
        let finished = FinishWaiter()
        let player = try AudioPlayer(contentsOfFile: path, backend: backend)
        player.delegate = finished
        try player.play()
        let ended = finished.wait(seconds: 10)
        Thread.sleep(forTimeInterval: 0.3 + backend.outputLatency)
        let samples = try recorder.stop()
        #expect(ended == true, "the player reported finishing successfully")

        let analysis = try #require(ToneAnalysis(samples: samples, sampleRate: recorder.sampleRate),
                                    "the recording (\(samples.count) frames) holds no tone")
        print("\(kind): recorded \(Double(samples.count) / 48_000) s: tone at \(analysis.onsetSeconds) s for "
              + "\(analysis.durationSeconds) s, \(analysis.frequency) Hz, \(analysis.dropouts.count) dropouts")
        #expect(abs(analysis.frequency - 1_000) <= 10)
        #expect(abs(analysis.durationSeconds - 1.0) <= 0.05)
        #expect(analysis.dropouts.isEmpty, "near-silent 5 ms windows inside the tone at \(analysis.dropouts.prefix(5)) s")
    }

    @Test("A burst of 32 overlapping sound effects plays with no dropout, on each back-end",
          .enabled(if: enabled, "no PulseAudio server answers `pactl info`; start one with scripts/pulseaudio.sh"),
          arguments: Backend.allCases)
    func aBurstOf32OverlappingEffectsPlaysWithNoDropout(_ kind: Backend) throws {
        guard SoundServer.expectRunning() else { return }
        let sink = try PrivateNullSink()
        let recorder = try MonitorRecorder(source: sink.monitor)
        let backend = try Self.backend(kind, on: sink, periodFrames: 1024)
        let effects = try SoundEffects(backend: backend)
        // 32 bursts of noise, 0.5 s each, uniform in ±0.06 (RMS 0.035): independent noises add
        // in power and never cancel, as tones could, so a quiet 5 ms window inside the burst is
        // a real dropout; 32 at once stay under full scale.
        var generator = SystemRandomNumberGenerator()
        let sounds = try (0..<32).map { k in
            let noise = (0..<24_000).flatMap { _ -> [Float] in
                let v = Float.random(in: -0.06...0.06, using: &generator)
                return [v, v]
            }
            return try SystemSound(buffer: PCMBuffer(format: stereo48, samples: noise), name: "noise \(k)", effects: effects)
        }
        let completions = Locked(0)
        for sound in sounds { sound.addCompletion { _ in completions.withLock { $0 += 1 } } }
        // An idle null sink asks a new stream for nothing for about a second: silence first.
        let bed = try SystemSound(buffer: constant(0, frames: 96_000), name: "silence", effects: effects)
        try bed.play()
        Thread.sleep(forTimeInterval: 2.2)
        // The calls' own spread, timed: a loaded machine oversleeps the 10 ms between them.
        let firstCall = DispatchTime.now().uptimeNanoseconds
        var lastCall = firstCall
        for sound in sounds {
            lastCall = DispatchTime.now().uptimeNanoseconds
            try sound.play()
            Thread.sleep(forTimeInterval: 0.01)
        }
        let spread = Double(lastCall - firstCall) / 1e9
        let deadline = Date().addingTimeInterval(5)
        while completions.withLock({ $0 }) < 32 && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        Thread.sleep(forTimeInterval: 0.3 + backend.outputLatency)
        let samples = try recorder.stop()
        #expect(completions.withLock { $0 } == 32, "every play finished once")
        let analysis = try #require(ToneAnalysis(samples: samples, sampleRate: recorder.sampleRate, loudLevel: 0.02),
                                    "the recording (\(samples.count) frames) holds no burst")
        print("\(kind): 32 effects called over \(spread) s: burst at \(analysis.onsetSeconds) s for "
              + "\(analysis.durationSeconds) s, \(analysis.dropouts.count) dropouts")
        // The last starts `spread` after the first and plays 0.5 s; each start lands on the
        // next mixer period (21 ms at 1024 frames), and the server's own wake-ups add a little.
        let expected = spread + 0.5
        #expect(analysis.durationSeconds > expected - 0.05 && analysis.durationSeconds < expected + 0.08,
                "\(analysis.durationSeconds) s against \(expected) s")
        #expect(analysis.dropouts.isEmpty, "near-silent 5 ms windows inside the burst at \(analysis.dropouts.prefix(5)) s")
    }
}

extension PlayerSoundServerTests {
    /// A back-end playing to `sink`: the queue on ALSA's PulseAudio plug-in opened on the sink
    /// by name (`pulse:DEVICE=…`; moving a stream there instead could take another test's,
    /// opened at the same moment), OpenAL on the sink by name.
    static func backend(_ kind: Backend, on sink: PrivateNullSink, periodFrames: Int) throws -> any PlaybackBackend {
        let configuration = OutputConfiguration(sampleRate: 48_000, channelCount: 2, periodFrames: periodFrames, periodCount: 3)
        switch kind {
        case .queue:
            return try BufferQueueBackend(device: ALSADevice(name: "pulse:DEVICE=\(sink.name)", configuration: configuration))
        case .openAL:
            let names = OpenALDevice.availableDeviceNames()
            try #require(names.contains(sink.name), "OpenAL Soft does not list the sink: \(names)")
            return OpenALBackend(device: try OpenALDevice(.named(sink.name)))
        }
    }
}

/// Waits for a player's finish and keeps whether it was successful.
final class FinishWaiter: AudioPlayerDelegate, Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let outcome = Locked<Bool?>(nil)

    func audioPlayerDidFinishPlaying(_ player: AudioPlayer, successfully flag: Bool) {
        outcome.withLock { $0 = flag }
        done.signal()
    }

    /// The finish's `successfully`, or nil when none came within `seconds`.
    func wait(seconds: Double) -> Bool? {
        guard done.wait(timeout: .now() + seconds) == .success else { return nil }
        return outcome.withLock { $0 }
    }
}
