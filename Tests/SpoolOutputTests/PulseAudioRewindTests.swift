import Foundation
import SoundServerTestSupport
import SpoolBufferQueue
import SpoolCore
@testable import SpoolOutput
import SpoolTestSupport
import Testing

/// Starts below the buffer floor on the native PulseAudio output, recorded from a null sink's
/// monitor: a short burst started while a tone plays with 1024 × 3 frames queued.
@Suite("Rewind on a real sound server", .serialized,
       .disabled(if: SoundServer.underSanitizer, "real-time timing means nothing under a sanitizer's slow-down; the plain run checks it"))
struct PulseAudioRewindTests {
    static let enabled = SoundServer.isRunning || SoundServer.isCI
    static let rate = 48_000.0

    /// What the recording shows of a burst started `lead` seconds into a tone.
    struct Heard {
        /// Start call → the burst's first loud sample in the recording, in seconds.
        var latency: Double
        /// The largest step between neighbouring samples of the tone outside the burst: a
        /// splice that went wrong is a step far above the tone's own (0.0026 for 200 Hz at 0.1).
        var largestStep: Float
        /// The recorded onset less when the device said the burst's first frame would be heard.
        var reportError: Double
        var period: Double
        /// Underruns the server reported: each leaves a gap, a step in the tone of its own.
        var underruns: Int
        var rewinds: (performed: Int, declined: Int)
    }

    static func playBurst(periodFrames: Int, periodCount: Int, rewinds: Bool) throws -> Heard {
        let sink = try PrivateNullSink()
        let recorder = try MonitorRecorder(source: sink.monitor)
        let recordingFrom = HostTime.now()
        let device = try PulseAudioDevice(sink: sink.name, configuration: OutputConfiguration(
            sampleRate: rate, channelCount: 2, periodFrames: periodFrames, periodCount: periodCount))
        let engine = QueueEngine(device: device)
        engine.startsBelowFloor = rewinds
        let tone = try BufferQueue(format: stereo48, engine: engine) { _, _ in }
        try tone.enqueue(try sine(200, frames: 4 * Int(rate), format: stereo48, amplitude: 0.1))
        let burst = try BufferQueue(format: stereo48, engine: engine) { _, _ in }
        try burst.enqueue(try sine(3_000, frames: 480, format: stereo48, amplitude: 0.5))
        // An idle null sink asks a new stream for nothing for about a second: start the tone
        // 2 s into the recording (the stream's first start, rewound too), the burst 1.5 s later.
        HostTime.sleep(until: recordingFrom + HostTime.nanoseconds(2))
        try tone.start()
        HostTime.sleep(until: recordingFrom + HostTime.nanoseconds(3.5))
        let call = HostTime.now()
        try burst.start()
        HostTime.sleep(until: recordingFrom + HostTime.nanoseconds(4.5))
        let samples = try recorder.stop()
        let counts = device.rewindCounts
        let reported = try #require(burst.firstFrameHostTime)
        engine.stop()

        let onset = try #require(samples.firstIndex { abs($0) > 0.3 }, "the recording holds no burst")
        let toneStart = try #require(samples.firstIndex { abs($0) > 0.05 })
        var largestStep: Float = 0
        // The burst's own steps, from its first frame (the onset is where it first tops 0.3,
        // up to a few frames in, with the tone under it) to its last.
        let burstEnd = onset + 480 + 48
        for i in (toneStart + 48)..<(samples.count - 48) where i < onset - 16 || i > burstEnd {
            largestStep = max(largestStep, abs(samples[i] - samples[i - 1]))
        }
        // The onset is the burst's third frame (the first above 0.3) or a little later.
        let onsetTime = recorder.hostTime(ofSample: onset)
        return Heard(latency: HostTime.seconds(from: call, to: onsetTime), largestStep: largestStep,
                     reportError: HostTime.seconds(from: reported, to: onsetTime),
                     period: Double(device.periodFrames) / rate, underruns: device.xrunCount, rewinds: counts)
    }

