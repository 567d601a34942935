import Synchronization

/// What a service thread's passes cost and how far apart they came: the OpenAL back-end's
/// pump keeps one. Spool's OpenAL voices convert on the pump thread (OpenAL Soft only copies
/// what they queue), so their conversion is counted here, not in the device's `RenderLoad`;
/// and a voice runs dry when passes come further apart than its lead.
///
/// The service thread writes, any thread reads (atomics only).
public final class PumpLoad: Sendable {
    /// The figures so far.
    public struct Snapshot: Sendable, Equatable {
        /// Passes made.
        public var passes = 0
        /// The passes' thread CPU time, in nanoseconds.
        public var cpuNanoseconds = 0
        /// The most thread CPU time one pass took, in nanoseconds (since the last reset).
        public var peakPassNanoseconds = 0
        /// The most wall-clock time one pass took, in nanoseconds (since the last reset).
        public var peakPassWallNanoseconds = 0
        /// The longest wall-clock time from one pass's end to the next one's start (since the last reset).
        public var longestGapNanoseconds = 0

        /// Makes an empty snapshot.
        public init() {}

        /// What happened between `earlier` and this snapshot (the peaks are this one's).
        public func since(_ earlier: Snapshot) -> Snapshot {
            var d = self
            d.passes -= earlier.passes
            d.cpuNanoseconds -= earlier.cpuNanoseconds
            return d
        }
    }

    private let passes = Atomic<Int>(0)
    private let cpu = Atomic<Int>(0)
    private let peakCPU = Atomic<Int>(0)
    private let peakWall = Atomic<Int>(0)
    private let longestGap = Atomic<Int>(0)
    /// Host time the last pass ended; 0 before the first.
    private let lastEnd = Atomic<UInt64>(0)

    /// Makes a meter with nothing counted.
    public init() {}

    /// The service thread: runs one pass and counts its cost.
    public func measure<T>(_ pass: () -> T) -> T {
        let start = HostTime.now(), cpuStart = HostTime.threadCPUNanoseconds()
        let previous = lastEnd.load(ordering: .relaxed)
        if previous != 0, start > previous { raise(longestGap, to: Int(start - previous)) }
        let result = pass()
        let end = HostTime.now()
        let spent = max(0, HostTime.threadCPUNanoseconds() - cpuStart)
        passes.add(1, ordering: .relaxed)
        cpu.add(spent, ordering: .relaxed)
        raise(peakCPU, to: spent)
        raise(peakWall, to: Int(end &- start))
        lastEnd.store(end, ordering: .relaxed)
        return result
    }

    /// One writer: load-then-store cannot lose a larger value to another thread.
    private func raise(_ peak: borrowing Atomic<Int>, to value: Int) {
        if value > peak.load(ordering: .relaxed) { peak.store(value, ordering: .relaxed) }
    }

    /// Clears the peaks, so that the next snapshot's are those of what follows.
    public func resetPeaks() {
        peakCPU.store(0, ordering: .relaxed)
        peakWall.store(0, ordering: .relaxed)
        longestGap.store(0, ordering: .relaxed)
    }

    /// The figures so far.
    public var snapshot: Snapshot {
        var s = Snapshot()
        s.passes = passes.load(ordering: .relaxed)
        s.cpuNanoseconds = cpu.load(ordering: .relaxed)
        s.peakPassNanoseconds = peakCPU.load(ordering: .relaxed)
        s.peakPassWallNanoseconds = peakWall.load(ordering: .relaxed)
        s.longestGapNanoseconds = longestGap.load(ordering: .relaxed)
        return s
    }
}
