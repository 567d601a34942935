import Foundation
import Spool

/// `spool bench player`: what `AudioPlayer` costs over a bare voice on the same back-end.
///
/// - **start**: `play()` on a prepared player → its first frame leaving the device, against
///   `start()` on a bare voice with the same buffers queued, interleaved start by start on one
///   null device per back-end. Both are timed alike: the call's host time, then the moment the
///   voice first reports frames played, less what the output still holds ahead of the speaker.
///   The null device's clock is Spool's model, so the figures are `modelled`.
/// - **cpu**: process CPU time per second of output, one player rendered offline: plain
///   playback, time-stretch (pitch kept) and varispeed at `--rate` (default 1.5).
/// - **memory**: the resident set while a player plays `--file` (or a synthesised 8-minute
///   mono 22.05 kHz WAV) offline from start to end: its growth over the player's start.
enum PlayerBench {
    struct StartRow: Codable {
        let backend: String
        let subject: String
        let starts: Int
        let startP50Ms: Double
        let startP99Ms: Double
        let timedOut: Int
        let periodFrames: Int
        let periods: Int
        let timing: String
    }

    struct CPURow: Codable {
        let backend: String
        let mode: String
        let rate: Double
        let outputSeconds: Double
        let cpuSeconds: Double
        /// Percent of one core the player costs in real-time playback.
        let cpuPercent: Double
        let realTimeFactor: Double
        var timing = "observed"
    }

    struct MemoryRow: Codable {
        let backend: String
        let file: String
        let seconds: Double
        let rssBeforeKiB: Int
        let rssPeakKiB: Int
        let growthKiB: Int
        var timing = "observed"
    }

    struct Report: Codable {
        let start: [StartRow]
        let cpu: [CPURow]
        let memory: [MemoryRow]
    }

    static func run(_ words: [String]) throws {
        guard let bench = try BenchInvocation(
            words, valued: ["starts", "buffer-frames", "buffers", "rate", "seconds", "file", "backends"]
        ) else { return }
        let args = bench.arguments
        let starts = try args.int("starts", in: 1...10_000) ?? 200
        let periodFrames = try args.int("buffer-frames", in: 64...8192) ?? 256
        let periods = try args.int("buffers", in: 2...16) ?? 3
        let rate = try args.double("rate", in: 0.5...2) ?? 1.5
        let seconds = try args.double("seconds", in: 1...600) ?? 20
        let backends = try bench.backends(allowed: ["queue", "openal"], defaults: ["queue", "openal"])

        var startRows: [StartRow] = []
        for backend in backends {
            startRows += try measureStarts(backend, count: starts, periodFrames: periodFrames, periods: periods)
        }
        print("play() → first frame leaving the null device, \(starts) starts each, interleaved; 48 kHz, "
              + "\(periodFrames) × \(periods) frames; modelled (the null device's clock)")
        print(BenchTable.render(["backend", "subject", "p50 ms", "p99 ms", "timed out"], startRows.map {
            [$0.backend, $0.subject, String(format: "%.3f", $0.startP50Ms), String(format: "%.3f", $0.startP99Ms), "\($0.timedOut)"]
        }))
        for backend in backends {
            let rows = startRows.filter { $0.backend == backend }
            if let bare = rows.first(where: { $0.subject == "voice" }), let player = rows.first(where: { $0.subject == "player" }) {
                print("\(backend): the player adds " + String(format: "%+.3f ms at p50, %+.3f ms at p99",
                    player.startP50Ms - bare.startP50Ms, player.startP99Ms - bare.startP99Ms))
            }
        }

        var cpuRows: [CPURow] = []
        for backend in backends {
            for (mode, r) in [("plain", 1.0), ("time-stretch", rate), ("varispeed", rate)] {
                cpuRows.append(try measureCPU(backend, mode: mode, rate: r, seconds: seconds))
            }
        }
        print("\nCPU of one player rendered offline: \(String(format: "%g", seconds)) s of 44.1 kHz stereo into "
              + "48 kHz stereo; process CPU time per second of output; observed")
        print(BenchTable.render(["backend", "mode", "rate", "cpu ms", "% of a core", "× real time", "× plain"], cpuRows.map { r in
            let plain = cpuRows.first { $0.backend == r.backend && $0.mode == "plain" }
            return [r.backend, r.mode, String(format: "%.2f", r.rate), String(format: "%.1f", r.cpuSeconds * 1000),
                    String(format: "%.3f", r.cpuPercent), String(format: "%.0f", r.realTimeFactor),
                    plain.map { String(format: "%.2f", r.cpuPercent / $0.cpuPercent) } ?? "—"]
        }))

        var memoryRows: [MemoryRow] = []
        let (file, temporary) = try memoryFile(args.string("file"))
        defer { if temporary { try? FileManager.default.removeItem(atPath: file) } }
        for backend in backends { memoryRows.append(try measureMemory(backend, file: file)) }
        print("\nresident set while a player plays \((file as NSString).lastPathComponent) offline, start to end; observed")
        print(BenchTable.render(["backend", "audio s", "RSS before KiB", "peak KiB", "growth KiB"], memoryRows.map {
            [$0.backend, String(format: "%.0f", $0.seconds), "\($0.rssBeforeKiB)", "\($0.rssPeakKiB)", "\($0.growthKiB)"]
        }))
        try bench.writeReport(Report(start: startRows, cpu: cpuRows, memory: memoryRows))
    }

