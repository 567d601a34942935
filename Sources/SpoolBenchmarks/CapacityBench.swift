import Foundation
import Spool
import SpoolResampling

/// `spool bench capacity [--seconds S] [--quality LEVEL] [--max N]`: the most voices each
/// back-end plays in real time on the null device (256 × 3 frames at 48 kHz), every voice a
/// looping one-second stereo sine at 44.1 kHz converted to 48 kHz, with no underrun and no
/// late period over S seconds (20 by default), at each resampling quality; OpenAL Soft on
/// plain sources with its matching resampler in the same run.
///
/// A count passes when, after a second's settling, the S seconds that follow have no voice
/// underrun (the queue's and Spool's OpenAL voices count them, OpenAL Soft's stopped sources
/// are counted for it) and no late period the mixer caused, at the first try or the second.
/// Each null device times its renders on its own thread's CPU clock (`RenderLoad`): a period
/// that comes late with every render since the previous one under its period's duration in
/// CPU time is a stall of the machine (the thread was not run in time), counted and shown but
/// not held against the mixer; one after a render that overran is the mixer's. The search
/// doubles the count until one fails, then halves the interval between the last pass and the
/// first failure down to one voice (or 2 % of it).
enum CapacityBench {
    struct Row: Codable {
        let backend: String
        let quality: String
        let resampler: String
        /// The most voices that passed.
        let voices: Int
        /// The first count that failed (nil: the most the back-end mixes, or `--max`, passed).
        let failedAt: Int?
        let seconds: Double
        /// Late periods in the passing runs at `voices` that were the machine's stalls.
        let stalls: Int
        /// The most CPU time one period's mix took at `voices`, as a share of the period.
        let peakLoad: Double
        /// The mixes' CPU time at `voices`, as a share of the audio they made.
        let meanLoad: Double
        /// Spool's OpenAL back-end: its pump's CPU time at `voices` (where its voices convert),
        /// as a share of the audio played; nil where the mix does all the work.
        let pumpLoad: Double?
        let periodFrames: Int
        let periodCount: Int
        var kind = "observed"
    }

    static let configuration = OutputConfiguration(sampleRate: 48_000, channelCount: 2, periodFrames: 256, periodCount: 3)

