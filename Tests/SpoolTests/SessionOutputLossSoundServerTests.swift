import Foundation
import SoundServerTestSupport
@testable import Spool
import SpoolTestSupport
import Testing

/// An audio session on the outputs that are not the native PulseAudio one, on the shared sound
/// server: an ALSA device (the `pulse` plug-in) and an OpenAL Soft device (its own PulseAudio
/// driver) whose sink is unloaded are a route change that pauses the players; an OpenAL device
/// during a call in another program plays on, muted by the server, since OpenAL Soft passes on
/// no cork request.
@Suite("AudioSession on ALSA and OpenAL outputs of a real sound server", .serialized,
       .disabled(if: SoundServer.underSanitizer, "real-time timing means nothing under a sanitizer's slow-down; the plain run checks it"))
struct SessionOutputLossSoundServerTests {
    static let enabled = SoundServer.isRunning || SoundServer.isCI
    static let configuration = OutputConfiguration(sampleRate: 48_000, channelCount: 2, periodFrames: 512, periodCount: 3)

    /// A back-end on OpenAL Soft's device for `sink` of the shared server, at OpenAL Soft's own
    /// settings (another test of the process may have started it with them already).
    static func openAL(on sink: PrivateNullSink) throws -> any PlaybackBackend {
        _ = OpenALDevice.availableDeviceNames()  // makes OpenAL Soft list the new sink
        return try OpenALBackend(.named(sink.name))
    }

    /// A playback session on `backend`, its events logged, with a player of a `seconds` tone
    /// at 1 kHz playing, once it has played 0.2 s.
    static func playingSession(on backend: any PlaybackBackend, seconds: Double = 4) throws
        -> (session: AudioSession, player: AudioPlayer, log: AudioSessionTests.EventLog) {
        let session = AudioSession(backend: backend, group: AudioSessionGroup())
        try session.setCategory(.playback)
        let log = AudioSessionTests.EventLog()
        session.setEventHandler { log.record($0) }
        let player = try AudioPlayer(buffer: try sine(1_000, frames: Int(seconds * 48_000), format: stereo48, amplitude: 0.3),
                                     backend: backend)
        player.session = session
        try player.play()
        let playing = Date().addingTimeInterval(4)
        while player.currentTime < 0.2, Date() < playing { usleep(10_000) }
        #expect(player.currentTime >= 0.2, "the player never played: \(player.currentTime) s")
        return (session, player, log)
    }

    /// Waits up to 3 s for a route change of `reason`, then checks that the player paused and
    /// that the change came once.
    static func expectPausedByRouteChange(_ player: AudioPlayer, _ log: AudioSessionTests.EventLog) {
        let deadline = Date().addingTimeInterval(3)
        while !log.events.contains(where: isRouteChange(.oldDeviceUnavailable)), Date() < deadline { usleep(5_000) }
        #expect(log.events.contains(where: isRouteChange(.oldDeviceUnavailable)), "no route change: \(log.events)")
        #expect(player.state == .paused, "a pulled output pauses its player, as on iOS")
        #expect(player.currentTime >= 0.1, "paused where it was heard, not back at the start: \(player.currentTime) s")
        Thread.sleep(forTimeInterval: 0.2)
        #expect(log.events.filter(isRouteChange(.oldDeviceUnavailable)).count == 1, "\(log.events)")
        #expect(!log.events.contains { if case .interruption = $0 { true } else { false } })
    }

    static func isRouteChange(_ reason: AudioSessionRouteChange.Reason) -> (AudioSessionEvent) -> Bool {
        { if case .routeChange(let change) = $0 { change.reason == reason } else { false } }
    }

    @Test("The sink of an OpenAL Soft output unloaded: oldDeviceUnavailable, the player paused, once",
          .enabled(if: enabled, "no PulseAudio server answers `pactl info`; start one with scripts/pulseaudio.sh"))
    func aLostOpenALOutputIsARouteChange() throws {
        guard SoundServer.expectRunning() else { return }
        let sink = try PrivateNullSink()
        let (session, player, log) = try Self.playingSession(on: try Self.openAL(on: sink))
        sink.unload()  // with nowhere to move it, the server kills the stream: ALC_CONNECTED turns 0
        Self.expectPausedByRouteChange(player, log)
        withExtendedLifetime(session) {}
    }

    static let childVariable = "SPOOL_TEST_ALSA_SERVER_CHILD"