    // MARK: Start latency

    private static func measureStarts(_ name: String, count: Int, periodFrames: Int, periods: Int) throws -> [StartRow] {
        let configuration = OutputConfiguration(sampleRate: 48_000, channelCount: 2, periodFrames: periodFrames, periodCount: periods)
        let backend: any PlaybackBackend = name == "queue"
            ? try BufferQueueBackend(device: NullDevice(configuration: configuration))
            : try OpenALBackend(.null(configuration))
        let format = try AudioFormat(sampleRate: 48_000, channelCount: 2)
        let tone = try PCMBuffer(format: format, samples: MixBench.toneSamples(frames: 4096, rate: 48_000, frequency: 440))
        let voice = try backend.makeVoice(format: format)
        let player = try AudioPlayer(buffer: tone, backend: backend)
        var random = SplitMix(seed: 11)
        var voiceTimes: [Double] = [], playerTimes: [Double] = []
        var voiceTimeouts = 0, playerTimeouts = 0
        let period = Double(periodFrames) / 48_000
        Thread.sleep(forTimeInterval: 0.2)
        for _ in 0..<count {
            // The bare voice: buffers queued, then started.
            try voice.enqueue(tone)
            Thread.sleep(forTimeInterval: period * random.nextUnit())
            var t0 = HostTime.now()
            try voice.start()
            if let heard = firstFrameHeard(since: t0, rate: 48_000, played: { voice.framesPlayed }, latency: { voice.outputLatency }) {
                voiceTimes.append(heard)
            } else {
                voiceTimeouts += 1
            }
            try voice.stop(immediately: true)
            waitQuiet { !voice.isPlaying }

            // The player: prepared (its first buffers queued), then played.
            try player.prepareToPlay()
            Thread.sleep(forTimeInterval: period * random.nextUnit())
            t0 = HostTime.now()
            try player.play()
            if let heard = firstFrameHeard(since: t0, rate: 48_000, played: { player.currentFrame }, latency: { player.outputLatency }) {
                playerTimes.append(heard)
            } else {
                playerTimeouts += 1
            }
            try player.stop()
            try player.setCurrentTime(0)
            waitQuiet { !player.isPlaying }
        }
        voice.dispose()
        func row(_ subject: String, _ times: [Double], _ timedOut: Int) -> StartRow {
            StartRow(backend: name, subject: subject, starts: times.count, startP50Ms: percentile(times, 50) * 1000,
                     startP99Ms: percentile(times, 99) * 1000, timedOut: timedOut, periodFrames: periodFrames,
                     periods: periods, timing: "modelled")
        }
        return [row("voice", voiceTimes, voiceTimeouts), row("player", playerTimes, playerTimeouts)]
    }

    private static func waitQuiet(_ done: () -> Bool) {
        let deadline = HostTime.now() + HostTime.nanoseconds(0.5)
        while !done() && HostTime.now() < deadline { usleep(200) }
    }

    // MARK: CPU