    static func run(_ words: [String]) throws {
        guard let bench = try BenchInvocation(words, valued: ["seconds", "quality", "max", "backends", "chart"]) else { return }
        let args = bench.arguments
        let seconds = try args.double("seconds", in: 1...600) ?? 20
        let maximum = try args.int("max", in: 1...4096) ?? 256
        let levels = try bench.qualities()
        let backends = try bench.backends(allowed: ["queue", "openal", "openal-soft"], defaults: ["queue", "openal", "openal-soft"])
        // OpenAL Soft reads its source count once, at its first call: --max of them (256 at least).
        if backends.contains(where: { $0.hasPrefix("openal") }), maximum > OpenALDevice.defaultSourceLimit {
            try OpenALConfiguration(sources: maximum).apply()
        }
        let tone = try PCMBuffer(format: AudioFormat(sampleRate: 44_100, channelCount: 2),
                                 samples: MixBench.toneSamples(frames: 44_100, rate: 44_100, frequency: 441))
        /// The pump's CPU time over a run's measured seconds.
        func share(_ pump: PumpLoad.Snapshot) -> Double { Double(pump.cpuNanoseconds) * 1e-9 / seconds }
        var rows: [Row] = []
        for quality in levels {
            for backend in backends {
                let resampler: String
                let trial: (Int) throws -> RealTimeRun?
                switch backend {
                case "openal-soft":
                    let peer = try OpenALSoftPeer.resampler(named: MixBench.peerResampler[quality] ?? "linear")
                    resampler = peer.description
                    // OpenAL Soft has the sources its configuration gives it (--max, applied first).
                    trial = { voices in
                        guard voices <= OpenALDevice.sourceCapacity else { return nil }
                        // The same second's settling before the measured seconds as Spool's sides.
                        return try OpenALSoftPeer.playInRealTime(voices: voices, seconds: seconds, settleSeconds: 1,
                                                                 configuration: configuration, sourceRate: 44_100,
                                                                 resampler: peer)
                    }
                default:
                    resampler = "\(VoiceResampler.fixedKind(quality))"
                    trial = { voices in
                        try run(backend: backend, voices: voices, quality: quality, tone: tone, seconds: seconds, maximum: maximum)
                    }
                }
                // The queue engine is made for --max voices, OpenAL Soft's devices given --max sources.
                let limit = backend == "queue" ? maximum : min(maximum, OpenALDevice.sourceCapacity)
                let found = try search(maximum: min(maximum, limit)) { voices in
                    guard let run = try trial(voices) else { return nil }
                    let judged = run.keptUp ? "kept up" : "fell behind"
                    printError("spool: \(backend) \(quality), \(voices) voices: \(judged); \(run.dry) underruns, "
                               + "\(run.late) late periods (\(run.load.stalls) stalls), \(run.load.overruns) overruns, "
                               + String(format: "peak load %.2f, mean %.3f", run.load.peakLoad, run.load.meanLoad)
                               + (run.pump.map { p in
                                   String(format: "; pump %.3f of a core, longest pass %.1f ms (%.1f ms CPU), longest gap %.1f ms",
                                          share(p), Double(p.peakPassWallNanoseconds) * 1e-6,
                                          Double(p.peakPassNanoseconds) * 1e-6, Double(p.longestGapNanoseconds) * 1e-6)
                               } ?? ""))
                    return run
                }
                let (passed, failed) = (found.passed, found.failed)
                let at = found.passedRuns
                let row = Row(backend: backend, quality: quality.rawValue, resampler: resampler, voices: passed, failedAt: failed,
                              seconds: seconds, stalls: at.reduce(0) { $0 + $1.load.stalls },
                              peakLoad: at.map(\.load.peakLoad).max() ?? 0, meanLoad: at.last?.load.meanLoad ?? 0,
                              pumpLoad: at.last?.pump.map(share),
                              periodFrames: configuration.periodFrames, periodCount: configuration.periodCount)
                printError("spool: \(backend) \(quality): \(passed) voices" + (failed.map { " (\($0) failed)" } ?? ""))
                rows.append(row)
            }
        }
        print("voices sustained in real time, each a 44.1 kHz stereo sine converted to 48 kHz, on the null device at "
              + "\(configuration.periodFrames) × \(configuration.periodCount) frames; no underrun and no late period after "
              + "an overrun over \(String(format: "%g", seconds)) s (stalls: late periods with every render inside its period, "
              + "the machine's); load: a period's mix in CPU time over its duration, at that count; pump load: the CPU time of "
              + "the thread where Spool's OpenAL voices convert, over the audio played; observed")
        print(BenchTable.render(["backend", "quality", "resampler", "voices", "first failing", "stalls", "peak load", "mean load",
                                  "pump load"],
                                 rows.map { r in
            [r.backend, r.quality, r.resampler, r.failedAt == nil ? "≥ \(r.voices) (all)" : "\(r.voices)",
             r.failedAt.map { "\($0)" } ?? "—", "\(r.stalls)", String(format: "%.2f", r.peakLoad), String(format: "%.3f", r.meanLoad),
             r.pumpLoad.map { String(format: "%.3f", $0) } ?? "—"]
        }))
        for quality in levels {
            let of = rows.filter { $0.quality == quality.rawValue }
            guard let peer = of.first(where: { $0.backend == "openal-soft" }), peer.voices > 0 else { continue }
            for r in of where r.backend != "openal-soft" {
                // A side that never failed stopped at its limit: the ratio is a bound, not a measure.
                let bound = switch (r.failedAt == nil, peer.failedAt == nil) {
                case (false, true): "at most "
                case (true, false): "at least "
                case (true, true): "unknown (both stopped at their limits), at "
                case (false, false): ""
                }
                print("\(quality): \(r.backend) / OpenAL Soft \(peer.resampler): \(bound)"
                      + String(format: "%.2f×", Double(r.voices) / Double(peer.voices)))
            }
        }
        if let chart = args.string("chart") {
            try BarChart(title: "Voices sustained in real time, every one converted (44.1 → 48 kHz)",
                         subtitle: "on the null device at 256 × 3 frames, \(String(format: "%g", seconds)) s each; "
                             + "hollow: the side stopped at --max \(maximum), not by failing; observed",
                         axis: "voices", bars: rows.map { r in
                             BarChart.Bar(group: r.quality, series: r.backend == "openal-soft" ? "OpenAL Soft" : r.backend,
                                          value: Double(r.voices), atLeast: r.failedAt == nil)
                         }).write(to: chart)
        }
        try bench.writeReport(rows)
    }

