import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Mutable state behind a `Mutex`, the one lock Spool's types keep their state in.
///
/// It is `Synchronization.Mutex`, with one addition for ThreadSanitizer: on Linux the mutex
/// hands a contended lock from one thread to the next inside the kernel (priority-inheritance
/// futexes), so no user-space atomic carries the hand-off, the sanitizer misses the ordering
/// the lock provides, and it reports every critical section as racing. In a process built
/// with `-sanitize=thread`, each critical section announces its acquisition and release on
/// one address per lock, which restores that ordering in the sanitizer's model and adds none
/// the lock does not already give. Elsewhere that costs one nil check.
package final class Locked<Value: ~Copyable>: @unchecked Sendable {
    // Sendable: the value is only reached through `mutex`.
    @usableFromInline let mutex: Mutex<Value>

    /// Makes a lock around `initialValue`.
    package init(_ initialValue: consuming sending Value) {
        mutex = Mutex(initialValue)
    }

    /// Runs `body` with the value, the lock held.
    ///
    /// - Parameter body: Reads or changes the value; it must not block for long.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    ///
    /// Inlinable, so that each use is specialized where it is written: unspecialized, the
    /// generic call looked up type metadata at every call, on the OpenAL pump's pass over
    /// hundreds of voices too.
    @inlinable
    package func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        guard let hooks = ThreadSanitizerHooks.current else { return try mutex.withLock(body) }
        let token = UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque())
        return try mutex.withLock { (value: inout sending Value) throws(E) -> sending Result in
            hooks.acquire(token)
            defer { hooks.release(token) }
            return try body(&value)
        }
    }
}

extension Locked {
    /// Runs `body` with the value if the lock is free now; returns nil, without waiting, if
    /// another thread holds it.
    ///
    /// - Parameter body: Reads or changes the value; it must not block for long.
    /// - Returns: What `body` returns, or nil when the lock was taken.
    /// - Throws: What `body` throws.
    @inlinable
    package func withLockIfAvailable<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result? {
        guard let hooks = ThreadSanitizerHooks.current else { return try mutex.withLockIfAvailable(body) }
        let token = UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque())
        return try mutex.withLockIfAvailable { (value: inout sending Value) throws(E) -> sending Result in
            hooks.acquire(token)
            defer { hooks.release(token) }
            return try body(&value)
        }
    }
}

/// ThreadSanitizer's annotation entry points, present only in a process built with
/// `-sanitize=thread`; found with `dlsym`.
@usableFromInline
struct ThreadSanitizerHooks: @unchecked Sendable {
    // Sendable: two C function pointers, set once and only read.
    @usableFromInline typealias Hook = @convention(c) (UnsafeRawPointer?) -> Void
    @usableFromInline let acquire: Hook
    @usableFromInline let release: Hook

    @usableFromInline static let current: ThreadSanitizerHooks? = {
        let everywhere = UnsafeMutableRawPointer(bitPattern: 0)  // RTLD_DEFAULT
        guard let acquire = dlsym(everywhere, "__tsan_acquire"), let release = dlsym(everywhere, "__tsan_release") else {
            return nil
        }
        return ThreadSanitizerHooks(acquire: unsafeBitCast(acquire, to: Hook.self),
                                    release: unsafeBitCast(release, to: Hook.self))
    }()
}
