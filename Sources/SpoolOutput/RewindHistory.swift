import Dispatch
import Synchronization
import SpoolCore

/// What a device has written and may write again: a ring of its last `capacity` frames,
/// indexed by device sample time, re-mixed in place when a sound starts below the buffer floor.
///
/// Made before the render thread starts and used by it alone: `append` after each period,
/// `remix` on a rewind. No lock, no allocation.
final class RewindHistory: @unchecked Sendable {
    // Sendable: touched by the render thread only (the device makes it before the thread starts).
    let channelCount: Int
    /// Frames the ring holds: at least the device's whole buffer.
    let capacity: Int
    private let samples: UnsafeMutablePointer<Float>
    /// The frames being re-mixed, in one piece.
    private let scratch: UnsafeMutablePointer<Float>
    /// Device frames written since the start: the ring holds `max(0, end − capacity)..<end`.
    private(set) var end: Int64 = 0

    init(capacity: Int, channelCount: Int) {
        self.capacity = max(1, capacity)
        self.channelCount = channelCount
        samples = .allocate(capacity: self.capacity * channelCount)
        samples.initialize(repeating: 0, count: self.capacity * channelCount)
        scratch = .allocate(capacity: self.capacity * channelCount)
        scratch.initialize(repeating: 0, count: self.capacity * channelCount)
    }

    deinit {
        samples.deallocate()
        scratch.deallocate()
    }

    /// The oldest frame the ring still holds.
    var start: Int64 { max(0, end - Int64(capacity)) }

    /// Forgets everything: the next frame appended is frame 0.
    func reset() { end = 0 }

    /// Records the `frames` frames the device has just written after the last ones.
    /// - Parameter evicted: Given, in order, the frames the new ones push out of the ring:
    ///   frames written `capacity` frames ago, which the device has played by now.
    func append(_ source: UnsafePointer<Float>, frames: Int, evicted: (UnsafePointer<Float>, Int) -> Void = { _, _ in }) {
        var done = 0
        while done < frames {
            let at = Int(end % Int64(capacity))
            let n = min(frames - done, capacity - at)
            let slot = samples + at * channelCount
            if end >= Int64(capacity) { evicted(slot, n) }
            slot.update(from: source + done * channelCount, count: n * channelCount)
            done += n
            end += Int64(n)
        }
    }

    /// Visits the frames `from..<end` (clamped to what the ring holds) in order, in at most
    /// two contiguous parts: the pointer, the part's frame count and its first frame's sample time.
    func forEachPart(from: Int64, _ body: (UnsafeMutablePointer<Float>, Int, Int64) -> Void) {
        var frame = max(from, start)
        while frame < end {
            let at = Int(frame % Int64(capacity))
            let n = min(Int(end - frame), capacity - at)
            body(samples + at * channelCount, n, frame)
            frame += Int64(n)
        }
    }

    /// Has `renderer` add what just started into the frames `from..<end` (clamped to what the
    /// ring holds), handing them over in one piece, and keeps the result.
    /// - Parameter hostTime: When a frame (by sample time) will be heard.
    /// - Returns: The re-mixed frames, to write to the device again, and the sample time of
    ///   the first; nil when the renderer added nothing (nothing needs writing again). Valid
    ///   until the next call.
    func remix(from: Int64, renderer: any RewindingRenderer, hostTime: (Int64) -> UInt64)
        -> (frames: UnsafePointer<Float>, count: Int, first: Int64)? {
        let first = max(from, start)
        guard first < end else { return nil }
        var done = 0
        forEachPart(from: first) { part, frames, _ in
            (scratch + done * channelCount).update(from: part, count: frames * channelCount)
            done += frames
        }
        let timestamp = RenderTimestamp(sampleTime: first, hostTime: hostTime(first))
        guard renderer.renderStarts(into: scratch, frames: done, timestamp: timestamp) else { return nil }
        done = 0
        forEachPart(from: first) { part, frames, _ in
            part.update(from: scratch + done * channelCount, count: frames * channelCount)
            done += frames
        }
        return (UnsafePointer(scratch), done, first)
    }
}

/// A rewind asked for by a control thread and carried out by the render thread: a flag, and
/// a semaphore the null device's render thread sleeps on so that a request wakes it at once.
final class RewindRequest: Sendable {
    private let pending = Atomic<Bool>(false)
    private let wake = DispatchSemaphore(value: 0)
    /// Rewinds carried out: frames were re-mixed and written again.
    let performed = Atomic<Int>(0)
    /// Rewinds asked for that found nothing to rewrite, or a device that would not rewind.
    let declined = Atomic<Int>(0)

    /// Any thread: asks for a rewind at the render thread's next chance.
    func request() {
        if !pending.exchange(true, ordering: .acquiringAndReleasing) { wake.signal() }
    }

    /// Render thread: whether a rewind is due, clearing the request.
    func take() -> Bool { pending.exchange(false, ordering: .acquiringAndReleasing) }

    /// Render thread: sleeps until `deadline` (a `HostTime`), or until a rewind is asked for.
    /// - Returns: True when woken by a request before the deadline.
    func sleep(until deadline: UInt64) -> Bool {
        while true {
            if pending.load(ordering: .acquiring) { return true }
            let now = HostTime.now()
            guard now < deadline else { return false }
            // A signal left over from a request already taken wakes this early; the loop
            // then finds nothing pending and sleeps again.
            _ = wake.wait(timeout: .now() + .nanoseconds(Int(deadline - now)))
        }
    }

    /// Counts the outcome of a rewind the render thread took.
    func record(rewound: Bool) {
        if rewound { performed.add(1, ordering: .relaxed) } else { declined.add(1, ordering: .relaxed) }
    }

    /// Render thread: counts a rewind that rewrote nothing, and tells `rewinder` so that the
    /// starts waiting for it go ahead in the next render, behind the buffer, rather than wait
    /// out their time for a rewind that is not coming.
    func decline(_ rewinder: (any RewindingRenderer)?) {
        rewinder?.declineStarts()
        record(rewound: false)
    }
}
