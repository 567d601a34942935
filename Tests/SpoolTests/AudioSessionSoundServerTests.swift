import Foundation
import SoundServerTestSupport
import Spool
@testable import SpoolOutput
import SpoolTestSupport
import Testing

/// The audio session on a real sound server of the test's own (`PrivateSoundServer`: a null
/// sink and `module-role-cork`): a call in another program interrupts it, sinks come and go,
/// the server dies, and the buffer asked for is the one granted.
@Suite("AudioSession on a real sound server", .serialized,
       .disabled(if: SoundServer.underSanitizer, "real-time timing means nothing under a sanitizer's slow-down; the plain run checks it"))
struct AudioSessionSoundServerTests {
    static let enabled = SoundServer.isRunning || SoundServer.isCI
    static let configuration = OutputConfiguration(sampleRate: 48_000, channelCount: 2, periodFrames: 256, periodCount: 3)

    /// A session of its own group on a native device of `server` (on `sink`, or following the
    /// default), with a player of a 4 s tone in it, its events logged.
    struct Scene {
        let device: PulseAudioDevice
        let session: AudioSession
        let player: AudioPlayer
        let log = AudioSessionTests.EventLog()

        init(on server: PrivateSoundServer, sink: String? = nil, category: AudioSession.Category = .playback) throws {
            device = try PulseAudioDevice(sink: sink, server: server.address, configuration: AudioSessionSoundServerTests.configuration)
            let backend = try BufferQueueBackend(device: device)
            session = AudioSession(backend: backend, group: AudioSessionGroup())
            try session.setCategory(category)
            player = try AudioPlayer(buffer: try sine(1_000, frames: 4 * 48_000, format: stereo48, amplitude: 0.3), backend: backend)
            player.session = session
            let log = self.log
            session.setEventHandler { log.record($0) }
        }

        /// Waits up to 3 s for an event `matching`.
        func wait(for matching: (AudioSessionEvent) -> Bool) -> AudioSessionEvent? {
            let deadline = Date().addingTimeInterval(3)
            while Date() < deadline {
                if let event = log.events.first(where: matching) { return event }
                usleep(5_000)
            }
            return nil
        }
    }

    static func isRouteChange(_ reason: AudioSessionRouteChange.Reason) -> (AudioSessionEvent) -> Bool {
        { if case .routeChange(let change) = $0 { change.reason == reason } else { false } }
    }

    @Test("A phone call in another program interrupts a playback session; it resumes on request at the same frame",
          .enabled(if: enabled, "no PulseAudio server answers `pactl info`; start one with scripts/pulseaudio.sh"))
    func aCallInterruptsThePlayer() throws {
        guard SoundServer.expectRunning() else { return }
        let server = try PrivateSoundServer()
        let scene = try Scene(on: server)
        #expect(scene.device.role == "music", "playback plays as music, which module-role-cork corks for a call")
        try scene.player.play()
        // A new server's null sink asks a new stream for nothing for a second or two.
        let playing = Date().addingTimeInterval(6)
        while scene.player.currentTime < 0.6, Date() < playing { usleep(10_000) }
        let call = try server.playPhoneCall()
        defer { if call.isRunning { PrivateSoundServer.hangUp(call) } }
        #expect(scene.wait { $0 == .interruption(.began(.soundServer)) } != nil, "no interruption: \(scene.log.events)")
        #expect(scene.player.state == .paused, "the call paused the player")
        let held = scene.player.currentTime
        Thread.sleep(forTimeInterval: 0.3)
        #expect(scene.player.currentTime == held, "the paused player moved on")
        PrivateSoundServer.hangUp(call)
        #expect(scene.wait { $0 == .interruption(.ended(shouldResume: true)) } != nil, "no end: \(scene.log.events)")
        #expect(scene.player.state == .paused, "the program decides when to resume")
        try scene.player.play()
        #expect(abs(scene.player.currentTime - held) < 0.03, "resumed at \(scene.player.currentTime), held \(held)")
        Thread.sleep(forTimeInterval: 0.6)
        #expect(scene.player.currentTime > held + 0.2, "playing again: \(scene.player.currentTime) s, held \(held) s")
        #expect(held > 0.5, "the call came \(held) s into the tone")
    }

