import Foundation
import SoundServerTestSupport
import Spool
import Testing

/// `AudioPlayer` playing a file to a real PulseAudio server, on each back-end, recorded from
/// the sink's monitor.
@Suite("AudioPlayer on a real sound server", .serialized)
struct PlayerSoundServerTests {
    // Outside CI a machine without a PulseAudio server skips these (reported as skipped); in CI
    // they run and fail, because CI must start one (scripts/pulseaudio.sh).
    static let enabled = SoundServer.isRunning || SoundServer.isCI

    @Test("A player plays a 1 kHz tone file to a null sink whole, on each back-end",
          .enabled(if: enabled, "no PulseAudio server answers `pactl info`; start one with scripts/pulseaudio.sh"),
          arguments: Backend.allCases)
    func aPlayerPlaysAToneFileToTheNullSinkWhole(_ kind: Backend) throws {
        guard SoundServer.isRunning else {
            Issue.record("CI must run a PulseAudio server (scripts/pulseaudio.sh)")
            return
        }
        // 2.5 s of silence first (an idle null sink asks a new stream for nothing for about a
        // second), then 1 s of 1 kHz at 44.1 kHz mono: the player converts it to the device.
        let format = try AudioFormat(sampleRate: 44_100, channelCount: 1)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("spool-player-tone-\(getpid()).wav").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let writer = try WAVFileWriter(path: path, format: format)
        let silence = [Float](repeating: 0, count: 110_250)
        let tone = (0..<44_100).map { Float(0.5 * sin(2 * Double.pi * 1_000 * Double($0) / 44_100)) }
        try writer.write(try PCMBuffer(format: format, samples: silence + tone + [Float](repeating: 0, count: 22_050)))
        try writer.finish()

        let sink = try PrivateNullSink()
        let recorder = try MonitorRecorder(source: sink.monitor)
        let configuration = OutputConfiguration(sampleRate: 48_000, channelCount: 2, periodFrames: 1024, periodCount: 3)
        let backend: any PlaybackBackend
        switch kind {
        case .queue:
            let before = try SoundServer.sinkInputs(ofProcess: getpid(), application: "ALSA plug-in")
            let device = try ALSADevice(name: "default", configuration: configuration)
            // The plugin's stream exists once the PCM is prepared, corked until the first write:
            // move it to the test's sink before it plays.
            for input in try SoundServer.sinkInputs(ofProcess: getpid(), application: "ALSA plug-in").subtracting(before) {
                try sink.move(sinkInput: input)
            }
            backend = try BufferQueueBackend(device: device)
        case .openAL:
            let names = OpenALDevice.availableDeviceNames()
            try #require(names.contains(sink.name), "OpenAL Soft does not list the sink: \(names)")
            backend = OpenALBackend(device: try OpenALDevice(.named(sink.name)))
        }
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
