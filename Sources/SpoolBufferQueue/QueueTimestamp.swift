import Synchronization

/// A point on a queue's timeline. The corresponding Apple type is `AudioTimeStamp` as
/// returned by `AudioQueueGetCurrentTime`.
public struct QueueTimestamp: Sendable, Equatable {
    /// Frames of the queue's timeline (at the queue's own rate) since it started, paused
    /// time excluded. Silence played during an underrun counts: the timeline runs on.
    public var sampleTime: Double
    /// The `HostTime` at which the frame at `sampleTime` is heard.
    public var hostTime: UInt64
    /// True when the timeline broke since the last read: an underrun or a device change
    /// (`kAudioQueueProperty_...` discontinuity).
    public var isDiscontinuity: Bool
}

/// A (sampleTime, hostTime) pair the render thread publishes and any thread reads whole,
/// without a lock: a sequence counter is odd while a write is under way.
final class PublishedTime: Sendable {
    private let sequence = Atomic<UInt64>(0)
    private let sampleBits = Atomic<UInt64>(0)
    private let host = Atomic<UInt64>(0)

    /// Render thread only.
    func publish(sampleTime: Double, hostTime: UInt64) {
        let s = sequence.load(ordering: .relaxed)
        sequence.store(s &+ 1, ordering: .relaxed)
        atomicMemoryFence(ordering: .releasing)
        sampleBits.store(sampleTime.bitPattern, ordering: .relaxed)
        host.store(hostTime, ordering: .relaxed)
        sequence.store(s &+ 2, ordering: .releasing)
    }

    func read() -> (sampleTime: Double, hostTime: UInt64) {
        while true {
            let before = sequence.load(ordering: .acquiring)
            let sample = Double(bitPattern: sampleBits.load(ordering: .relaxed))
            let hostTime = host.load(ordering: .relaxed)
            atomicMemoryFence(ordering: .acquiring)
            if before & 1 == 0, sequence.load(ordering: .relaxed) == before { return (sample, hostTime) }
        }
    }
}
