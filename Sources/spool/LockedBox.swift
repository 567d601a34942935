import Foundation

/// A value behind a lock, for results handed between threads.
final class LockedBox<T: Sendable>: @unchecked Sendable {
    // Sendable: `stored` is only touched with `lock` held.
    private let lock = NSLock()
    private var stored: T
    init(_ value: T) { stored = value }
    var value: T {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