    @Test("The server under an ALSA output killed (the pulse plug-in's PCM fails): oldDeviceUnavailable, the player paused",
          .enabled(if: enabled, "no PulseAudio server answers `pactl info`; start one with scripts/pulseaudio.sh"))
    func aLostALSAOutputIsARouteChange() throws {
        if ProcessInfo.processInfo.environment[Self.childVariable] != nil {
            // The child: ALSA's pulse plug-in plays to the server PULSE_SERVER names, which the
            // parent kills once this prints that it plays.
            let device = try ALSADevice(name: "pulse", configuration: Self.configuration)
            let (session, player, log) = try Self.playingSession(on: try BufferQueueBackend(device: device), seconds: 20)
            print("child: playing")
            let deadline = Date().addingTimeInterval(10)
            while !log.events.contains(where: Self.isRouteChange(.oldDeviceUnavailable)), Date() < deadline { usleep(5_000) }
            Self.expectPausedByRouteChange(player, log)
            print("child: \(log.events)")
            withExtendedLifetime(session) {}
            return
        }
        guard SoundServer.expectRunning() else { return }
        let server = try PrivateSoundServer()
        // The child runs in a process of its own, where PULSE_SERVER reaches the plug-in; the
        // server is killed 3 s in, when the child's player has played (its start included).
        // The test's thread waits for the child meanwhile; the server is only killed over there.
        nonisolated(unsafe) let target = server
        let killer = Thread {
            Thread.sleep(forTimeInterval: 3)
            target.kill()
        }
        killer.start()
        let (status, output) = try runInFreshProcess(filter: "aLostALSAOutputIsARouteChange",
                                                     environment: [Self.childVariable: "1", "PULSE_SERVER": server.address])
        #expect(status == 0, "the child failed: \(output.suffix(3_000))")
        #expect(output.contains("child: playing"), "\(output.suffix(2_000))")
    }

    @Test("A call in another program does not interrupt a session on OpenAL Soft: its stream has no role, and plays on",
          .enabled(if: enabled, "no PulseAudio server answers `pactl info`; start one with scripts/pulseaudio.sh"))
    func openALPlaysOnThroughACall() throws {
        guard SoundServer.expectRunning() else { return }
        // module-role-cork corks and mutes the streams of its roles on the sink a phone stream
        // plays to, that sink's only (its `global` is off): the other tests' streams are not touched.
        let cork = try SoundServer.run("pactl", ["load-module", "module-role-cork"])
        try #require(cork.status == 0, "pactl load-module module-role-cork: \(cork.output)")
        defer { _ = try? SoundServer.run("pactl", ["unload-module", cork.output.trimmingCharacters(in: .whitespacesAndNewlines)]) }
        let sink = try PrivateNullSink()
        let recorder = try MonitorRecorder(source: sink.monitor)
        let (session, player, log) = try Self.playingSession(on: try Self.openAL(on: sink), seconds: 6)
        // Beside it, a native stream with the music role on the same sink: the call corks that one.
        let native = try PulseAudioDevice(sink: sink.name, configuration: Self.configuration, role: "music")
        let corked = Locked(false)
        native.setEventHandler { if case .corkRequested(true) = $0 { corked.withLock { $0 = true } } }
        try native.start(renderer: Silence())
        defer { native.stop() }
        Thread.sleep(forTimeInterval: 0.6)

        let call = try SoundServer.playPhoneCall(on: sink.name, seconds: 1)
        Thread.sleep(forTimeInterval: 0.6)
        let during = player.currentTime
        Thread.sleep(forTimeInterval: 0.2)
        #expect(player.isPlaying && player.currentTime > during, "OpenAL Soft plays on through the call")
        call.waitUntilExit()
        Thread.sleep(forTimeInterval: 0.3)
        let samples = try recorder.stop()
        #expect(corked.withLock { $0 }, "the call corked the music stream beside it: module-role-cork works on this sink")
        #expect(!log.events.contains { if case .interruption = $0 { true } else { false } }, "\(log.events)")

        // Spool's 1 kHz tone, against the call's 440 Hz: heard all through the call.
        let level = SoundServer.toneLevels(samples, frequency: 1_000, sampleRate: recorder.sampleRate)
        let call440 = SoundServer.toneLevels(samples, frequency: 440, sampleRate: recorder.sampleRate)
        let callHeard = call440.indices.filter { call440[$0] > 0.1 }
        try #require(callHeard.count > 50, "the recording holds no call (\(samples.count) frames)")
        let heard = callHeard.filter { level[$0] > 0.1 }
        print("OpenAL through a call: call heard in \(callHeard.count) windows of 10 ms, Spool's tone in \(heard.count) of them")
        #expect(Double(heard.count) >= 0.95 * Double(callHeard.count), "OpenAL's tone went quiet during the call")
        withExtendedLifetime(session) {}
    }
}

/// Renders silence: a stream that is there for the server's policies to see.
private final class Silence: AudioRenderer {
    func render(into buffer: UnsafeMutablePointer<Float>, frames: Int, timestamp: RenderTimestamp) {
        buffer.update(repeating: 0, count: frames * 2)
    }
}
