import Foundation
import SpoolCore
import SpoolOutput
import Testing
@testable import SpoolBufferQueue
import SpoolTestSupport

/// Starts below the buffer floor on the null device: a queue started while 1024 × 3 frames are
/// queued is re-mixed into them, heard within a period + 2 ms, and the audio already playing
/// carries on untouched.
@Suite(.serialized) struct RewindTests {
    static let rate = 48_000.0
    static let configuration = OutputConfiguration(sampleRate: rate, channelCount: 2, periodFrames: 1024, periodCount: 3)

    /// A device with a capture of its first two seconds, an engine on it, a 440 Hz tone
    /// playing, and a second queue holding `sound`, not started.
    struct Scene {
        let device: NullDevice
        let engine: QueueEngine
        let capture: OutputCapture
        let tone: [Float]
        let background: BufferQueue
        let sound: [Float]
        let effect: BufferQueue

        init(rewinds: Bool) throws {
            device = try NullDevice(configuration: RewindTests.configuration)
            capture = device.capture(frames: 2 * Int(RewindTests.rate))
            engine = QueueEngine(device: device)
            engine.startsBelowFloor = rewinds
            let format = device.format
            // Offset, so that its first frame is not silent and shows where it began.
            tone = sine(frequency: 440, rate: RewindTests.rate, frames: 3 * Int(RewindTests.rate), channels: 2, amplitude: 0.3)
                .map { $0 + 0.1 }
            background = try BufferQueue(format: format, engine: engine) { _, _ in }
            try background.enqueue(try pcm(tone))
            // A sound unlike the tone from its first frame: a 1 kHz sine at 0.2 with a 0.25 offset.
            sound = sine(frequency: 1_000, rate: RewindTests.rate, frames: 4_800, channels: 2, amplitude: 0.2).map { $0 + 0.25 }
            effect = try BufferQueue(format: format, engine: engine) { _, _ in }
            try effect.enqueue(try pcm(sound))
        }

        /// Starts the tone, waits `lead` seconds, starts the sound.
        /// - Returns: The sound's start latency (start call → its first frame heard), in seconds.
        func play(lead: Double = 0.3) throws -> Double {
            try background.start()
            Thread.sleep(forTimeInterval: lead)
            let call = HostTime.now()
            try effect.start()
            let deadline = call + HostTime.nanoseconds(1)
            while effect.firstFrameHostTime == nil, HostTime.now() < deadline { usleep(1_000) }
            let heard = try #require(effect.firstFrameHostTime)
            return HostTime.seconds(from: call, to: heard)
        }
    }

    @Test func aSoundStartedBehindAFullBufferIsHeardWithinAPeriod() throws {
        let scene = try Scene(rewinds: true)
        #expect(scene.engine.rewindSupport == .available)
        let latency = try scene.play()
        let period = 1024 / Self.rate
        #expect(latency <= period + 0.002, "heard \(latency * 1000) ms after the call")
        #expect(scene.device.rewindCounts.performed >= 1)
    }

    @Test func withoutRewindTheSoundWaitsBehindTheBuffer() throws {
        let scene = try Scene(rewinds: false)
        let latency = try scene.play()
        // Behind the (P−1)…P periods already mixed.
        #expect(latency >= 2 * 1024 / Self.rate - 0.002, "heard \(latency * 1000) ms after the call")
        #expect(scene.device.rewindCounts.performed == 0)
    }

    @Test func theRewrittenFramesAreTheSoundsOwnAddedToWhatPlayed() throws {
        let scene = try Scene(rewinds: true)
        _ = try scene.play()
        let deadline = HostTime.now() + HostTime.nanoseconds(5)
        while scene.capture.frames.count < 2 * 2 * Int(Self.rate), HostTime.now() < deadline { usleep(20_000) }
        scene.engine.stop()
        let played = scene.capture.frames
        try #require(played.count == 2 * 2 * Int(Self.rate))
        #expect(scene.device.rewindCounts.performed >= 1)

        // Where the tone begins, then what is left once it is taken away: silence, the sound
        // exactly as it is from its first frame, then silence again.
        let toneStart = try #require(firstSoundingFrame(played))
        var rest = played
        for i in (2 * toneStart)..<played.count where i - 2 * toneStart < scene.tone.count {
            rest[i] -= scene.tone[i - 2 * toneStart]
        }
        let soundStart = try #require(rest.firstIndex { abs($0) > 1e-6 }) / 2
        #expect(soundStart > toneStart + 4 * 1024 / 3, "the sound began \(soundStart - toneStart) frames after the tone")
        var worst: Float = 0
        for (i, expected) in scene.sound.enumerated() { worst = max(worst, abs(rest[2 * soundStart + i] - expected)) }
        #expect(worst < 1e-6, "the sound's frames differ by up to \(worst)")
        let after = rest[(2 * soundStart + scene.sound.count)...]
        #expect(after.allSatisfy { abs($0) <= 1e-6 }, "the tone changed after the sound")
    }
}

/// Rewind on ALSA: what a PCM allows (`snd_pcm_rewindable`).
@Suite(.serialized) struct ALSARewindTests {
    @Test func theNullPCMRewindsAndTheSoundStartsBelowTheFloor() throws {
        let device = try ALSADevice(name: "null", configuration: RewindTests.configuration)
        #expect(device.rewindSupport == .available)
        let engine = QueueEngine(device: device)
        let format = device.format
        let tone = try BufferQueue(format: format, engine: engine) { _, _ in }
        try tone.enqueue(try sine(440, frames: 48_000, format: format, amplitude: 0.3))
        let sound = try BufferQueue(format: format, engine: engine) { _, _ in }
        try sound.enqueue(try sine(1_000, frames: 4_800, format: format, amplitude: 0.2))
        try tone.start()
        Thread.sleep(forTimeInterval: 0.3)
        try sound.start()
        // The null PCM takes every write at once (it has no clock), so there is always a
        // whole buffer to move back over: the rewind is carried out, and the sound's first
        // frame is rendered in it.
        let deadline = HostTime.now() + HostTime.nanoseconds(1)
        while device.rewindCounts.performed < 1 || sound.firstFrameHostTime == nil, HostTime.now() < deadline { usleep(1_000) }
        #expect(device.rewindCounts.performed >= 1)
        #expect(sound.firstFrameHostTime != nil)
        engine.stop()
    }
}