    @Test("A burst started with the buffer full is heard within a period + 2 ms where it said, the tone unbroken",
          .enabled(if: enabled, "no PulseAudio server answers `pactl info`; start one with scripts/pulseaudio.sh"),
          arguments: [(256, 2), (1024, 3)])
    func burstIsHeardWithinAPeriod(periodFrames: Int, periodCount: Int) throws {
        guard SoundServer.expectRunning() else { return }
        let heard = try Self.playBurst(periodFrames: periodFrames, periodCount: periodCount, rewinds: true)
        let floor = try Self.playBurst(periodFrames: periodFrames, periodCount: periodCount, rewinds: false)
        func ms(_ seconds: Double) -> String { String(format: "%.1f ms", seconds * 1000) }
        print("pulse rewind \(periodFrames)×\(periodCount): heard \(ms(heard.latency)) after the call with rewind "
              + "(\(heard.rewinds)), \(ms(floor.latency)) without; heard \(ms(heard.reportError)) after the device said "
              + "(\(ms(floor.reportError)) without); largest step in the tone \(heard.largestStep), \(floor.largestStep) without; "
              + "underruns \(heard.underruns), \(floor.underruns) without")
        #expect(heard.rewinds.performed >= 1)
        #expect(heard.latency <= heard.period + 0.002, "heard \(ms(heard.latency)) after the call")
        // The monitor's timing is late by up to a hand-over, and its sink hands blocks over
        // a little early: the check of PulseAudioSoundServerTests' latency test.
        #expect(abs(heard.reportError) <= heard.period + 0.010, "heard \(ms(heard.reportError)) after the device said")
        // A splice gone wrong is a step far above the tone's own; an underrun (a busy machine
        // at 256 × 2) leaves one too, and is counted and tested on its own.
        if heard.underruns == 0 {
            #expect(heard.largestStep < 0.01, "the tone jumps by \(heard.largestStep) outside the burst: a broken splice")
        }
        if floor.underruns == 0 { #expect(floor.largestStep < 0.01) }
        #expect(floor.rewinds.performed == 0)
    }

    @Test("ALSA's pulse plug-in cannot rewind, says why, and a start waits behind its buffer",
          .enabled(if: enabled, "no PulseAudio server answers `pactl info`; start one with scripts/pulseaudio.sh"))
    func pulsePlugInStartsAtTheFloor() throws {
        guard SoundServer.expectRunning() else { return }
        let device = try ALSADevice(name: "pulse", configuration: OutputConfiguration(
            sampleRate: Self.rate, channelCount: 2, periodFrames: 1024, periodCount: 3))
        guard case .unavailable(let reason) = device.rewindSupport else {
            Issue.record("the pulse plug-in claims to rewind")
            return
        }
        #expect(reason.contains("alsa:pulse") && reason.contains("plug-in"), "\(reason)")
        let engine = QueueEngine(device: device)
        #expect(engine.rewindSupport == device.rewindSupport)
        let tone = try BufferQueue(format: device.format, engine: engine) { _, _ in }
        try tone.enqueue(try sine(200, frames: Int(Self.rate), format: device.format, amplitude: 0.1))
        let burst = try BufferQueue(format: device.format, engine: engine) { _, _ in }
        try burst.enqueue(try sine(3_000, frames: 480, format: device.format, amplitude: 0.5))
        try tone.start()
        Thread.sleep(forTimeInterval: 0.5)
        let call = HostTime.now()
        try burst.start()
        // The plug-in's delay, which times the periods, can take a while to settle on a busy server.
        let deadline = call + HostTime.nanoseconds(3)
        while burst.firstFrameHostTime == nil, HostTime.now() < deadline { usleep(1_000) }
        let heard = try #require(burst.firstFrameHostTime)
        let latency = HostTime.seconds(from: call, to: heard)
        // Behind at least the periods the plug-in holds but the one being taken.
        let floor = Double((device.periodCount - 1) * device.periodFrames) / Self.rate
        print("alsa:pulse \(device.periodFrames)×\(device.periodCount): \(reason); a start heard \(latency * 1000) ms after the call")
        #expect(latency >= floor - 0.002, "heard \(latency * 1000) ms after the call, below the floor of \(floor * 1000) ms")
        #expect(device.rewindCounts.performed == 0)
        engine.stop()
    }
}
