import Foundation
import Spool

/// `spool bench cache [DIR]`: the buffer cache on a folder of sounds. A cold load of the
/// folder one file at a time and on all cores (each load into a fresh cache, `--repeat`
/// times, the median counts), the latency of hits on one hot file, and the bytes held
/// against the budget, including a pass with a budget half the folder's size, where the
/// cache must evict to stay within it.
enum CacheBench {
    struct Percentiles: Encodable {
        let p50Microseconds: Double
        let p99Microseconds: Double
    }

    struct EvictionPass: Encodable {
        let budgetBytes: Int
        let peakBytesHeld: Int
        let bytesHeld: Int
        let evictions: Int
        let itemCount: Int
        /// Evicted audio the bench still holds, as a player would.
        let bytesInUseElsewhere: Int
    }

    struct Report: Encodable {
        let directory: String
        let cores: Int
        let repeats: Int
        let loadedFiles: Int
        let failedFiles: [String]
        let decodedBytes: Int
        let serialSeconds: Double
        let parallelSeconds: Double
        let serialRuns: [Double]
        let parallelRuns: [Double]
        let speedup: Double
        let hitCalls: Int
        let hitFile: String
        let hitForPath: Percentiles
        let hitForSource: Percentiles
        let hitForKey: Percentiles
        let budgetBytes: Int
        let bytesHeld: Int
        /// The highest `peakBytesHeld` over budget seen in any pass (at most 1 when kept).
        let worstPeakToBudget: Double
        let eviction: EvictionPass
        let speedupTargetMet: Bool
        let hitTargetMet: Bool
        let budgetTargetMet: Bool
    }

    static let speedupTarget = 1.7
    static let hitTargetMicroseconds = 2.0

    static func run(_ words: [String]) throws {
        guard let bench = try BenchInvocation(words, valued: ["budget-mb", "repeat", "hits"]) else { return }
        let args = bench.arguments
        guard args.operands.count <= 1 else { throw UsageError("bench cache takes one folder, not \(args.operands.count)") }
        let directory = args.operands.first ?? "Fixtures"
        let budgetBytes = Int((try args.double("budget-mb", in: 0.001...1_048_576) ?? 64) * 1_048_576)
        let repeats = try args.int("repeat", in: 1...1000) ?? 5
        let hitCalls = try args.int("hits", in: 100...10_000_000) ?? 100_000
        let cores = ProcessInfo.processInfo.activeProcessorCount

        // A first load warms the page cache and the decoders' one-time set-up, and finds the files.
        let survey = try BufferCache(budgetBytes: budgetBytes).preload(directory: directory)
        guard let hot = survey.loaded.first else {
            throw AudioError(.emptyInput, "\(directory): no audio file in the folder decoded")
        }
        var worstPeak = 0.0
        func note(_ cache: BufferCache) {
            let stats = cache.stats
            worstPeak = max(worstPeak, Double(stats.peakBytesHeld) / Double(stats.budgetBytes))
        }

        // Cold loads, each into a fresh cache; serial and parallel take turns going first so
        // that neither always runs on a machine the other has just warmed.
        var serialRuns: [Double] = []
        var parallelRuns: [Double] = []
        var hotCache = try BufferCache(budgetBytes: budgetBytes)
        for run in 0..<repeats {
            for parallel in run % 2 == 0 ? [false, true] : [true, false] {
                let cache = try BufferCache(budgetBytes: budgetBytes)
                let start = HostTime.seconds(from: 0, to: HostTime.now())
                let load = try cache.preload(directory: directory, maximumConcurrency: parallel ? cores : 1)
                let elapsed = HostTime.seconds(from: 0, to: HostTime.now()) - start
                guard load.loaded.count == survey.loaded.count else {
                    throw AudioError(.invalidState, "\(directory): a cold load decoded \(load.loaded.count) files, the first \(survey.loaded.count)")
                }
                if parallel { parallelRuns.append(elapsed); hotCache = cache } else { serialRuns.append(elapsed) }
                note(cache)
            }
        }
        let serial = median(serialRuns)
        let parallel = median(parallelRuns)

        // Hits on one hot file: through its path (stat + lookup), through an AudioSource, and
        // through a key taken once (lookup only).
        let source = AudioSource.file(path: hot.path)
        let key = try hotCache.key(forPath: hot.path)
        let forPath = try percentiles(calls: hitCalls) { _ = try hotCache.buffer(forPath: hot.path) as PCMBuffer }
        let forSource = try percentiles(calls: hitCalls) { _ = try hotCache.buffer(for: source) as PCMBuffer }
        let forKey = try percentiles(calls: hitCalls) { _ = try hotCache.buffer(forKey: key) as PCMBuffer }
        let hotStats = hotCache.stats
        note(hotCache)

        // A budget half the folder's size: the cache must evict to stay within it. The bench
        // then asks for every file and keeps them all, as players would, so that evicted
        // audio shows up as in use elsewhere.
        let smallBudget = max(1, survey.byteCount / 2)
        let small = try BufferCache(budgetBytes: smallBudget)
        _ = try small.preload(directory: directory)
        let kept = try survey.loaded.map { try small.buffer(forPath: $0.path) as PCMBuffer }
        let smallStats = small.stats
        withExtendedLifetime(kept) {}
        note(small)
        let eviction = EvictionPass(
            budgetBytes: smallBudget, peakBytesHeld: smallStats.peakBytesHeld, bytesHeld: smallStats.bytesHeld,
            evictions: smallStats.evictions, itemCount: smallStats.itemCount,
            bytesInUseElsewhere: smallStats.bytesInUseElsewhere)

        let report = Report(
            directory: directory, cores: cores, repeats: repeats, loadedFiles: survey.loaded.count,
            failedFiles: survey.failed.map(\.path), decodedBytes: survey.byteCount,
            serialSeconds: serial, parallelSeconds: parallel, serialRuns: serialRuns, parallelRuns: parallelRuns,
            speedup: serial / parallel, hitCalls: hitCalls, hitFile: hot.path,
            hitForPath: forPath, hitForSource: forSource, hitForKey: forKey,
            budgetBytes: budgetBytes, bytesHeld: hotStats.bytesHeld, worstPeakToBudget: worstPeak,
            eviction: eviction,
            speedupTargetMet: serial / parallel >= speedupTarget,
            hitTargetMet: forPath.p50Microseconds <= hitTargetMicroseconds,
            budgetTargetMet: worstPeak <= 1)
        print(render(report, survey: survey))
        try bench.writeReport(report)
    }

