import Synchronization

#if SPOOL_THREAD_SANITIZER
// ThreadSanitizer's annotation entry points, present in its runtime only: the TSan build
// (scripts/sanitize.sh) defines SPOOL_THREAD_SANITIZER.
@_silgen_name("__tsan_acquire") private func tsanAcquire(_ address: UnsafeRawPointer)
@_silgen_name("__tsan_release") private func tsanRelease(_ address: UnsafeRawPointer)
#endif

/// Mutable state behind a `Mutex`, the one lock Spool's types keep their state in.
///
/// It is `Synchronization.Mutex` and nothing more, except under ThreadSanitizer: on Linux the
/// mutex parks threads on a futex inside the (uninstrumented) standard library, which the
/// sanitizer cannot see, so it would report every access made under the lock as a race. In
/// the TSan build each critical section tells the sanitizer that it acquires and releases
/// the lock, so what it reports is a real race.
public final class Locked<Value: ~Copyable>: @unchecked Sendable {
    // Sendable: the value is only reached through `mutex`.
    private let mutex: Mutex<Value>

    /// Makes a lock around `initialValue`.
    public init(_ initialValue: consuming sending Value) {
        mutex = Mutex(initialValue)
    }

    /// Runs `body` with the value, the lock held.
    /// - Parameter body: Reads or changes the value; it must not block for long.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    public func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        #if SPOOL_THREAD_SANITIZER
        let token = UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque())
        #endif
        return try mutex.withLock { (value: inout sending Value) throws(E) -> sending Result in
            #if SPOOL_THREAD_SANITIZER
            tsanAcquire(token)
            defer { tsanRelease(token) }
            #endif
            return try body(&value)
        }
    }
}
