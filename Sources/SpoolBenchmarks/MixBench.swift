import Foundation
import Spool
import SpoolResampling

/// `spool bench mix --voices N [--seconds S] [--converted SHARE] [--quality LEVEL]`: the
/// buffer-queue engine mixing N voices offline at each resampling quality, `--converted` of
/// them needing rate conversion (44.1 → 48 kHz); Spool's OpenAL back-end mixing the same
/// voices; and OpenAL Soft converting and mixing them by itself on plain sources with its
/// resampler matching each level (linear, the 11th- and 23rd-order sincs), all in one run.
/// `--limiter` adds the queue engine with its output limiter on (`queue+limiter`: the same mix,
/// below −1 dBFS, where the limiter only compares), and, limiter off and on, the same voices
/// four times as loud (`queue-loud`, `queue-loud+limiter`: the mix's peaks pass full scale and
/// go through the knee).
enum MixBench {

    /// One configuration's figures: medians over `runs`, with the fastest and slowest beside them.
    struct Row: Codable {
        let backend: String
        /// The resampling level (`fast`, `balanced`, `high`): Spool's, or the one OpenAL Soft's
        /// resampler is matched with.
        let quality: String
        /// The converter at playback rate 1, or OpenAL Soft's resampler.
        let resampler: String
        let voices: Int
        /// The share of voices at 44.1 kHz, converted to the 48 kHz device rate.
        let convertedShare: Double
        let audioSeconds: Double
        let runs: Int
        let wallSeconds: Double
        let cpuSeconds: Double
        /// Seconds of audio mixed per second of wall time (median), and its spread.
        let realTimeFactor: Double
        let realTimeFactorMin: Double
        let realTimeFactorMax: Double
        /// Percent of one core each voice costs in real-time playback.
        let cpuPercentPerVoice: Double
        /// Observed: wall and thread CPU time of the render loop.
        var kind = "observed"
    }

    /// Wall and CPU seconds of one run.
    struct Run: Codable {
        let wall: Double
        let cpu: Double
    }

    /// OpenAL Soft's resampler matched with each level.
    static let peerResampler: [ResamplingQuality: String] = [.fast: "linear", .balanced: "23rd", .high: "23rd"]

