#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import SpoolCore

/// A device's render thread: a POSIX thread that asks for `SCHED_FIFO` real-time priority
/// (`RenderPriority`; it carries on at normal priority, silently, where the system refuses it)
/// and runs one body until that body returns.
///
/// The body runs its own loop and reads `shouldStop` between periods; `stop()` raises the flag
/// and joins the thread, so once it returns the body has finished and will never run again.
final class RenderThread: Sendable {
    private let stopRequested = Atomic<Bool>(false)
    private let finished = Atomic<Bool>(false)
    private let realTime = Atomic<Bool>(false)
    private let joined = Atomic<Bool>(false)
    private let threadID = Atomic<UInt>(0)
    /// The thread's `pthread_t`, 0 until it has started.
    var id: UInt { threadID.load(ordering: .acquiring) }

    /// Whether the body has returned (by itself or after `stop()`).
    var hasFinished: Bool { finished.load(ordering: .acquiring) }

    /// Whether the thread got real-time priority.
    var isRealTime: Bool { realTime.load(ordering: .relaxed) }

    /// Read by the body between periods: true once `stop()` has been called.
    var shouldStop: Bool { stopRequested.load(ordering: .acquiring) }

    private init() {}

    /// Starts a thread running `body`.
    /// - Parameters:
    ///   - name: The thread's name as `top`/`gdb` show it (at most 15 bytes, the kernel's limit).
    ///   - body: The loop. It receives the thread so it can read `shouldStop`.
    /// - Returns: The running thread.
    /// - Throws: `AudioError.Code.libraryFailure` when the system cannot make a thread.
    static func start(name: String, body: @escaping @Sendable (RenderThread) -> Void) throws -> RenderThread {
        let thread = RenderThread()
        let context = Unmanaged.passRetained(Context(thread: thread, name: name, body: body)).toOpaque()
        var id = pthread_t()
        let status = pthread_create(&id, nil, { raw in
            guard let raw else { return nil }
            let context = Unmanaged<Context>.fromOpaque(raw).takeRetainedValue()
            context.run()
            return nil
        }, context)
        guard status == 0 else {
            Unmanaged<Context>.fromOpaque(context).release()
            throw AudioError(.libraryFailure, "cannot start the render thread \(name)",
                             underlying: LibraryStatus(library: "pthread", code: status, text: String(cString: strerror(status))))
        }
        thread.threadID.store(UInt(id), ordering: .releasing)
        return thread
    }

    /// Asks the body to return and waits until it has. Safe to call more than once and from
    /// any thread; called on the render thread itself it only raises the flag.
    func stop() {
        stopRequested.store(true, ordering: .releasing)
        guard !joined.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let id = pthread_t(threadID.load(ordering: .acquiring))
        if pthread_equal(id, pthread_self()) != 0 {
            pthread_detach(id)  // joining oneself would deadlock; the thread ends when the body returns
        } else {
            pthread_join(id, nil)
        }
    }

    deinit {
        // A thread that was never joined is detached so that its resources are freed when it ends.
        if !joined.load(ordering: .acquiring) { pthread_detach(pthread_t(threadID.load(ordering: .acquiring))) }
    }

    /// What the new thread needs, handed over through `pthread_create`'s context pointer.
    private final class Context: Sendable {
        let thread: RenderThread
        let name: String
        let body: @Sendable (RenderThread) -> Void

        init(thread: RenderThread, name: String, body: @escaping @Sendable (RenderThread) -> Void) {
            self.thread = thread
            self.name = name
            self.body = body
        }

        func run() {
            Thread.current.name = name  // pthread_setname_np underneath; Glibc does not export it to Swift
            thread.realTime.store(RenderPriority.requestRealTime(), ordering: .relaxed)
            body(thread)
            thread.finished.store(true, ordering: .releasing)
        }
    }
}
