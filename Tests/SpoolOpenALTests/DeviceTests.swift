import Foundation
import SpoolCore
import SpoolOutput
import Synchronization
import Testing
@testable import SpoolOpenAL
@testable import SpoolBenchmarks
import SpoolTestSupport

@Suite("OpenAL devices")
struct DeviceTests {
    let stereo48 = try! AudioFormat(sampleRate: 48_000, channelCount: 2)

    @Test func aLoopbackDeviceReportsWhatItRuns() throws {
        let device = try makeLoopback(rate: 44_100, periodFrames: 441)
        #expect(device.format == (try AudioFormat(sampleRate: 44_100, channelCount: 2)))
        #expect(device.updateFrames == 441)
        #expect(device.refreshRate == 100)
        #expect(device.isConnected)
        #expect(device.outputLatency == 0)
        #expect(device.name == "loopback")
        _ = try device.render(frames: 1000)
        #expect(device.renderedFrames == 1000)
    }

    @Test func aLoopbackDeviceRendersToAWAVFile() throws {
        let device = try makeLoopback()
        let voice = try OpenALStreamingSource(device: device, format: stereo48)
        try voice.enqueue(try pcm([Float](repeating: 0.25, count: 9600)))
        try voice.start()
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("spool-openal-\(UUID()).wav").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(try device.render(seconds: 0.2, toWAV: path) == 9600)
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(data.count == 58 + 9600 * 8)  // 58-byte float header: fmt with cbSize, fact, data
        let first = data.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 58, as: Float.self) }
        let last = data.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 58 + 9599 * 8, as: Float.self) }
        #expect(first == 0.25)
        #expect(last == 0)
    }

    @Test func theNullDevicePlaysAtTheClocksPace() throws {
        // On a busy machine (two cores, the suite's other tests) the pump may refill a buffer
        // too late: that run is measured again once, saying why; a device that does not keep
        // pace fails both.
        if try !measureNullDevicePace(final: false) {
            print("OpenAL null device: the voice ran dry on a busy machine; measuring again")
            _ = try measureNullDevicePace(final: true)
        }
    }

    /// One measurement; with `final` false, returns false before asserting anything when the
    /// voice ran dry.
    private func measureNullDevicePace(final: Bool) throws -> Bool {
        let backend = try OpenALBackend(.null(OutputConfiguration(sampleRate: 48_000, periodFrames: 480, periodCount: 3)))
        let device = backend.device
        defer { device.close() }
        #expect(device.name == "null")
        #expect(device.periodCount == 3)
        let tone = try pcm(sine(frequency: 440, frames: 48_000, channels: 2))
        let voice = try #require(try backend.makeVoice(format: stereo48) as? OpenALStreamingSource)
        // Each buffer goes round again from the consumed handler; note which thread runs it.
        let threads = Locked<Set<UInt>>([])
        _ = voice.addBufferConsumedHandler { [weak voice] buffer in
            threads.withLock { _ = $0.insert(UInt(pthread_self())) }
            try? voice?.enqueue(buffer)
        }
        for i in 0..<3 { try voice.enqueue(try tone.slice(frames: (i * 2048)..<((i + 1) * 2048))) }
        let started = HostTime.now()
        try voice.start()
        // The latency, sampled while it plays: the backend's (the virtual buffer), the voice's
        // (OpenAL's figure for the source on top), and whether the voice's was reported.
        var latencies: [(device: Double, voice: Double, reported: Bool)] = []
        for _ in 0..<20 {
            Thread.sleep(forTimeInterval: 0.02)
            latencies.append((backend.outputLatency, voice.outputLatency, voice.isLatencyReported))
        }
        let played = voice.framesPlayed
        let elapsed = HostTime.seconds(from: started, to: HostTime.now())
        try voice.stop(immediately: true)
        if !final && voice.underrunCount > 0 { return false }
        // Played as fast as the virtual card takes audio: elapsed time plus what it holds ahead.
        let expected = elapsed * 48_000
        #expect(Double(played) > expected - 0.05 * 48_000, "played \(played) frames in \(elapsed) s")
        #expect(Double(played) < expected + 3 * 480 + 0.05 * 48_000, "played \(played) frames in \(elapsed) s")
        // The virtual card holds 2…3 periods after each render, never more than 3; a render
        // that comes late (a loaded machine) leaves less, so only the median is held to a
        // whole mixer update.
        let period = 480.0 / 48_000
        for (name, values) in [("device", latencies.map(\.device)), ("voice", latencies.map(\.voice))] {
            let sorted = values.sorted()
            #expect(sorted[sorted.count / 2] >= period, "\(name) latency median \(sorted[sorted.count / 2]) s, under one update")
            #expect(sorted.last! <= 3 * period + 0.001, "\(name) latency up to \(sorted.last!) s, over the 3 periods the card holds")
        }
        #expect(latencies.allSatisfy { $0.reported }, "the null device's latency is its clock's, always known")
        #expect(voice.underrunCount == 0)
        #expect(device.renderedFrames > Int(0.3 * 48_000))
        // On the device's handler thread: never on the pump, which refills every voice, nor
        // on the thread that renders (the null device's mixer).
        let handlerThread = device.handlers.threadID.load(ordering: .acquiring)
        let pumpThread = device.pump.threadID.load(ordering: .acquiring)
        let mixerThread = device.nullRenderThreadID
        #expect(threads.withLock { $0 } == [handlerThread])
        #expect(handlerThread != pumpThread && handlerThread != mixerThread && mixerThread != 0 && pumpThread != 0)
        return true
    }

    /// `start` and `enqueue` convert up to the lead at once; buffers shorter than the lead are
    /// converted to their end there, and are still handed back on the handler thread, as on the
    /// queue engine's callback thread, never on the thread that called.
    @Test func buffersConvertedByAControlCallAreHandedBackOnTheHandlerThread() throws {
        let backend = try OpenALBackend(.null(OutputConfiguration(sampleRate: 48_000, periodFrames: 480, periodCount: 3)))
        let device = backend.device
        defer { device.close() }
        let voice = try #require(try backend.makeVoice(format: stereo48) as? OpenALStreamingSource)
        let threads = Locked<[UInt]>([])
        _ = voice.addBufferConsumedHandler { _ in threads.withLock { $0.append(UInt(pthread_self())) } }
        let short = try pcm(sine(frequency: 440, frames: 128, channels: 2))
        for _ in 0..<24 { try voice.enqueue(short) }
        try voice.start()
        for _ in 0..<24 { try voice.enqueue(short) }
        let deadline = HostTime.now() + HostTime.nanoseconds(2)
        while threads.withLock({ $0.count }) < 48, HostTime.now() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        try voice.stop(immediately: true)
        let handlerThread = device.handlers.threadID.load(ordering: .acquiring)
        let seen = threads.withLock { $0 }
        #expect(seen.count == 48)
        #expect(Set(seen) == [handlerThread], "handed back on \(Set(seen).count) threads; the caller's: \(seen.contains(UInt(pthread_self())))")
    }

    @Test func aLostDeviceStopsItsVoicesReportsAndMakesWayForAnother() throws {
        let device = try makeLoopback()
        let events = Locked<[String]>([])
        device.setEventHandler { event in
            if case .deviceLost(let error) = event { events.withLock { $0.append("\(error.code)") } }
        }
        let voice = try OpenALStreamingSource(device: device, format: stereo48)
        let log = VoiceLog(voice)
        for _ in 0..<3 { try voice.enqueue(try pcm([Float](repeating: 0.5, count: 2000))) }
        try voice.start()
        _ = try device.render(frames: 256)
        // As if ALC_CONNECTED turned 0 (the sound server went away).
        device.forcedDisconnect.store(true, ordering: .relaxed)
        let out = try device.render(frames: 1024).samples
        #expect(out[512...].allSatisfy { $0 == 0 })
        #expect(events.withLock { $0 } == ["deviceLost"])
        #expect(!device.isConnected)
        #expect(!voice.isPlaying)
        #expect(log.count == 3)
        #expect(log.finishedCount == 1)
        expectError(.deviceLost) { try voice.enqueue(try pcm([0, 0])) }
        expectError(.deviceLost) { try device.render(frames: 10) }

        let replacement = try makeLoopback()
        let again = try OpenALStreamingSource(device: replacement, format: stereo48)
        try again.enqueue(try pcm([0.5, 0.5]))
        try again.start()
        #expect(try replacement.render(frames: 1).samples == [0.5, 0.5])
    }

    @Test func theConfigurationFileSaysWhatOpenALSoftReads() throws {
        let configuration = try OpenALConfiguration(OutputConfiguration(sampleRate: 48_000, periodFrames: 128, periodCount: 2))
        #expect(configuration.fileContents.contains("[general]"))
        #expect(configuration.fileContents.contains("frequency = 48000"))
        #expect(configuration.fileContents.contains("period_size = 128"))
        #expect(configuration.fileContents.contains("periods = 2"))
        #expect(configuration.fileContents.contains("channels = stereo"))
        #expect(configuration.drivers == ["pulse", "alsa"])
        #expect(!OpenALConfiguration().fileContents.contains("period_size"))
        #expect(!OpenALConfiguration().fileContents.contains("sources"))
        #expect(OpenALConfiguration(sources: 1_000).fileContents.contains("sources = 1000"))
        for bad in [0, -5, OpenALConfiguration.maximumSources + 1] {
            #expect {
                try OpenALConfiguration(sources: bad).validate()
            } throws: { ($0 as? AudioError)?.code == .invalidParameter }
        }
    }

    static let sourcesChildVariable = "SPOOL_TEST_OPENAL_SOURCES_CHILD"

    /// A configuration's `sources` reaches OpenAL Soft: in a process of its own (it reads its
    /// configuration once), a loopback device hands out 300 sources, all mixed; a device may
    /// not ask for more than the configuration gave.
    @Test func moreSourcesThanOpenALSoftsDefaultWhenTheConfigurationGivesThem() throws {
        if ProcessInfo.processInfo.environment[Self.sourcesChildVariable] != nil {
            try OpenALConfiguration(sources: 300).apply()
            #expect(OpenALDevice.sourceCapacity == 300)
            expectError(.invalidParameter) { _ = try makeLoopback(sourceLimit: 301) }
            let device = try makeLoopback(sourceLimit: 300)
            defer { device.close() }
            let level: Float = 1.0 / 1_024
            let voices = try (0..<300).map { _ in
                let voice = try OpenALStreamingSource(device: device, format: stereo48)
                try voice.enqueue(try pcm([Float](repeating: level, count: 4_096 * 2)))
                try voice.start()
                return voice
            }
            let mixed = try device.render(frames: 2_048).samples[(1_024 * 2)...]
            #expect(mixed.allSatisfy { abs($0 - 300 * level) < 1e-4 }, "mixed \(mixed.first ?? 0)")
            for voice in voices { voice.dispose() }
            print("SPOOL-SOURCES 300 mixed")
            return
        }
        #expect(OpenALConfiguration.current?.sources == nil || OpenALDevice.sourceCapacity > 256)
        let (status, output) = try runInFreshProcess(filter: "moreSourcesThanOpenALSoftsDefault",
                                                     environment: [Self.sourcesChildVariable: "1"])
        #expect(status == 0, "the child process failed:\n\(output.suffix(1500))")
        #expect(output.contains("SPOOL-SOURCES 300 mixed"), "\(output.suffix(800))")
    }

    /// The benchmark mixes what it says: every frame it times, and a mix whose level is that
    /// of its voices' sines (one per voice, 0.5 amplitude at volume 1/N, all at different
    /// frequencies, so the sum's RMS is 0.5 / √(2N)), at equal and converted rates.
    @Test(arguments: [0.0, 0.5, 1.0])
    func theMixBenchmarkMixesItsVoices(convertedShare: Double) throws {
        let voices = 8
        let captured = Locked<(rendered: [Float], timed: Int)>(([], 0))
        _ = try benchmarkOpenALMix(voices: voices, seconds: 0.25, rate: 48_000, periodFrames: 512,
                                   convertedShare: convertedShare) { rendered, timed in
            captured.withLock { $0 = (rendered, timed) }
        }
        let (rendered, timed) = captured.withLock { $0 }
        #expect(timed == 12_288, "0.25 s at 48 kHz in whole 512-frame periods")
        let expected = 0.5 / (2 * Double(voices)).squareRoot()
        for channel in 0..<2 {
            let values = stride(from: channel, to: rendered.count, by: 2).map { Double(rendered[$0]) }
            let rms = (values.reduce(0) { $0 + $1 * $1 } / Double(values.count)).squareRoot()
            #expect(abs(rms / expected - 1) < 0.05, "channel \(channel): RMS \(rms), the sines sum to \(expected)")
        }
    }
}
