import Synchronization

/// What a clock-paced render loop's periods cost, and why a late one came late: the queue
/// engine's null device and the OpenAL back-end's null clock each keep one, so a benchmark
/// can tell a mixer that falls behind from a machine that did not run its thread in time.
///
/// A device holding P ≥ 2 periods has P − 1 periods of slack when a period falls due. A
/// render whose thread CPU time (`CLOCK_THREAD_CPUTIME_ID`) is under the period's duration
/// cannot by itself use that slack up: when such renders still come too late, the thread
/// waited for a CPU (a stall: a late wake-up, or a preemption mid-render). A render that took
/// more CPU time than its period lasts is an *overrun*: the mixer falls behind whatever the
/// scheduling, and the late period after it is the mixer's.
///
/// The render thread writes, any thread reads; it never locks or allocates (atomics only).
public final class RenderLoad: Sendable {
    /// The counts so far.
    public struct Snapshot: Sendable, Equatable {
        /// Periods rendered.
        public var periods = 0
        /// Renders that took more thread CPU time than their period lasts.
        public var overruns = 0
        /// Late periods with no overrun since the previous on-time one: the thread was not run in time.
        public var stalls = 0
        /// The most CPU time one period's render took, as a share of the period (1 = all of it).
        public var peakLoad = 0.0
        /// CPU time of every render, as a share of the audio they made.
        public var meanLoad = 0.0

        /// Makes an empty snapshot.
        public init() {}

        /// What happened between `earlier` and this snapshot (the peak is this one's, since reset).
        public func since(_ earlier: Snapshot) -> Snapshot {
            var d = self
            d.periods -= earlier.periods
            d.overruns -= earlier.overruns
            d.stalls -= earlier.stalls
            return d
        }
    }

    private let periods = Atomic<Int>(0)
    private let overruns = Atomic<Int>(0)
    private let stalls = Atomic<Int>(0)
    /// The peak share, in thousandths of a period.
    private let peakThousandths = Atomic<Int>(0)
    private let totalNanoseconds = Atomic<Int>(0)
    private let audioNanoseconds = Atomic<Int>(0)

    /// Makes a meter with nothing counted.
    public init() {}

    /// Render thread: runs one period's render and counts its CPU time.
    ///
    /// - Parameters:
    ///   - periodNanoseconds: How long the audio it renders lasts.
    ///   - render: The render.
    /// - Returns: Whether it overran (took more CPU time than the period lasts).
    @discardableResult
    public func measure(periodNanoseconds: Int, _ render: () -> Void) -> Bool {
        let start = HostTime.threadCPUNanoseconds()
        render()
        let spent = max(0, HostTime.threadCPUNanoseconds() - start)
        periods.add(1, ordering: .relaxed)
        totalNanoseconds.add(spent, ordering: .relaxed)
        audioNanoseconds.add(periodNanoseconds, ordering: .relaxed)
        // One writer: load-then-store cannot lose a larger value to another thread.
        let share = spent * 1_000 / max(1, periodNanoseconds)
        if share > peakThousandths.load(ordering: .relaxed) { peakThousandths.store(share, ordering: .relaxed) }
        guard spent > periodNanoseconds else { return false }
        overruns.add(1, ordering: .relaxed)
        return true
    }

    /// Render thread: a period came too late; `afterOverrun` tells whether a render since the
    /// previous on-time period overran. Without one, the late period is counted as a stall.
    public func late(afterOverrun: Bool) {
        if !afterOverrun { stalls.add(1, ordering: .relaxed) }
    }

    /// Clears the peak, so that the next snapshot's is that of what follows.
    public func resetPeak() { peakThousandths.store(0, ordering: .relaxed) }

    /// The counts so far.
    public var snapshot: Snapshot {
        var s = Snapshot()
        s.periods = periods.load(ordering: .relaxed)
        s.overruns = overruns.load(ordering: .relaxed)
        s.stalls = stalls.load(ordering: .relaxed)
        s.peakLoad = Double(peakThousandths.load(ordering: .relaxed)) / 1_000
        let audio = audioNanoseconds.load(ordering: .relaxed)
        s.meanLoad = audio > 0 ? Double(totalNanoseconds.load(ordering: .relaxed)) / Double(audio) : 0
        return s
    }
}

/// What one real-time run of a mixer on a null device showed: the voices that ran dry, the
/// periods that came late, and what the renders cost. The capacity benchmark judges both
/// back-ends and OpenAL Soft by it.
public struct RealTimeRun: Sendable {
    /// Times a voice or source ran dry (underruns).
    public var dry: Int
    /// Periods the null device rendered too late for its virtual buffer (xruns).
    public var late: Int
    /// The render load over the run: its overruns, its stalls, its peak.
    public var load: RenderLoad.Snapshot
    /// Over the run, the passes of the thread that feeds the mixer outside its render, where
    /// there is one (Spool's OpenAL pump); nil where the mixer does all the work.
    public var pump: PumpLoad.Snapshot?

    /// Makes a report.
    public init(dry: Int, late: Int, load: RenderLoad.Snapshot, pump: PumpLoad.Snapshot? = nil) {
        self.dry = dry
        self.late = late
        self.load = load
        self.pump = pump
    }

    /// Late periods that came after an overrun: the mixer's own.
    public var lateFromOverruns: Int { max(0, late - load.stalls) }

    /// Whether the mixer kept up: nothing ran dry and no period came late after an overrun.
    /// A stall (the machine not running the render thread in time while each render fitted in
    /// its period) is the machine's, not the mixer's, and is reported beside it.
    public var keptUp: Bool { dry == 0 && lateFromOverruns == 0 }
}
