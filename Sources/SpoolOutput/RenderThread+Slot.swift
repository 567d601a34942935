import Synchronization
import SpoolCore

extension RenderThread {
    /// The render thread a real-time device runs, if any: the lifecycle ALSA and the null
    /// device share. Its lock also serialises the device's control calls that run with it
    /// (ALSA's PCM preparation and drop).
    final class Slot: Sendable {
        private let thread = Locked<RenderThread?>(nil)
        private let lastRealTime = Atomic<Bool>(false)
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
        func stop(afterwards: () -> Void = {}) {
            thread.withLock { thread in
                guard let running = thread else { return }
                running.stop()
                lastRealTime.store(running.isRealTime, ordering: .relaxed)
                thread = nil
                afterwards()
            }
        }
    }
}