    /// The largest count whose run keeps up, doubling from 8 then bisecting; `once` returns nil
    /// for a count the back-end cannot mix at all. A count fails only when it fails twice
    /// running: a source can run dry when the machine stalls a feeder or a pump whatever the
    /// load, an overload fails every time.
    /// - Returns: That count (0 when even one fails), the first count that failed, and the
    ///   passing count's runs (both, when its first try failed).
    static func search(maximum: Int, _ once: (Int) throws -> RealTimeRun?) throws
        -> (passed: Int, failed: Int?, passedRuns: [RealTimeRun]) {
        /// The runs of a count, and whether one of them kept up.
        func trial(_ count: Int) throws -> (kept: Bool, runs: [RealTimeRun]) {
            var runs: [RealTimeRun] = []
            for _ in 0..<2 {
                guard let run = try once(count) else { break }
                runs.append(run)
                if run.keptUp { return (true, runs) }
            }
            return (false, runs)
        }
        var passed = 0
        var runsAtPassed: [RealTimeRun] = []
        var failed: Int?
        var count = min(8, maximum)
        while failed == nil {
            let outcome = try trial(count)
            if outcome.kept {
                (passed, runsAtPassed) = (count, outcome.runs)
                if count == maximum { break }
                count = min(maximum, count * 2)
            } else {
                failed = count
            }
        }
        while let high = failed, high - passed > max(1, passed / 50) {
            let middle = (passed + high) / 2
            let outcome = try trial(middle)
            if outcome.kept { (passed, runsAtPassed) = (middle, outcome.runs) } else { failed = middle }
        }
        return (passed, failed, runsAtPassed)
    }

    /// `voices` voices of `backend` playing `seconds` on the null device after a second's
    /// settling: their underruns, the device's late periods and its render load; nil when the
    /// back-end cannot make that many voices.
    static func run(backend name: String, voices: Int, quality: ResamplingQuality, tone: PCMBuffer,
                    seconds: Double, maximum: Int = QueueEngine.defaultMaximumQueues) throws -> RealTimeRun? {
        let backend: any PlaybackBackend
        let xruns: () -> Int
        let load: RenderLoad
        var pump: PumpLoad?
        switch name {
        case "queue":
            let device = try NullDevice(configuration: configuration)
            let queue = try BufferQueueBackend(device: device, maximumVoices: max(maximum, QueueEngine.defaultMaximumQueues))
            queue.engine.resamplingQuality = quality
            backend = queue
            xruns = { device.xrunCount }
            load = device.renderLoad
        default:
            let openAL = OpenALBackend(device: try OpenALDevice(.null(configuration),
                                                                sourceLimit: min(OpenALDevice.sourceCapacity, max(voices, 1))))
            openAL.resamplingQuality = quality
            backend = openAL
            xruns = { openAL.device.xrunCount }
            load = openAL.device.renderLoad ?? RenderLoad()
            pump = openAL.device.pumpLoad
        }
        defer { (backend as? OpenALBackend)?.device.close() }
        var feeders: [VoiceFeeder] = []
        for _ in 0..<voices {
            let voice: any PlaybackVoice
            do { voice = try backend.makeVoice(format: tone.format, quality: quality) } catch { return nil }
            try voice.setVolume(1 / Float(voices), rampSeconds: 0)
            let feeder = try VoiceFeeder(voice: voice, source: .buffer(tone), bufferFrames: 4096, buffersAhead: 3,
                                         numberOfLoops: -1)
            try feeder.prime()
            try voice.start(atHostTime: nil)
            feeders.append(feeder)
        }
        defer { for feeder in feeders { feeder.voice.dispose() } }
        Thread.sleep(forTimeInterval: 1)
        let underrunsBefore = feeders.reduce(0) { $0 + $1.voice.underrunCount }, xrunsBefore = xruns()
        let loadBefore = load.snapshot, pumpBefore = pump?.snapshot
        load.resetPeak()
        pump?.resetPeaks()
        Thread.sleep(forTimeInterval: seconds)
        return RealTimeRun(dry: feeders.reduce(0) { $0 + $1.voice.underrunCount } - underrunsBefore,
                           late: xruns() - xrunsBefore, load: load.snapshot.since(loadBefore),
                           pump: pumpBefore.flatMap { before in pump?.snapshot.since(before) })
    }
}
