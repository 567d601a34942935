import CAllocationCounter
import Synchronization

/// Counts what a render thread allocates over a window of render calls: ALSA's writes between
/// them included. An underrun's recovery happens inside ALSA (the PulseAudio plug-in allocates
/// while it prepares the stream again, about 14 times), so a window in which the device
/// counted an underrun says nothing about the render loop: it is dropped and counting starts
/// again over as many calls, until a window passes with none.
public final class AllocationWindow: Sendable {
    private let length: Int
    private let xruns: @Sendable () -> Int
    private let start: Atomic<Int>
    private let xrunsAtStart = Atomic<Int>(0)
    private let count = Atomic<Int>(-1)
    private let bytes = Atomic<Int>(-1)
    private let dropped = Atomic<Int>(0)

    /// - Parameters:
    ///   - window: The first window of render-call indices.
    ///   - xruns: The device's underrun count; a device that has none passes `{ 0 }`.
    public init(_ window: Range<Int>, xruns: @escaping @Sendable () -> Int = { 0 }) {
        length = window.count
        start = Atomic(window.lowerBound)
        self.xruns = xruns
    }

    /// Render thread: call at the top of render call number `call`.
    public func enter(call: Int) {
        let first = start.load(ordering: .relaxed)
        if call == first + length {
            if xruns() != xrunsAtStart.load(ordering: .relaxed) {
                _ = spool_allocation_counting_end()
                dropped.add(1, ordering: .relaxed)
                start.store(call, ordering: .relaxed)
            } else {
                bytes.store(Int(spool_allocation_counting_bytes()), ordering: .relaxed)
                count.store(Int(spool_allocation_counting_end()), ordering: .releasing)
                return
            }
        }
        if call == start.load(ordering: .relaxed) {
            xrunsAtStart.store(xruns(), ordering: .relaxed)
            spool_allocation_counting_begin()
        }
    }

    /// Allocations and bytes over the first window without an underrun; `nil` until one closed.
    public var allocations: (count: Int, bytes: Int)? {
        let n = count.load(ordering: .acquiring)
        return n < 0 ? nil : (n, bytes.load(ordering: .relaxed))
    }

    /// Windows dropped for an underrun in them.
    public var droppedWindows: Int { dropped.load(ordering: .relaxed) }
}