    static func run(_ words: [String]) throws {
        guard let bench = try BenchInvocation(
            words, valued: ["voices", "seconds", "period", "converted", "runs", "quality", "backends", "chart"], switches: ["limiter"]
        ) else { return }
        let args = bench.arguments
        let voices = try args.int("voices", in: 1...256) ?? 16
        let seconds = try args.double("seconds", in: 0.1...600) ?? 10
        let period = try args.int("period", in: 64...8192) ?? 512
        let share = try args.double("converted", in: 0...1) ?? 0.5
        let runs = try args.int("runs", in: 1...100) ?? 5
        let levels = try bench.qualities()
        var backends = try bench.backends(allowed: ["queue", "openal", "openal-soft"], defaults: ["queue", "openal", "openal-soft"])
        if args.has("limiter") {
            let after = (backends.firstIndex(of: "queue") ?? -1) + 1
            backends.insert(contentsOf: ["queue+limiter", "queue-loud", "queue-loud+limiter"], at: after)
        }
        var rows: [Row] = []
        for quality in levels {
            let converter = "\(VoiceResampler.fixedKind(quality))"
            let resampler = try OpenALSoftPeer.resampler(named: peerResampler[quality] ?? "linear")
            func runOnce(_ backend: String) throws -> Run {
                switch backend {
                case "queue", "queue+limiter", "queue-loud", "queue-loud+limiter":
                    return try queueEngine(voices: voices, seconds: seconds, periodFrames: period, convertedShare: share,
                                           quality: quality, limiter: backend.hasSuffix("+limiter"),
                                           loudness: backend.hasPrefix("queue-loud") ? 4 : 1)
                case "openal":
                    let (wall, cpu) = try benchmarkOpenALMix(voices: voices, seconds: seconds, rate: 48_000, periodFrames: period,
                                                             convertedShare: share, quality: quality)
                    return Run(wall: wall, cpu: cpu)
                default:
                    let (wall, cpu) = try OpenALSoftPeer.benchmarkMix(voices: voices, seconds: seconds, deviceRate: 48_000,
                                                                      sourceRate: 44_100, periodFrames: period,
                                                                      convertedShare: share, resampler: resampler)
                    return Run(wall: wall, cpu: cpu)
                }
            }
            // The sides alternate run by run, the one that goes first changing every round, so a
            // disturbance of the machine hits every side alike.
            var runsOf: [String: [Run]] = [:]
            for round in 0..<runs {
                let shift = round % backends.count
                for backend in backends[shift...] + backends[..<shift] {
                    runsOf[backend, default: []].append(try runOnce(backend))
                }
            }
            for backend in backends {
                let name = backend == "openal-soft" ? resampler.description : converter
                rows.append(row(backend, quality, name, voices: voices, share: share, seconds: seconds,
                                runs: runsOf[backend] ?? []))
            }
        }
        let converted = Int((Double(voices) * share).rounded(.up))
        print("\(voices) voices (\(converted) at 44.1 kHz, converted), \(String(format: "%g", seconds)) s at 48 kHz stereo, "
              + "\(period)-frame periods; median of \(runs) runs (spread: slowest–fastest × real time); observed")
        print("queue: the buffer-queue engine; openal: Spool's OpenAL back-end (it converts with the queue's converters); "
              + "openal-soft: OpenAL Soft converting by itself on plain sources, its resampler matched with the level")
        if backends.contains("queue+limiter") {
            print("queue+limiter: the same mix with the output limiter on (the mix stays below −1 dBFS); queue-loud: "
                  + "every voice 4 times as loud (the mix's peaks pass full scale), limiter off and on")
        }
        print(BenchTable.render(
            ["backend", "quality", "resampler", "wall ms", "cpu ms", "× real time", "spread", "cpu % per voice"],
            rows.map { r in
                [r.backend, r.quality, r.resampler, String(format: "%.1f", r.wallSeconds * 1000),
                 String(format: "%.1f", r.cpuSeconds * 1000), String(format: "%.0f", r.realTimeFactor),
                 String(format: "%.0f–%.0f", r.realTimeFactorMin, r.realTimeFactorMax),
                 String(format: "%.3f", r.cpuPercentPerVoice)]
            }))
        for quality in levels {
            let of = rows.filter { $0.quality == quality.rawValue }
            guard let queue = of.first(where: { $0.backend == "queue" }), let peer = of.first(where: { $0.backend == "openal-soft" })
            else { continue }
            print("\(quality): queue engine / OpenAL Soft \(peer.resampler): "
                  + String(format: "%.2f×", queue.realTimeFactor / peer.realTimeFactor))
        }
        for quality in levels {
            let of = rows.filter { $0.quality == quality.rawValue }
            for (plain, limited, mix) in [("queue", "queue+limiter", "below −1 dBFS"), ("queue-loud", "queue-loud+limiter", "past full scale")] {
                guard let without = of.first(where: { $0.backend == plain }),
                      let with = of.first(where: { $0.backend == limited }) else { continue }
                print("\(quality): the limiter on a mix \(mix) costs "
                      + String(format: "%+.1f%% CPU time (%+.3f ms per second of audio)", (with.cpuSeconds / without.cpuSeconds - 1) * 100,
                               (with.cpuSeconds - without.cpuSeconds) / seconds * 1000))
            }
        }
        if let chart = args.string("chart") {
            try BarChart(title: "Mixing speed: seconds of audio mixed per second (× real time)",
                         subtitle: "\(voices) voices, \(Int((share * 100).rounded())) % converted 44.1 → 48 kHz, "
                             + "median of \(runs) alternating runs; observed",
                         axis: "× real time", bars: rows.map { r in
                             BarChart.Bar(group: r.quality, series: r.backend == "openal-soft" ? "OpenAL Soft" : r.backend,
                                          value: r.realTimeFactor)
                         }).write(to: chart)
        }
        try bench.writeReport(rows)
    }

    /// The row for `runs`: the run of median wall time gives the medians, the others the spread.
    static func row(_ backend: String, _ quality: ResamplingQuality, _ resampler: String, voices: Int, share: Double,
                    seconds: Double, runs: [Run]) -> Row {
        let walls = runs.map(\.wall).sorted(), cpus = runs.map(\.cpu).sorted()
        let wall = walls[walls.count / 2], cpu = cpus[cpus.count / 2]
        return Row(backend: backend, quality: quality.rawValue, resampler: resampler, voices: voices, convertedShare: share,
                   audioSeconds: seconds, runs: runs.count,
                   wallSeconds: wall, cpuSeconds: cpu, realTimeFactor: seconds / wall,
                   realTimeFactorMin: seconds / walls[walls.count - 1], realTimeFactorMax: seconds / walls[0],
                   cpuPercentPerVoice: cpu / seconds / Double(voices) * 100)
    }