    static func render(_ r: Report, survey: BufferCache.PreloadReport) -> String {
        func ms(_ seconds: Double) -> String { String(format: "%.2f ms", seconds * 1000) }
        func us(_ p: Percentiles) -> String { String(format: "%.2f / %.2f µs", p.p50Microseconds, p.p99Microseconds) }
        func yes(_ met: Bool) -> String { met ? "yes" : "NO" }
        let name = URL(fileURLWithPath: r.hitFile).lastPathComponent
        let rows: [[String]] = [
            ["cold load, serial (median)", ms(r.serialSeconds), "", ""],
            ["cold load, \(r.cores) workers (median)", ms(r.parallelSeconds), "", ""],
            ["parallel speedup", String(format: "%.2f×", r.speedup), String(format: "≥ %.1f×", speedupTarget),
             yes(r.speedupTargetMet)],
            ["hit buffer(forPath:) p50 / p99", us(r.hitForPath), String(format: "p50 ≤ %.0f µs", hitTargetMicroseconds),
             yes(r.hitTargetMet)],
            ["hit buffer(for: AudioSource) p50 / p99", us(r.hitForSource), "", ""],
            ["hit buffer(forKey:) p50 / p99", us(r.hitForKey), "", ""],
            ["bytes held / budget", "\(mib(r.bytesHeld)) / \(mib(r.budgetBytes))", "≤ budget",
             yes(r.bytesHeld <= r.budgetBytes)],
            ["half-folder budget: peak held / budget", "\(mib(r.eviction.peakBytesHeld)) / \(mib(r.eviction.budgetBytes))",
             "≤ budget", yes(r.eviction.peakBytesHeld <= r.eviction.budgetBytes)],
            ["half-folder budget: items, evictions", "\(r.eviction.itemCount), \(r.eviction.evictions)", "", ""],
            ["half-folder budget: in use elsewhere", mib(r.eviction.bytesInUseElsewhere), "", ""],
            ["peak held / budget, every pass", String(format: "%.3f", r.worstPeakToBudget), "≤ 1",
             yes(r.budgetTargetMet)],
        ]
        var lines = [
            "\(r.directory): \(r.loadedFiles) files decoded (\(mib(r.decodedBytes))), \(r.failedFiles.count) failed, "
                + "\(survey.skipped.count) skipped; \(r.cores) cores; \(r.repeats) cold loads each way; "
                + "\(r.hitCalls) hits per path on \(name)",
        ]
        for failure in survey.failed { lines.append("failed: \(failure.path): \(failure.error.message)") }
        lines.append(BenchTable.render(["measure", "value", "target", "met"], rows))
        return lines.joined(separator: "\n")
    }

    /// Times `calls` calls of `body` one by one, after a warm-up.
    static func percentiles(calls: Int, _ body: () throws -> Void) throws -> Percentiles {
        for _ in 0..<min(calls, 1000) { try body() }
        var times = [Double](repeating: 0, count: calls)
        for i in 0..<calls {
            let start = HostTime.seconds(from: 0, to: HostTime.now())
            try body()
            times[i] = HostTime.seconds(from: 0, to: HostTime.now()) - start
        }
        times.sort()
        // Nearest rank: the smallest time at or above which the fraction lies.
        func rank(_ fraction: Double) -> Double { times[max(0, Int((fraction * Double(calls)).rounded(.up)) - 1)] * 1e6 }
        return Percentiles(p50Microseconds: rank(0.50), p99Microseconds: rank(0.99))
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    static func mib(_ bytes: Int) -> String { String(format: "%.2f MiB", Double(bytes) / 1_048_576) }
}
