import Synchronization

/// A fixed-capacity, lock-free ring of `Int32`s for exactly one producer thread and one
/// consumer thread: how Spool hands buffer identities to and from a render thread without a
/// lock or an allocation.
package final class SPSCRing: @unchecked Sendable {
    // Sendable: slots are written only by the producer before it publishes them with a
    // release store of `tail`, and read only by the consumer after an acquire load of it.
    private let slots: UnsafeMutablePointer<Int32>
    private let capacity: Int
    private let head = Atomic<Int>(0)  // next slot to read; written by the consumer
    private let tail = Atomic<Int>(0)  // next slot to write; written by the producer

    /// Makes a ring that holds up to `capacity` values.
    package init(capacity: Int) {
        self.capacity = max(1, capacity) + 1
        slots = .allocate(capacity: self.capacity)
        slots.initialize(repeating: 0, count: self.capacity)
    }

    deinit { slots.deallocate() }

    /// Producer: appends `value`; false when the ring is full.
    @discardableResult
    package func push(_ value: Int32) -> Bool {
        let t = tail.load(ordering: .relaxed)
        let next = (t + 1) % capacity
        guard next != head.load(ordering: .acquiring) else { return false }
        slots[t] = value
        tail.store(next, ordering: .releasing)
        return true
    }

    /// Consumer: takes the oldest value, or `nil` when empty.
    package func pop() -> Int32? {
        let h = head.load(ordering: .relaxed)
        guard h != tail.load(ordering: .acquiring) else { return nil }
        let value = slots[h]
        head.store((h + 1) % capacity, ordering: .releasing)
        return value
    }

    /// Consumer: the oldest value without taking it.
    package func peek() -> Int32? {
        let h = head.load(ordering: .relaxed)
        guard h != tail.load(ordering: .acquiring) else { return nil }
        return slots[h]
    }

    /// Values waiting (exact from either side's point of view at the moment of the call).
    package var count: Int {
        let t = tail.load(ordering: .acquiring), h = head.load(ordering: .acquiring)
        return (t - h + capacity) % capacity
    }
}
