#if canImport(Glibc)
import Glibc
#endif

/// The real-time priority a render thread asks for: the output devices' render threads (ALSA,
/// and the null device both back-ends share), each mixing a device's periods, as OpenAL Soft's
/// own mixer thread does on a sound card (its `rt-prio`).
package enum RenderPriority {
    /// The `SCHED_FIFO` priority asked for. Modest on purpose: above every normal thread, below
    /// the sound server's own threads and the kernel's interrupt threads (JACK uses 70+, rtkit
    /// caps desktop clients at 20).
    package static let realTimePriority: Int32 = 10

    /// Asks for `SCHED_FIFO` at `realTimePriority` for the calling thread.
    ///
    /// - Returns: Whether it was granted. Without `CAP_SYS_NICE` or an `RLIMIT_RTPRIO` the
    ///   system refuses (`EPERM`) and the thread simply stays at normal priority.
    @discardableResult
    package static func requestRealTime() -> Bool {
        var parameters = sched_param()
        parameters.sched_priority = realTimePriority
        return pthread_setschedparam(pthread_self(), Int32(SCHED_FIFO), &parameters) == 0
    }
}
