#if canImport(Glibc)
import Glibc
#endif

/// A POSIX thread that its owner joins, so that a stopped server has no thread left running
/// (Foundation's `Thread` cannot be joined).
struct JoinableThread: Sendable {
    /// The closure the thread runs, carried to it through `Unmanaged`.
    private final class Body {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }

    private let thread: pthread_t

    /// Starts a thread running `body`.
    /// - Throws: `TestServerError.Code.socketFailed` when `pthread_create` fails.
    init(_ body: @escaping @Sendable () -> Void) throws {
        let context = Unmanaged.passRetained(Body(body)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(&thread, nil, { context in
            Unmanaged<Body>.fromOpaque(context!).takeRetainedValue().run()
            return nil
        }, context)
        guard result == 0 else {
            Unmanaged<Body>.fromOpaque(context).release()
            throw TestServerError(.socketFailed, "pthread_create", errorNumber: result)
        }
        self.thread = thread
    }

    /// Waits for the thread to end. Call once.
    func join() {
        _ = pthread_join(thread, nil)
    }
}