    /// A back-end on a device rendered on demand, and its renderer.
    private static func offline(_ name: String, rate: Double = 48_000) throws -> (any PlaybackBackend, any OfflineRendering) {
        try OfflineBackend.open(name, OutputConfiguration(sampleRate: rate, channelCount: 2, periodFrames: 1024, periodCount: 2))
    }

    private static func measureCPU(_ name: String, mode: String, rate: Double, seconds: Double) throws -> CPURow {
        let (backend, renderer) = try offline(name)
        let format = try AudioFormat(sampleRate: 44_100, channelCount: 2)
        let frames = Int(seconds * 44_100)
        var samples = [Float](repeating: 0, count: frames * 2)
        for i in 0..<frames {
            let t = Double(i) / 44_100
            samples[i * 2] = Float(0.3 * sin(2 * .pi * 440 * t) + 0.2 * sin(2 * .pi * 1_250 * t))
            samples[i * 2 + 1] = Float(0.3 * sin(2 * .pi * 660 * t) + 0.2 * sin(2 * .pi * 1_500 * t))
        }
        let player = try AudioPlayer(buffer: PCMBuffer(format: format, samples: samples), backend: backend)
        if mode != "plain" {
            try player.setRateMode(mode == "varispeed" ? .varispeed : .timeStretch)
            try player.setEnableRate(true)
            try player.setRate(Float(rate))
        }
        try player.prepareToPlay()
        let chunk = 4096
        let out = UnsafeMutableBufferPointer<Float>.allocate(capacity: chunk * 2)
        defer { out.deallocate() }
        let cpu0 = processCPUSeconds(), wall0 = HostTime.seconds(from: 0, to: HostTime.now())
        try player.play()
        var rendered = 0
        let limit = Int(Double(frames) * 48_000 / 44_100 / rate * 1.2) + 48_000
        while player.isPlaying && rendered < limit {
            try renderer.render(frames: chunk, into: out)
            rendered += chunk
        }
        let cpu = processCPUSeconds() - cpu0, wall = HostTime.seconds(from: 0, to: HostTime.now()) - wall0
        let outputSeconds = Double(rendered) / 48_000
        return CPURow(backend: name, mode: mode, rate: rate, outputSeconds: outputSeconds, cpuSeconds: cpu,
                      cpuPercent: cpu / outputSeconds * 100, realTimeFactor: outputSeconds / wall)
    }

    /// User and system CPU time of the whole process (every thread: the render loop and the
    /// player's read-ahead).
    static func processCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6
    }

    // MARK: Memory

    private static func memoryFile(_ given: String?) throws -> (String, Bool) {
        if let given { return (given, false) }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("spool-bench-8min-\(getpid()).wav").path
        let format = try AudioFormat(sampleRate: 22_050, channelCount: 1)
        let writer = try WAVFileWriter(path: path, format: format)
        let block = (0..<22_050).map { Float(0.3 * sin(2 * Double.pi * 440 * Double($0) / 22_050)) }
        let second = try PCMBuffer(format: format, samples: block)
        for _ in 0..<480 { try writer.write(second) }
        try writer.finish()
        return (path, true)
    }

    private static func measureMemory(_ name: String, file: String) throws -> MemoryRow {
        let (backend, renderer) = try offline(name, rate: 48_000)
        let player = try AudioPlayer(contentsOfFile: file, backend: backend)
        let chunk = 8192
        let out = UnsafeMutableBufferPointer<Float>.allocate(capacity: chunk * 2)
        defer { out.deallocate() }
        try player.play()
        // A few chunks in, so the voice, the converter and the read-ahead hold what they keep.
        for _ in 0..<8 { try renderer.render(frames: chunk, into: out) }
        let before = residentKiB()
        var peak = before
        var rendered = 0
        let limit = Int(player.duration * 48_000 * 1.1) + 48_000
        while player.isPlaying && rendered < limit {
            try renderer.render(frames: chunk, into: out)
            rendered += chunk
            if rendered % (chunk * 16) == 0 { peak = max(peak, residentKiB()) }
        }
        peak = max(peak, residentKiB())
        return MemoryRow(backend: name, file: file, seconds: player.duration, rssBeforeKiB: before, rssPeakKiB: peak,
                         growthKiB: peak - before)
    }

    /// `VmRSS` of this process, in KiB.
    static func residentKiB() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
        }
        return 0
    }
}
