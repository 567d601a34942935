import Testing
@testable import SpoolBenchmarks

/// The soak's verdict on memory: a trend over the run, not one sample's swing.
@Suite("spool bench soak: the resident set's growth")
struct SoakSummaryTests {
    /// Ten minutes of one-second samples: `base` MiB plus `trend` MiB per minute, plus a
    /// swing of ±`swing` MiB that alternates from second to second.
    static func samples(baseMiB: Int, trendMiBPerMinute: Double, swingMiB: Int) -> [SoakBench.Sample] {
        (0..<600).map { second in
            let trend = Int(trendMiBPerMinute * 1024 * Double(second) / 60)
            let swing = (second % 2 == 0 ? 1 : -1) * swingMiB * 1024
            return SoakBench.Sample(second: second, residentKiB: baseMiB * 1024 + trend + swing,
                                    heapInUseKiB: 50 * 1024 + swing / 2, threads: 12, descriptors: 20)
        }
    }

    @Test("swings of 10 MiB from one second to the next with no trend pass; the peak is reported beside")
    func swingsWithoutATrendPass() {
        let report = SoakBench.summarize(Self.samples(baseMiB: 100, trendMiBPerMinute: 0, swingMiB: 5), warmUp: 60,
                                         minutes: 10, cycles: 0, effects: 0, offline: [:], watchdog: SoakBench.Watchdog())
        #expect(report.windowSeconds == 60)
        #expect(abs(report.residentGrowthKiB) <= 1, "\(report.residentGrowthKiB) KiB")
        #expect(report.residentPeakGrowthKiB == 5 * 1024)
        #expect(report.passed, "\(report.failures)")
    }

    @Test("a steady 1 MiB a minute fails, named with its windows, whatever the swings")
    func aSteadyGrowthFails() {
        let report = SoakBench.summarize(Self.samples(baseMiB: 100, trendMiBPerMinute: 1, swingMiB: 5), warmUp: 60,
                                         minutes: 10, cycles: 0, effects: 0, offline: [:], watchdog: SoakBench.Watchdog())
        // Window means at 1:30 and 9:30 into the run: 8 MiB apart.
        #expect(abs(report.residentGrowthKiB - 8 * 1024) <= 2, "\(report.residentGrowthKiB) KiB")
        #expect(!report.passed)
        #expect(report.failures.contains { $0.contains("the last 60 s against the first 60 s") }, "\(report.failures)")
    }

    @Test("a short run compares sixths of what follows the warm-up")
    func aShortRunUsesSixths() {
        let samples = Array(Self.samples(baseMiB: 100, trendMiBPerMinute: 0, swingMiB: 0).prefix(80))
        let report = SoakBench.summarize(samples, warmUp: 20, minutes: 80.0 / 60, cycles: 0, effects: 0, offline: [:],
                                         watchdog: SoakBench.Watchdog())
        #expect(report.windowSeconds == 10)
        #expect(report.residentGrowthKiB == 0 && report.passed)
    }
}