    /// The queue engine's voices for the bench: `convertedShare` of them play at 44.1 kHz
    /// (`--converted`), each a one-second sine of its own frequency at volume 1/`voices`, looped
    /// in place as a cached sound would be, on an offline device at 48 kHz.
    static func queueMix(voices: Int, periodFrames: Int, convertedShare: Double,
                         quality: ResamplingQuality = .default, limiter: Bool = false,
                         loudness: Float = 1) throws -> (OfflineDevice, [BufferQueue]) {
        let device = try OfflineDevice(configuration: OutputConfiguration(sampleRate: 48_000, periodFrames: periodFrames))
        let engine = QueueEngine(device: device)
        engine.outputLimiter = limiter
        try engine.start()
        var queues: [BufferQueue] = []
        for v in 0..<voices {
            let format = try AudioFormat(sampleRate: voiceRate(v, of: voices, convertedShare: convertedShare), channelCount: 2)
            let tone = try toneBuffer(format: format, frequency: voiceFrequency(v))
            let queue = try BufferQueue(format: format, engine: engine, quality: quality) { queue, _ in try? queue.enqueue(tone) }
            try queue.setVolume(min(1, loudness / Float(voices)))
            for _ in 0..<2 { try queue.enqueue(tone) }
            try queue.start()
            queues.append(queue)
        }
        return (device, queues)
    }

    /// The rate of voice `v`: the first `convertedShare` of the voices need conversion.
    static func voiceRate(_ v: Int, of voices: Int, convertedShare: Double) -> Double {
        Double(v) < Double(voices) * convertedShare ? 44_100 : 48_000
    }

    /// Voice `v`'s sine: a whole number of cycles per second, so a one-second loop is seamless.
    static func voiceFrequency(_ v: Int) -> Double { 220 + 55 * Double(v) }

    /// The queue engine's run: `seconds` of the mix rendered in periods, timed.
    static func queueEngine(voices: Int, seconds: Double, periodFrames: Int, convertedShare: Double,
                            quality: ResamplingQuality, limiter: Bool = false, loudness: Float = 1) throws -> Run {
        let (device, queues) = try queueMix(voices: voices, periodFrames: periodFrames, convertedShare: convertedShare,
                                            quality: quality, limiter: limiter, loudness: loudness)
        let total = Int(seconds * 48_000)
        let buffer = UnsafeMutableBufferPointer<Float>.allocate(capacity: periodFrames * 2)
        defer { buffer.deallocate() }
        try device.render(frames: periodFrames, into: buffer)  // warm-up: start commands, converters
        let (wall, cpu) = try measure {
            var done = 0
            while done < total {
                try device.render(frames: periodFrames, into: buffer)
                done += periodFrames
            }
        }
        let underruns = queues.reduce(0) { $0 + $1.underrunCount }
        if underruns > 0 { printError("spool: warning: \(underruns) underruns while mixing") }
        for queue in queues { queue.dispose() }
        return Run(wall: wall, cpu: cpu)
    }

    static func toneBuffer(format: AudioFormat, frequency: Double) throws -> PCMBuffer {
        try PCMBuffer(format: format, samples: toneSamples(frames: Int(format.sampleRate), rate: format.sampleRate,
                                                           frequency: frequency))
    }

    /// Interleaved stereo sine at half scale.
    static func toneSamples(frames: Int, rate: Double, frequency: Double) -> [Float] {
        var samples = [Float](repeating: 0, count: frames * 2)
        for i in 0..<frames {
            let v = Float(sin(2 * .pi * frequency * Double(i) / rate)) * 0.5
            samples[2 * i] = v
            samples[2 * i + 1] = v
        }
        return samples
    }

    /// Wall-clock and this thread's CPU seconds for `body`.
    static func measure(_ body: () throws -> Void) throws -> (wall: Double, cpu: Double) {
        let wall0 = HostTime.seconds(from: 0, to: HostTime.now()), cpu0 = HostTime.threadCPUSeconds()
        try body()
        return (HostTime.seconds(from: 0, to: HostTime.now()) - wall0, HostTime.threadCPUSeconds() - cpu0)
    }
}