    @Test("A 1 s call that ends by itself: Spool's tone stops while it is heard, and resumes at the frame it stopped on (recorded)",
          .enabled(if: enabled, "no PulseAudio server answers `pactl info`; start one with scripts/pulseaudio.sh"))
    func aCallThatEndsByItselfIsHeardInstead() throws {
        guard SoundServer.expectRunning() else { return }
        let server = try PrivateSoundServer()
        let recorder = try MonitorRecorder(source: "null.monitor", server: server.address)
        // A 1 kHz tone whose level rises with time (0.05 + 0.06 a second): the level heard
        // says which frame is playing.
        let seconds = 8
        let tone = try PCMBuffer(format: stereo48, samples: (0..<(seconds * 48_000)).flatMap { frame -> [Float] in
            let t = Double(frame) / 48_000
            let sample = Float((0.05 + 0.06 * t) * sin(2 * Double.pi * 1_000 * t))
            return [sample, sample]
        })
        let device = try PulseAudioDevice(server: server.address, configuration: Self.configuration)
        let backend = try BufferQueueBackend(device: device)
        let session = AudioSession(backend: backend, group: AudioSessionGroup())
        try session.setCategory(.playback)
        let log = AudioSessionTests.EventLog()
        session.setEventHandler { log.record($0) }
        let player = try AudioPlayer(buffer: tone, backend: backend)
        player.session = session
        try player.play()
        let playing = Date().addingTimeInterval(6)
        while player.currentTime < 0.8, Date() < playing { usleep(10_000) }

        let call = try server.playPhoneCall(seconds: 1)
        let began = Date().addingTimeInterval(3)
        while !log.events.contains(.interruption(.began(.soundServer))), Date() < began { usleep(5_000) }
        #expect(log.events.contains(.interruption(.began(.soundServer))), "no interruption: \(log.events)")
        #expect(player.state == .paused)
        // The call ends by itself; the server then asks the stream to play again.
        call.waitUntilExit()
        let ended = Date().addingTimeInterval(3)
        while !log.events.contains(.interruption(.ended(shouldResume: true))), Date() < ended { usleep(5_000) }
        #expect(log.events.contains(.interruption(.ended(shouldResume: true))), "no end: \(log.events)")
        try player.play()
        Thread.sleep(forTimeInterval: 1)
        let samples = try recorder.stop()

        let level = SoundServer.toneLevels(samples, frequency: 1_000, sampleRate: recorder.sampleRate)
        let callLevel = SoundServer.toneLevels(samples, frequency: 440, sampleRate: recorder.sampleRate)
        let callWindows = callLevel.indices.filter { callLevel[$0] > 0.1 }
        try #require(callWindows.count >= 80, "the call was not heard: \(callWindows.count) windows of 10 ms")
        // The gap in Spool's tone: the longest run of windows without it after it began.
        let on = level.map { $0 > 0.02 }
        let first = try #require(on.firstIndex(of: true), "Spool's tone was never heard")
        var gap = (start: 0, end: -1), run = -1
        for index in first..<on.count {
            if !on[index] { if run < 0 { run = index } } else if run >= 0 {
                if index - run > gap.end - gap.start + 1 { gap = (run, index - 1) }
                run = -1
            }
        }
        try #require(gap.end > gap.start, "Spool's tone never stopped")
        let silentUnderCall = callWindows.filter { gap.start...gap.end ~= $0 }.count
        #expect(Double(silentUnderCall) >= 0.9 * Double(callWindows.count),
                "Spool's tone was silent under \(silentUnderCall) of the call's \(callWindows.count) windows")
        // Which frame is heard, from the level (0.05 + 0.06 t), carried to the edges of the
        // gap from three windows either side (the windows at an edge hold part of it): the
        // tone should go on after the gap from where it stopped. The server muted the stream
        // at the call and the session paused the player a few milliseconds later; what the
        // stream held is heard when the call ends, then the player resumes where it paused.
        func heard(_ window: Int) -> Double { (level[window] - 0.05) / 0.06 }
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        let stopped = median((3...5).map { heard(gap.start - $0) + Double($0) * 0.01 })
        let resumed = median((3...5).map { heard(gap.end + $0) - Double($0) * 0.01 })
        print("call from window \(callWindows.first!) to \(callWindows.last!), Spool silent \(gap.start)...\(gap.end): "
              + String(format: "the tone stopped at %.3f s and went on from %.3f s", stopped, resumed))
        #expect(abs(resumed - stopped) <= 0.025, "went on \(Int((resumed - stopped) * 1000)) ms of the tone away from where it stopped")
        #expect(stopped > 0.7, "the call came at \(stopped) s")
    }

    @Test("An ambient session plays on through a call: its role is not one the server corks",
          .enabled(if: enabled, "no PulseAudio server answers `pactl info`; start one with scripts/pulseaudio.sh"))
    func ambientPlaysThroughACall() throws {
        guard SoundServer.expectRunning() else { return }
        let server = try PrivateSoundServer()
        let scene = try Scene(on: server, category: .ambient)
        #expect(scene.device.role == "event")
        try scene.player.play()
        Thread.sleep(forTimeInterval: 0.3)
        let call = try server.playPhoneCall()
        Thread.sleep(forTimeInterval: 0.5)
        PrivateSoundServer.hangUp(call)
        #expect(scene.player.isPlaying)
        #expect(!scene.log.events.contains { if case .interruption = $0 { true } else { false } }, "\(scene.log.events)")
    }

    @Test("The sink in use unloaded: oldDeviceUnavailable, the player paused; a sink added and made the default: reported",
          .enabled(if: enabled, "no PulseAudio server answers `pactl info`; start one with scripts/pulseaudio.sh"))
    func sinksComeAndGo() throws {
        guard SoundServer.expectRunning() else { return }
        let server = try PrivateSoundServer()
        let loaded = try server.pactl("load-module", "module-null-sink", "sink_name=headphones")
        try #require(loaded.status == 0)
        let module = loaded.output.trimmingCharacters(in: .whitespacesAndNewlines)
        let scene = try Scene(on: server, sink: "headphones")
        let follower = try Scene(on: server)
        #expect(scene.session.currentRoute.sink == "headphones")
        try scene.player.play()
        try follower.player.play()
        Thread.sleep(forTimeInterval: 0.3)

        _ = try server.pactl("unload-module", module)
        let lost = scene.wait(for: Self.isRouteChange(.oldDeviceUnavailable))
        #expect(lost == .routeChange(AudioSessionRouteChange(reason: .oldDeviceUnavailable, device: "headphones",
                                                              previousRoute: .init(output: "pulse:headphones", sink: "headphones"))))
        #expect(scene.player.state == .paused, "a pulled output pauses its player")
        #expect(scene.log.events.filter(Self.isRouteChange(.oldDeviceUnavailable)).count == 1, "one change for the sink and its stream")
        #expect(follower.player.isPlaying, "a session on another sink plays on")

        _ = try server.pactl("load-module", "module-null-sink", "sink_name=speakers")
        let added = follower.wait(for: Self.isRouteChange(.newDeviceAvailable))
        if case .routeChange(let change) = added { #expect(change.device == "speakers") } else { Issue.record("no new device") }
        _ = try server.pactl("set-default-sink", "speakers")
        #expect(follower.wait(for: Self.isRouteChange(.override)) != nil, "no override: \(follower.log.events)")
        #expect(follower.session.currentRoute.sink == "speakers")
        #expect(follower.player.isPlaying, "the default switched: the player follows it and plays on")
    }

    @Test("The server killed mid-play: a route change, a paused player, no hang; restarted, the player plays again on request",
          .enabled(if: enabled, "no PulseAudio server answers `pactl info`; start one with scripts/pulseaudio.sh"))
    func theServerDiesAndComesBack() throws {
        guard SoundServer.expectRunning() else { return }
        let server = try PrivateSoundServer()
        let address = server.address
        // A session that opens its own output on the test's server, so it can open it again.
        let session = AudioSession(group: AudioSessionGroup()) { configuration, role in
            try BufferQueueBackend(device: PulseAudioDevice(server: address, configuration: configuration, role: role))
        }
        try session.setCategory(.playback)
        let log = AudioSessionTests.EventLog()
        session.setEventHandler { log.record($0) }
        let first = try session.backend()
        let player = try AudioPlayer(buffer: try sine(1_000, frames: 4 * 48_000, format: stereo48, amplitude: 0.3), backend: first)
        player.session = session
        try player.play()
        Thread.sleep(forTimeInterval: 0.3)

        server.kill()
        let deadline = Date().addingTimeInterval(3)
        while !log.events.contains(where: Self.isRouteChange(.oldDeviceUnavailable)), Date() < deadline { usleep(5_000) }
        #expect(log.events.contains(where: Self.isRouteChange(.oldDeviceUnavailable)), "no route change: \(log.events)")
        let start = Date()
        #expect(!player.isPlaying)
        #expect(Date().timeIntervalSince(start) < 0.5, "reading a player on a dead server took \(Date().timeIntervalSince(start)) s")

        #expect(log.events.contains(.mediaServicesWereLost), "\(log.events)")
        #expect(!log.events.contains(.mediaServicesWereReset))

        // The lost output watches for its server and tells the session when it answers again.
        try server.restart()
        let back = Date().addingTimeInterval(3)
        while !log.events.contains(.mediaServicesWereReset), Date() < back { usleep(5_000) }
        #expect(log.events.contains(.mediaServicesWereReset), "the session never heard the server return: \(log.events)")
        let returned = log.events.last(where: Self.isRouteChange(.newDeviceAvailable))
        if case .routeChange(let change) = returned { #expect(change.device == "null") } else {
            Issue.record("no newDeviceAvailable for the returned server: \(log.events)")
        }
        #expect(!player.isPlaying, "the program decides when to play again")
        try player.play()
        #expect(player.backend !== first, "the session opened its output again")
        let playing = Date().addingTimeInterval(6)
        while player.currentTime < 0.3, Date() < playing { usleep(10_000) }
        #expect(player.currentTime >= 0.3, "the player does not play on the restarted server: \(player.currentTime) s")
        #expect(session.currentRoute.output == "pulse")
    }

    @Test("The preferred rate and I/O buffer duration open the output; what it runs with is reported and measured",
          .enabled(if: enabled, "no PulseAudio server answers `pactl info`; start one with scripts/pulseaudio.sh"))
    func preferredBufferIsWhatTheDeviceGranted() throws {
        guard SoundServer.expectRunning() else { return }
        let server = try PrivateSoundServer()
        let address = server.address
        let session = AudioSession(group: AudioSessionGroup()) { configuration, role in
            try BufferQueueBackend(device: PulseAudioDevice(server: address, configuration: configuration, role: role))
        }
        try session.setPreferredSampleRate(44_100)
        try session.setPreferredIOBufferDuration(0.005)
        let backend = try session.backend()
        let granted = backend.outputPeriodFrames
        let device = try #require((backend as? BufferQueueBackend)?.engine.device as? PulseAudioDevice)
        #expect(session.sampleRate == 44_100)
        #expect(session.ioBufferDuration == Double(granted) / 44_100, "reported, not echoed")
        #expect(session.ioBufferDuration > 0.002 && session.ioBufferDuration < 0.012)
        #expect(session.preferredIOBufferDuration == 0.005)

        // While it plays, the output latency is the server's measure of the stream, which
        // pactl shows as the stream's buffer and the sink's latency.
        let player = try AudioPlayer(buffer: try sine(1_000, frames: 6 * 44_100, format: try AudioFormat(sampleRate: 44_100, channelCount: 2),
                                                      amplitude: 0.2), backend: backend)
        player.session = session
        try player.play()
        defer { try? player.stop() }
        // A new null sink asks a new stream for nothing for a second or two.
        Thread.sleep(forTimeInterval: 2.5)
        var differences: [Double] = [], reports: Set<Double> = []
        var shown = ""
        for _ in 0..<5 {
            let reported = session.outputLatency
            let input = try #require(try SinkInput.find(index: device.sinkInputIndex, server: address))
            let measured = Double(input.bufferMicroseconds + input.sinkMicroseconds) / 1e6
            differences.append(reported - measured)
            reports.insert(reported)
            shown += String(format: " %.1f/%.1f", reported * 1000, measured * 1000)
            Thread.sleep(forTimeInterval: 0.1)
        }
        print("session on \(session.currentRoute): asked 5.0 ms at 44100 Hz, runs \(session.ioBufferDuration * 1000) ms "
              + "(\(granted) frames) at \(session.sampleRate) Hz; output latency reported/pactl ms:\(shown)")
        // Each read moves within a period as the server takes and asks; their median agrees.
        let median = differences.sorted()[2]
        #expect(abs(median) <= session.ioBufferDuration + 0.002, "reported − measured: \(differences)")
        #expect(reports.count > 1, "the latency is read from the server as it moves, not the buffer asked for: \(reports)")
    }
}
