import Synchronization
import SpoolCore
#if canImport(Glibc)
import Glibc
#endif

extension RenderThread {
    /// The render thread a real-time device runs, if any: the lifecycle ALSA and the null
    /// device share. Its lock also serialises the device's control calls that run with it
    /// (ALSA's PCM preparation and drop).
    final class Slot: Sendable {
        private let thread = Locked<RenderThread?>(nil)
        private let lastRealTime = Atomic<Bool>(false)
        /// The render thread a `stop` is joining, with the lock held; 0 when none is.
        private let joining = Atomic<UInt>(0)
        private let device: String

        /// - Parameter device: The device's name, for messages.
        init(device: String) { self.device = device }

        deinit { thread.withLock { $0 }?.stop() }

        /// Whether a render thread is pulling audio (false after `stop` or once its loop ended).
        var isRunning: Bool { thread.withLock { t in t.map { !$0.hasFinished } ?? false } }

        /// Whether the render thread runs (or last ran) with `SCHED_FIFO` priority; false
        /// before the first start and where the system refuses real-time scheduling.
        var isRealTime: Bool { thread.withLock { $0?.isRealTime } ?? lastRealTime.load(ordering: .relaxed) }

        /// Starts a render thread running `body`, once `prepare` (under the lock) succeeded.
        /// A thread whose loop ended by itself (a lost device) is reaped first.
        /// - Throws: `AudioError.Code.invalidState` when one is running; what `prepare` or
        ///   `RenderThread.start` throws.
        func start(name: String, prepare: () throws -> @Sendable (RenderThread) -> Void) throws {
            try thread.withLock { thread in
                if let running = thread {
                    guard running.hasFinished else { throw AudioError(.invalidState, "\(device): already running") }
                    running.stop()
                    thread = nil
                }
                thread = try RenderThread.start(name: name, body: try prepare())
            }
        }

        /// Stops the render thread and joins it, then runs `afterwards` under the lock. Does
        /// nothing (not even `afterwards`) when none runs.
        ///
        /// Called on the render thread itself (the last reference to what it renders went
        /// there) while another thread's `stop` holds the lock and joins it, it returns at once:
        /// that stop ends the thread, and waiting for its lock would wait for ever.
        func stop(afterwards: () -> Void = {}) {
            let caller = UInt(pthread_self())
            while joining.load(ordering: .acquiring) != caller {
                let stopped: Void? = thread.withLockIfAvailable { thread in
                    guard let running = thread else { return }
                    joining.store(running.id, ordering: .releasing)
                    running.stop()
                    joining.store(0, ordering: .releasing)
                    lastRealTime.store(running.isRealTime, ordering: .relaxed)
                    thread = nil
                    afterwards()
                }
                if stopped != nil { return }
                usleep(100)  // another control call holds the lock: it is brief, or it joins this thread
            }
        }
    }
}
