import Foundation
import SoundServerTestSupport
import SpoolBufferQueue
import SpoolCore
@testable import SpoolOutput
import SpoolTestSupport
import Testing

/// What the sound server tells a PulseAudio device and a `SoundServerMonitor`, on a server of
/// the test's own: cork requests from `module-role-cork`, sinks coming and going, the default
/// sink changing, and the server itself dying and coming back.
@Suite("Sound-server events on a private PulseAudio server", .serialized,
       .disabled(if: SoundServer.underSanitizer, "real-time timing means nothing under a sanitizer's slow-down; the plain run checks it"))
struct SoundServerEventTests {
    // Outside CI a machine without PulseAudio skips these (reported as skipped); in CI they
    // run and fail, because CI must install it.
    static let enabled = SoundServer.isRunning || SoundServer.isCI

    static let configuration = OutputConfiguration(sampleRate: 48_000, channelCount: 2, periodFrames: 256, periodCount: 2)

    static func ms(_ seconds: Double) -> String { String(format: "%.1f", seconds * 1000) }

    /// Whether `pactl` shows sink input `index` on `server` muted.
    static func isMuted(sinkInput index: Int, on server: PrivateSoundServer) throws -> Bool? {
        try SinkInput.find(index: index, server: server.address)?.muted
    }

    /// A device with `role` on `server`, playing from `renderer` for 0.2 s, its events logged.
    static func playingDevice(on server: PrivateSoundServer, role: String = "music",
                              renderer: any AudioRenderer = RecordingRenderer(channelCount: 2)) throws
        -> (device: PulseAudioDevice, log: EventLog) {
        let device = try PulseAudioDevice(server: server.address, configuration: configuration, role: role)
        let log = EventLog()
        device.setEventHandler { log.record($0) }
        try device.start(renderer: renderer)
        Thread.sleep(forTimeInterval: 0.2)
        return (device, log)
    }

    static func isCorkRequest(_ corked: Bool) -> (OutputDeviceEvent) -> Bool {
        { if case .corkRequested(corked) = $0 { true } else { false } }
    }

