import Foundation
import SoundServerTestSupport
import SpoolCore
@testable import SpoolOutput
import Testing
import SpoolBufferQueue
import SpoolTestSupport

/// The native PulseAudio device (libpulse's asynchronous API) on the real sound server: what
/// it plays, the buffer it is granted, its latency, and how it ends.
@Suite("PulseAudioDevice on a real sound server", .serialized, .disabled(if: SoundServer.underSanitizer, "real-time timing means nothing under a sanitizer's slow-down; the plain run checks it"))
struct PulseAudioSoundServerTests {
    // Outside CI a machine without a PulseAudio server skips these (reported as skipped); in CI
    // they run and fail, because CI must start one (scripts/pulseaudio.sh).
    static let enabled = SoundServer.isRunning || SoundServer.isCI

    static func configuration(_ periodFrames: Int, _ periodCount: Int) -> OutputConfiguration {
        OutputConfiguration(sampleRate: 48_000, channelCount: 2, periodFrames: periodFrames, periodCount: periodCount)
    }

    static func ms(_ seconds: Double) -> String { String(format: "%.1f", seconds * 1000) }

    @Test("A 1 kHz tone through the buffer queue reaches a null sink whole, when the device's latency said",
          .enabled(if: enabled, "no PulseAudio server answers `pactl info`; start one with scripts/pulseaudio.sh"),
          arguments: [(256, 2), (1024, 3)])
    func toneReachesTheNullSinkWhenTheLatencySaid(periodFrames: Int, periodCount: Int) throws {
        guard SoundServer.expectRunning() else { return }
        // The recorder starts 2 s ahead: the monitor drops leading silence after idling.
        let sink = try PrivateNullSink()
        let recorder = try MonitorRecorder(source: sink.monitor)
        let recordingFrom = HostTime.now()
        let device = try PulseAudioDevice(sink: sink.name, configuration: Self.configuration(periodFrames, periodCount))
        let backend = try BufferQueueBackend(device: device)
        // The latency a start waits behind is what is checked here, so the start is not
        // rewound below it (PulseAudioRewindTests checks that).
        backend.engine.startsBelowFloor = false
        let voice = try backend.makeVoice(format: stereo48)
        try voice.enqueue(try sine(1_000, frames: 48_000, format: stereo48))
        // An idle null sink asks a new stream for nothing for about a second, and the stream's
        // latency settles after that: start the tone 3 s into the recording.
        HostTime.sleep(until: recordingFrom + HostTime.nanoseconds(3))
        let queued = device.queuedFrames
        let startedAt = HostTime.now()
        try voice.start(atHostTime: nil)
        Thread.sleep(forTimeInterval: 1.5 + Double(queued) / 48_000)
        let samples = try recorder.stop()
        #expect(device.isRunning)

        let analysis = try #require(ToneAnalysis(samples: samples, sampleRate: recorder.sampleRate),
                                    "the recording (\(samples.count) frames) holds no tone")
        let period = Double(device.periodFrames) / 48_000
        let onset = recorder.hostTime(ofSample: Int((analysis.onsetSeconds * 48_000).rounded()))
        let expected = startedAt + UInt64(Double(queued) / 48_000 * 1e9)
        let offset = HostTime.seconds(from: expected, to: onset)
        print("pulse \(periodFrames)×\(periodCount): granted \(device.bufferAttributes); reported "
              + "\(device.periodFrames)×\(device.periodCount); queuedFrames at the start \(queued) "
              + "(\(Self.ms(Double(queued) / 48_000)) ms); tone \(analysis.frequency) Hz for \(analysis.durationSeconds) s, "
              + "\(analysis.dropouts.count) dropouts; heard \(Self.ms(offset)) ms after the reported latency "
              + "(period \(Self.ms(period)) ms); xruns \(device.xrunCount)")
        #expect(abs(analysis.frequency - 1_000) <= 10)
        #expect(abs(analysis.durationSeconds - 1.0) <= period + 0.005)
        #expect(analysis.dropouts.isEmpty, "near-silent 5 ms windows inside the tone at \(analysis.dropouts.prefix(5)) s")
        // The voice starts with the next period the server asks for, so up to a period after
        // the latency read at the call; the null sink hands its monitor a block a little
        // before it counts it played (half a period early at 1024×3).
        #expect(abs(offset) <= period + 0.002, "the tone was heard \(Self.ms(offset)) ms after the latency the device reported")
    }

    @Test("A device with an event handler is freed once released: the handler does not hold its stream",
          .enabled(if: enabled, "no PulseAudio server answers `pactl info`; start one with scripts/pulseaudio.sh"))
    func aDeviceWithAnEventHandlerIsFreed() throws {
        guard SoundServer.expectRunning() else { return }
        weak var released: PulseAudioDevice?
        weak var stream: PulseAudioStream?
        do {
            let device = try PulseAudioDevice(configuration: Self.configuration(256, 2))
            device.setEventHandler { _ in }
            try device.start(renderer: RecordingRenderer(channelCount: 2))
            device.stop()
            released = device
            stream = device.stream
        }
        #expect(released == nil, "the device outlived its last reference")
        #expect(stream == nil, "the device's stream outlived it")
    }

    @Test("The granted buffer is what the server shows for the stream, with its media.role",
          .enabled(if: enabled, "no PulseAudio server answers `pactl info`; start one with scripts/pulseaudio.sh"),
          arguments: [(128, 2), (256, 2), (1024, 3)])
    func grantedBufferIsWhatTheServerShows(periodFrames: Int, periodCount: Int) throws {
        guard SoundServer.expectRunning() else { return }
        let sink = try PrivateNullSink()
        for latency in PulseAudioStream.LatencyRequest.allCases {
            let other = try PulseAudioDevice(sink: sink.name, server: nil, configuration: Self.configuration(periodFrames, periodCount),
                                             latency: latency)
            print("pulse \(periodFrames)×\(periodCount) (asked: tlength \(periodFrames * periodCount), minreq \(periodFrames), "
                  + "prebuf \(periodFrames * (periodCount - 1))) with \(latency): granted \(other.bufferAttributes)")
        }
        let device = try PulseAudioDevice(sink: sink.name, configuration: Self.configuration(periodFrames, periodCount),
                                          role: "game", applicationName: "Spool tests")
        let renderer = RecordingRenderer(channelCount: 2)
        try device.start(renderer: renderer)
        defer { device.stop() }
        let granted = device.bufferAttributes
        #expect(device.periodFrames == granted.minimumRequest)
        #expect(device.periodCount == Int((Double(granted.targetLength) / Double(granted.minimumRequest)).rounded()))
        #expect(granted.minimumRequest > 0 && granted.targetLength >= granted.minimumRequest)
        #expect(granted.maxLength >= granted.targetLength)

        // Past the 2 s a new null sink renders ahead before it asks a stream for anything.
        Thread.sleep(forTimeInterval: 2.5)
        let input = try #require(try SinkInput.find(index: device.sinkInputIndex), "pactl lists no sink input #\(device.sinkInputIndex)")
        let queued = device.queuedFrames
        print("  pactl: sink input #\(device.sinkInputIndex) on \(input.sink): buffer latency \(input.bufferMicroseconds) µs, "
              + "sink latency \(input.sinkMicroseconds) µs, \(input.sampleSpecification); device latency "
              + "\(Self.ms(Double(queued) / 48_000)) ms")
        #expect(input.properties["media.role"] == "game")
        #expect(input.properties["application.name"] == "Spool tests")
        #expect(input.sampleSpecification.hasPrefix("float32le 2ch 48000Hz"))
        // pactl shows no tlength; what the stream's buffer holds never exceeds it, and the
        // server's latency for the stream (buffer and sink) is the device's, within a period.
        let tlength = Double(granted.targetLength) / 48_000, period = Double(granted.minimumRequest) / 48_000
        #expect(Double(input.bufferMicroseconds) / 1e6 <= tlength + 0.001,
                "pactl shows \(input.bufferMicroseconds) µs buffered, over the granted tlength of \(Self.ms(tlength)) ms")
        let serverLatency = Double(input.bufferMicroseconds + input.sinkMicroseconds) / 1e6
        #expect(abs(serverLatency - Double(queued) / 48_000) <= period + 0.005,
                "pactl shows \(Self.ms(serverLatency)) ms, the device \(Self.ms(Double(queued) / 48_000)) ms")
    }

    @Test("The render callback allocates nothing and its timestamps count the frames written",
          .enabled(if: enabled, "no PulseAudio server answers `pactl info`; start one with scripts/pulseaudio.sh"),
          arguments: [(256, 2), (1024, 3)])
    func renderCallbackAllocatesNothing(periodFrames: Int, periodCount: Int) throws {
        guard SoundServer.expectRunning() else { return }
        let sink = try PrivateNullSink()
        let device = try PulseAudioDevice(sink: sink.name, configuration: Self.configuration(periodFrames, periodCount))
        // 40 periods from the 60th: past the start, and over more than one of libpulse's timing
        // updates. A window in which another test added a sink to the server is dropped as one
        // with an underrun is: libpulse parses the new sink's description on this thread.
        let renderer = RecordingRenderer(channelCount: 2, countingAllocationsOver: AllocationWindow(60..<100) {
            device.xrunCount + device.sinkEventCount
        })
        try device.start(renderer: renderer)
        let deadline = HostTime.now() + HostTime.nanoseconds(6)
        repeat { Thread.sleep(forTimeInterval: 0.1) } while renderer.allocations == nil && HostTime.now() < deadline
        let stopCalledAt = HostTime.now()
        device.stop()
        let stopSeconds = HostTime.seconds(from: stopCalledAt, to: HostTime.now())
        let calls = renderer.recorded
        Thread.sleep(forTimeInterval: 0.1)
        let leads = calls.suffix(20).map { HostTime.seconds(from: $0.calledAt, to: $0.timestamp.hostTime) }
        print("pulse \(periodFrames)×\(periodCount): \(calls.count) periods of \(device.periodFrames); stop took "
              + "\(Self.ms(stopSeconds)) ms; render-to-heard lead (last 20) \(Self.ms(leads.min() ?? 0))…\(Self.ms(leads.max() ?? 0)) ms; "
              + "xruns \(device.xrunCount); allocations over 40 periods: \(renderer.allocations.map(String.init) ?? "not measured")")
        #expect(renderer.recorded.count == calls.count, "the renderer was called after stop() returned")
        #expect(!device.isRunning)
        #expect(stopSeconds < 0.2)
        #expect(calls.allSatisfy { $0.frames == device.periodFrames })
        #expect(calls.enumerated().allSatisfy { $1.timestamp.sampleTime == Int64($0 * device.periodFrames) })
        #expect(calls.allSatisfy { $0.timestamp.hostTime + 1_000_000 >= $0.calledAt })
        #expect(allocationCounterCounts(), "the allocation counter counts nothing in this build")
        let allocations = try #require(renderer.allocations, "no window of 40 render calls without an underrun closed")
        #expect(allocations == 0, "the main loop's thread allocated \(allocations) times over 40 periods")

        // A second start renders from frame 0 again.
        let again = RecordingRenderer(channelCount: 2)
        try device.start(renderer: again)
        Thread.sleep(forTimeInterval: 0.3)
        device.stop()
        #expect(again.recorded.first?.timestamp.sampleTime == 0)
        #expect(again.recorded.count >= 2)
    }

    @Test("An underrun is counted and reported off the main loop's thread, and play goes on",
          .enabled(if: enabled, "no PulseAudio server answers `pactl info`; start one with scripts/pulseaudio.sh"))
    func underrunIsReported() throws {
        guard SoundServer.expectRunning() else { return }
        let sink = try PrivateNullSink()
        // The stream holds about 11 ms; a 200 ms stall in the write callback runs it dry. The
        // 30th call comes after the 2 s a new null sink renders ahead.
        try expectAStallIsOneReportedUnderrun(on: PulseAudioDevice(sink: sink.name, configuration: Self.configuration(256, 2)))
    }

    @Test("A sink unloaded mid-play loses the device within 2 s, and stop() returns",
          .enabled(if: enabled, "no PulseAudio server answers `pactl info`; start one with scripts/pulseaudio.sh"))
    func unloadedSinkLosesTheDevice() throws {
        guard SoundServer.expectRunning() else { return }
        let sink = try PrivateNullSink()
        let device = try PulseAudioDevice(sink: sink.name, configuration: Self.configuration(256, 2))
        let log = EventLog()
        device.setEventHandler { log.record($0) }
        let renderer = RecordingRenderer(channelCount: 2)
        try device.start(renderer: renderer)
        Thread.sleep(forTimeInterval: 0.5)
        let unloadedAt = HostTime.now()
        sink.unload()
        let lost = log.wait(seconds: 2) { if case .deviceLost = $0 { true } else { false } }
        let seconds = HostTime.seconds(from: unloadedAt, to: HostTime.now())
        let stopCalledAt = HostTime.now()
        device.stop()
        let stopSeconds = HostTime.seconds(from: stopCalledAt, to: HostTime.now())
        print("sink unloaded: events \(log.events.map { "\($0.event)" }) after \(Self.ms(seconds)) ms; stop took \(Self.ms(stopSeconds)) ms")
        let event = try #require(lost, "no .deviceLost within 2 s of the sink's unloading")
        if case .deviceLost(let error) = event.event { #expect(error.code == .deviceLost) }
        #expect(!device.isRunning)
        #expect(stopSeconds < 0.5)
        expectError(.deviceLost) { try device.start(renderer: renderer) }
    }

    @Test("A device dropped while it plays tears its stream down",
          .enabled(if: enabled, "no PulseAudio server answers `pactl info`; start one with scripts/pulseaudio.sh"))
    func droppedDeviceTearsDown() throws {
        guard SoundServer.expectRunning() else { return }
        let sink = try PrivateNullSink()
        let renderer = RecordingRenderer(channelCount: 2)
        var index = -1
        do {
            let device = try PulseAudioDevice(sink: sink.name, configuration: Self.configuration(256, 2))
            device.setEventHandler { _ in }
            try device.start(renderer: renderer)
            index = device.sinkInputIndex
            Thread.sleep(forTimeInterval: 0.3)
            #expect(try SinkInput.find(index: index) != nil)
        }
        // deinit stopped the main loop, then disconnected and freed the stream and the context.
        let calls = renderer.recorded.count
        Thread.sleep(forTimeInterval: 0.3)
        #expect(renderer.recorded.count == calls, "the renderer was called after the device went")
        #expect(try SinkInput.find(index: index) == nil, "sink input #\(index) outlived its device")
    }

    @Test("No server at the address: .deviceUnavailable within 2 s",
          .enabled(if: enabled, "no PulseAudio server answers `pactl info`; start one with scripts/pulseaudio.sh"))
    func noServerIsUnavailable() {
        let startedAt = HostTime.now()
        expectError(.deviceUnavailable) {
            _ = try PulseAudioDevice(server: "unix:/nonexistent/spool-pulse", configuration: Self.configuration(256, 2))
        }
        let seconds = HostTime.seconds(from: startedAt, to: HostTime.now())
        print("no server: failed after \(Self.ms(seconds)) ms")
        #expect(seconds < 2.5)
    }
}
