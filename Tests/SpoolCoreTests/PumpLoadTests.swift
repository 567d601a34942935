import Foundation
import SpoolCore
import Testing
import SpoolTestSupport

/// `PumpLoad`: what a service thread's passes cost on its CPU clock, and how far apart they came.
@Suite("PumpLoad")
struct PumpLoadTests {
    /// Spins on the thread's CPU clock for `seconds`.
    static func spin(_ seconds: Double) {
        let end = HostTime.threadCPUNanoseconds() + Int(seconds * 1e9)
        while HostTime.threadCPUNanoseconds() < end {}
    }

    @Test func passesAreTimedOnTheCPUClockAndTheGapBetweenThemOnTheWallClock() {
        let load = PumpLoad()
        #expect(load.snapshot == PumpLoad.Snapshot())
        #expect(load.measure { Self.spin(0.004); return 7 } == 7)
        Thread.sleep(forTimeInterval: 0.030)  // no CPU time: counted in the gap, not in a pass
        load.measure { Self.spin(0.001) }
        let s = load.snapshot
        #expect(s.passes == 2)
        #expect(s.cpuNanoseconds >= 5_000_000 && s.cpuNanoseconds < 30_000_000, "\(s.cpuNanoseconds) ns")
        #expect(s.peakPassNanoseconds >= 4_000_000 && s.peakPassNanoseconds < s.cpuNanoseconds)
        #expect(s.peakPassWallNanoseconds >= s.peakPassNanoseconds)
        #expect(s.longestGapNanoseconds >= 30_000_000, "\(s.longestGapNanoseconds) ns")

        load.resetPeaks()
        load.measure {}
        let after = load.snapshot
        #expect(after.peakPassNanoseconds < 4_000_000 && after.longestGapNanoseconds < 30_000_000)
        let since = after.since(s)
        #expect(since.passes == 1 && since.cpuNanoseconds == after.cpuNanoseconds - s.cpuNanoseconds)
    }
}