    @Test("A phone stream elsewhere asks a music device to cork, and to uncork once it ends, when the caller paused",
          .enabled(if: enabled, "no PulseAudio server answers `pactl info`; start one with scripts/pulseaudio.sh"))
    func corkRequestsArrive() throws {
        guard SoundServer.expectRunning() else { return }
        let server = try PrivateSoundServer()
        let renderer = StallingRenderer(stallAtCall: -1, stallSeconds: 0)
        let (device, log) = try Self.playingDevice(on: server, renderer: renderer)
        let callStartedAt = HostTime.now()
        let call = try server.playPhoneCall()
        defer { if call.isRunning { PrivateSoundServer.hangUp(call) } }
        let cork = try #require(log.wait(seconds: 1, for: Self.isCorkRequest(true)),
                                "no .corkRequested(true) within 1 s of the call")
        let corkSeconds = HostTime.seconds(from: callStartedAt, to: HostTime.now())
        // The device plays on: the server muted the stream, pausing is the caller's choice.
        #expect(device.isRunning)
        #expect(try Self.isMuted(sinkInput: device.sinkInputIndex, on: server) == true)
        #expect(cork.thread != renderer.renderThreadID)
        device.stop()
        PrivateSoundServer.hangUp(call)
        let callEndedAt = HostTime.now()
        let uncork = log.wait(seconds: 1, for: Self.isCorkRequest(false))
        let uncorkSeconds = HostTime.seconds(from: callEndedAt, to: HostTime.now())
        print("cork: request \(Self.ms(corkSeconds)) ms after the call started, the uncork \(Self.ms(uncorkSeconds)) ms after "
              + "it ended; events \(log.events.map { "\($0.event)" })")
        #expect(uncork != nil, "no .corkRequested(false) within 1 s of the call's end")
        #expect(try Self.isMuted(sinkInput: device.sinkInputIndex, on: server) == false)
    }

    @Test("A music device that plays through a call is muted by the server and unmuted after, with no uncork request",
          .enabled(if: enabled, "no PulseAudio server answers `pactl info`; start one with scripts/pulseaudio.sh"))
    func deviceThatPlaysOnIsOnlyUnmuted() throws {
        guard SoundServer.expectRunning() else { return }
        let server = try PrivateSoundServer()
        let (device, log) = try Self.playingDevice(on: server)
        defer { device.stop() }
        let call = try server.playPhoneCall()
        #expect(log.wait(seconds: 1, for: Self.isCorkRequest(true)) != nil, "no .corkRequested(true) within 1 s of the call")
        #expect(try Self.isMuted(sinkInput: device.sinkInputIndex, on: server) == true)
        PrivateSoundServer.hangUp(call)
        Thread.sleep(forTimeInterval: 0.3)
        print("played through the call: events \(log.events.map { "\($0.event)" })")
        #expect(log.events.filter { Self.isCorkRequest(false)($0.event) }.isEmpty)
        #expect(try Self.isMuted(sinkInput: device.sinkInputIndex, on: server) == false)
        #expect(device.isRunning)
    }

    @Test("A sink loaded, made the default and unloaded is reported to a device and to a monitor",
          .enabled(if: enabled, "no PulseAudio server answers `pactl info`; start one with scripts/pulseaudio.sh"))
    func sinkEventsAreReported() throws {
        guard SoundServer.expectRunning() else { return }
        let server = try PrivateSoundServer()
        let device = try PulseAudioDevice(server: server.address, configuration: Self.configuration)
        let monitor = try SoundServerMonitor(server: server.address)
        let deviceLog = EventLog(), monitorLog = EventLog()
        device.setEventHandler { deviceLog.record($0) }
        monitor.setEventHandler { monitorLog.record(.routeChanged($0)) }
        #expect(monitor.sinks == ["null"])
        #expect(monitor.defaultSink == "null")
        #expect(monitor.isConnected)

        func expectChange(_ expected: OutputRouteChange, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
            for (log, who) in [(deviceLog, "device"), (monitorLog, "monitor")] {
                let event = log.wait(seconds: 1) { if case .routeChanged(expected) = $0 { true } else { false } }
                let reported = log.events.map { "\($0.event)" }
                #expect(event != nil, "the \(who) reported no \(expected) within 1 s of \(what); it reported \(reported)",
                        sourceLocation: sourceLocation)
            }
        }
        let loaded = try server.pactl("load-module", "module-null-sink", "sink_name=spool_second")
        let module = loaded.output.trimmingCharacters(in: .whitespacesAndNewlines)
        try #require(loaded.status == 0)
        expectChange(OutputRouteChange(reason: .newDeviceAvailable, device: "spool_second", defaultDevice: "null"), "the load")
        #expect(monitor.sinks == ["null", "spool_second"])

        try #require(try server.pactl("set-default-sink", "spool_second").status == 0)
        expectChange(OutputRouteChange(reason: .defaultDeviceChanged, device: "spool_second", defaultDevice: "spool_second"),
                     "set-default-sink")
        #expect(monitor.defaultSink == "spool_second")

        try #require(try server.pactl("unload-module", module).status == 0)
        expectChange(OutputRouteChange(reason: .oldDeviceUnavailable, device: "spool_second", defaultDevice: "null"),
                     "the unload")
        expectChange(OutputRouteChange(reason: .defaultDeviceChanged, device: "null", defaultDevice: "null"), "the unload")
        #expect(monitor.sinks == ["null"])
        #expect(monitor.defaultSink == "null")
        print("sink events: device \(deviceLog.events.map { "\($0.event)" }); monitor \(monitorLog.events.map { "\($0.event)" })")
        // Each change once, in order, on both.
        for log in [deviceLog, monitorLog] {
            #expect(log.events.count == 4)
            #expect(log.events.allSatisfy { if case .routeChanged = $0.event { true } else { false } })
        }
    }

    @Test("A sink removed while the device plays is reported, and costs its main loop's thread no allocation",
          .enabled(if: enabled, "no PulseAudio server answers `pactl info`; start one with scripts/pulseaudio.sh"))
    func sinkRemovalAllocatesNothing() throws {
        guard SoundServer.expectRunning() else { return }
        let server = try PrivateSoundServer()
        let loaded = try server.pactl("load-module", "module-null-sink", "sink_name=spool_second")
        try #require(loaded.status == 0)
        let device = try PulseAudioDevice(server: server.address, configuration: Self.configuration)
        let log = EventLog()
        device.setEventHandler { log.record($0) }
        // 80 periods from the 40th (0.43 s at 256 frames), the sink unloaded at about the 70th.
        let renderer = RecordingRenderer(channelCount: 2,
                                         countingAllocationsOver: AllocationWindow(40..<120) { device.xrunCount })
        try device.start(renderer: renderer)
        let deadline = HostTime.now() + HostTime.nanoseconds(3)
        while renderer.recorded.count < 70 && HostTime.now() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        let eventsBefore = device.sinkEventCount
        try server.pactl("unload-module", loaded.output.trimmingCharacters(in: .whitespacesAndNewlines))
        let unloadedBy = renderer.recorded.count
        let removal = OutputRouteChange(reason: .oldDeviceUnavailable, device: "spool_second", defaultDevice: "null")
        let reported = log.wait(seconds: 1) { $0 == .routeChanged(removal) }
        while renderer.allocations == nil && HostTime.now() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        device.stop()
        print("sink removed by render call \(unloadedBy): \(device.sinkEventCount - eventsBefore) event(s), "
              + "allocations over calls 40..<120: \(renderer.allocations.map(String.init) ?? "not measured")")
        #expect(reported != nil, "no \(removal) within 1 s of the unload")
        #expect(unloadedBy < 120, "the unload came after the window")
        #expect(device.sinkEventCount > eventsBefore)
        #expect(allocationCounterCounts(), "the allocation counter counts nothing in this build")
        let allocations = try #require(renderer.allocations, "no window of 80 render calls without an underrun closed")
        #expect(allocations == 0, "the main loop's thread allocated \(allocations) times over the removal")
    }

    @Test("A killed server loses a playing device at once, and nothing of the device waits for it",
          .enabled(if: enabled, "no PulseAudio server answers `pactl info`; start one with scripts/pulseaudio.sh"))
    func killedServerLosesTheDevice() throws {
        guard SoundServer.expectRunning() else { return }
        let server = try PrivateSoundServer()
        let (playing, log) = try Self.playingDevice(on: server)
        var device: PulseAudioDevice? = consume playing

        let killedAt = HostTime.now()
        server.kill()
        let lost = log.wait(seconds: 1) { if case .deviceLost = $0 { true } else { false } }
        let lostSeconds = HostTime.seconds(from: killedAt, to: HostTime.now())
        let readAt = HostTime.now()
        #expect(device?.isRunning == false)
        #expect(device?.queuedFrames == 0)
        _ = device?.sinkInputIndex
        device?.stop()
        let readSeconds = HostTime.seconds(from: readAt, to: HostTime.now())
        let droppedAt = HostTime.now()
        device = nil
        let dropSeconds = HostTime.seconds(from: droppedAt, to: HostTime.now())
        print("server killed: device lost after \(Self.ms(lostSeconds)) ms, read and stopped in \(Self.ms(readSeconds)) ms, "
              + "dropped in \(Self.ms(dropSeconds)) ms; events \(log.events.map { "\($0.event)" })")
        let event = try #require(lost, "no .deviceLost within 1 s of the kill")
        if case .deviceLost(let error) = event.event { #expect(error.code == .deviceLost) }
        #expect(readSeconds < 0.1, "reading and stopping the lost device took \(Self.ms(readSeconds)) ms")
        #expect(dropSeconds < 0.1, "the lost device's deinit took \(Self.ms(dropSeconds)) ms")
    }

    @Test("A device whose server was killed says the server went, watches for it, and says when it is back",
          .enabled(if: enabled, "no PulseAudio server answers `pactl info`; start one with scripts/pulseaudio.sh"))
    func aLostDeviceReportsItsServersReturn() throws {
        guard SoundServer.expectRunning() else { return }
        let server = try PrivateSoundServer()
        let (device, log) = try Self.playingDevice(on: server)
        #expect(!device.isWatchingForServer)
        server.kill()
        let lost = log.wait(seconds: 1) { if case .deviceLost = $0 { true } else { false } }
        #expect(lost != nil, "no .deviceLost within 1 s of the kill")
        // The server's loss comes first, then the device's own.
        let kinds = log.events.map(\.event).filter { if case .xrun = $0 { false } else { true } }
        #expect(kinds.first.map { $0 == .routeChanged(OutputRouteChange(reason: .serverLost)) } == true, "\(kinds)")
        #expect(device.isWatchingForServer)
        Thread.sleep(forTimeInterval: 0.6)
        #expect(!log.events.contains { if case .routeChanged(let c) = $0.event { c.reason == .serverReturned } else { false } })

        try server.restart()
        let returned = log.wait(seconds: 2) {
            if case .routeChanged(let change) = $0 { change.reason == .serverReturned } else { false }
        }
        let change = try #require(returned, "no .serverReturned within 2 s of the restart: \(log.events.map { "\($0.event)" })")
        #expect(change.event == .routeChanged(OutputRouteChange(reason: .serverReturned, defaultDevice: "null")))
        #expect(!device.isRunning, "the device stays lost: its stream is gone")
        let settled = Date().addingTimeInterval(1)
        while device.isWatchingForServer, Date() < settled { usleep(5_000) }
        #expect(!device.isWatchingForServer, "the watch ends once the server is back")
        let returns = log.events.filter { if case .routeChanged(let c) = $0.event { c.reason == .serverReturned } else { false } }
        #expect(returns.count == 1)
    }

    @Test("A sink unloaded under a device is not taken for the server going",
          .enabled(if: enabled, "no PulseAudio server answers `pactl info`; start one with scripts/pulseaudio.sh"))
    func aLostSinkIsNotALostServer() throws {
        guard SoundServer.expectRunning() else { return }
        let server = try PrivateSoundServer()
        let loaded = try server.pactl("load-module", "module-null-sink", "sink_name=headphones")
        try #require(loaded.status == 0)
        let device = try PulseAudioDevice(sink: "headphones", server: server.address, configuration: Self.configuration)
        let log = EventLog()
        device.setEventHandler { log.record($0) }
        try device.start(renderer: RecordingRenderer(channelCount: 2))
        Thread.sleep(forTimeInterval: 0.3)
        _ = try server.pactl("unload-module", loaded.output.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(log.wait(seconds: 1) { if case .deviceLost = $0 { true } else { false } } != nil)
        Thread.sleep(forTimeInterval: 0.2)
        #expect(!log.events.contains { if case .routeChanged(let c) = $0.event { c.reason == .serverLost } else { false } })
        #expect(!device.isWatchingForServer)
    }

    @Test("A monitor reports a killed server lost, tries again every 250 ms, and back after a restart, where a device plays",
          .enabled(if: enabled, "no PulseAudio server answers `pactl info`; start one with scripts/pulseaudio.sh"))
    func monitorFollowsTheServerAway() throws {
        guard SoundServer.expectRunning() else { return }
        let server = try PrivateSoundServer()
        var monitor: SoundServerMonitor? = try SoundServerMonitor(server: server.address)
        let log = EventLog()
        monitor?.setEventHandler { log.record(.routeChanged($0)) }
        let lost = OutputDeviceEvent.routeChanged(OutputRouteChange(reason: .serverLost))

        let killedAt = HostTime.now()
        server.kill()
        #expect(log.wait(seconds: 1) { $0 == lost } != nil, "the monitor reported no .serverLost within 1 s of the kill")
        let lostSeconds = HostTime.seconds(from: killedAt, to: HostTime.now())
        #expect(monitor?.isConnected == false)
        #expect(monitor?.sinks == [])
        #expect(monitor?.defaultSink == nil)
        HostTime.sleep(until: killedAt + HostTime.nanoseconds(0.6))
        let attempts = monitor?.connectionAttempts ?? 0
        #expect((2...4).contains(attempts), "\(attempts) connections tried in 0.6 s, the first included")

        let restartedAt = HostTime.now()
        try server.restart()
        let returned = log.wait(seconds: 2) {
            if case .routeChanged(let change) = $0 { change.reason == .serverReturned } else { false }
        }
        let returnSeconds = HostTime.seconds(from: restartedAt, to: HostTime.now())
        let change = try #require(returned, "the monitor reported no .serverReturned within 2 s of the restart")
        #expect(change.event == .routeChanged(OutputRouteChange(reason: .serverReturned, defaultDevice: "null")))
        #expect(monitor?.isConnected == true)
        #expect(monitor?.sinks == ["null"])
        #expect(monitor?.defaultSink == "null")
        print("server killed: the monitor lost it after \(Self.ms(lostSeconds)) ms, tried \(attempts) connections in 0.6 s, "
              + "had it back \(Self.ms(returnSeconds)) ms after the restart; events \(log.events.map { "\($0.event)" })")

        // A new device plays a tone the restarted server's null sink really outputs. The
        // recorder goes before the server: libpulse-simple waits forever in pa_simple_free for
        // a stream whose server died while it held a block of the server's memory.
        do {
            let recorder = try MonitorRecorder(source: "null.monitor", server: server.address)
            let recordingFrom = HostTime.now()
            let device = try PulseAudioDevice(server: server.address, configuration: Self.configuration)
            let backend = try BufferQueueBackend(device: device)
            let voice = try backend.makeVoice(format: stereo48)
            try voice.enqueue(try sine(1_000, frames: 14_400, format: stereo48))
            try voice.start(atHostTime: nil)
            // A new null sink renders 2 s ahead before anything plays, and its monitor hands a
            // recorder nothing until then (the silence dropped); what played meanwhile follows.
            HostTime.sleep(until: recordingFrom + HostTime.nanoseconds(2.6))
            let samples = try recorder.stop()
            let analysis = try #require(ToneAnalysis(samples: samples, sampleRate: recorder.sampleRate),
                                        "the recording (\(samples.count) frames) holds no tone")
            print("  after the restart a new device's tone: \(analysis.frequency) Hz for \(analysis.durationSeconds) s")
            #expect(abs(analysis.frequency - 1_000) <= 10)
            #expect(abs(analysis.durationSeconds - 0.3) <= Double(device.periodFrames) / 48_000 + 0.005)
        }

        // A monitor dropped while its server is away returns at once.
        server.kill()
        #expect(log.wait(seconds: 1) { $0 == lost && log.events.count == 3 } != nil, "no second .serverLost")
        let droppedAt = HostTime.now()
        monitor = nil
        let dropSeconds = HostTime.seconds(from: droppedAt, to: HostTime.now())
        #expect(dropSeconds < 0.1, "the monitor's deinit took \(Self.ms(dropSeconds)) ms")
        #expect(log.events.count == 3)
    }

    @Test("No server at the address: the monitor throws .deviceUnavailable at once",
          .enabled(if: enabled, "no PulseAudio server answers `pactl info`; start one with scripts/pulseaudio.sh"))
    func monitorWithoutServerIsUnavailable() {
        let startedAt = HostTime.now()
        expectError(.deviceUnavailable) { _ = try SoundServerMonitor(server: "unix:/nonexistent/spool-pulse") }
        #expect(HostTime.seconds(from: startedAt, to: HostTime.now()) < 0.5)
    }
}

extension OutputDeviceEvent {
    /// Events compared by what they say, a lost device's error by its code.
    static func == (lhs: OutputDeviceEvent, rhs: OutputDeviceEvent) -> Bool {
        switch (lhs, rhs) {
        case (.xrun(let a), .xrun(let b)): a == b
        case (.deviceLost(let a), .deviceLost(let b)): a.code == b.code
        case (.corkRequested(let a), .corkRequested(let b)): a == b
        case (.routeChanged(let a), .routeChanged(let b)): a == b
        default: false
        }
    }
}
