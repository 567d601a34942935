#if canImport(Glibc)
import Glibc
#endif

/// The monotonic clock every timestamp in Spool is read against: nanoseconds of
/// `CLOCK_MONOTONIC`. The corresponding Apple call is `mach_absolute_time()`.
public enum HostTime {
    /// Now, in nanoseconds.
    public static func now() -> UInt64 {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return UInt64(t.tv_sec) &* 1_000_000_000 &+ UInt64(t.tv_nsec)
    }

    /// Nanoseconds in `seconds`.
    public static func nanoseconds(_ seconds: Double) -> UInt64 { UInt64(max(0, Int(saturating: (seconds * 1e9).rounded()))) }

    /// Seconds from `start` to `end` (negative when `end` is earlier).
    public static func seconds(from start: UInt64, to end: UInt64) -> Double {
        end >= start ? Double(end - start) * 1e-9 : -Double(start - end) * 1e-9
    }

    /// Sleeps until the clock reads `deadline` (an absolute sleep: no drift).
    public static func sleep(until deadline: UInt64) {
        var t = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, nil) == EINTR {}
    }

    /// CPU seconds the calling thread has run (`CLOCK_THREAD_CPUTIME_ID`): what the benchmarks
    /// time work on one thread with, so that time the scheduler gives to others does not count.
    public static func threadCPUSeconds() -> Double {
        Double(threadCPUNanoseconds()) * 1e-9
    }

    /// CPU nanoseconds the calling thread has run (`CLOCK_THREAD_CPUTIME_ID`); no allocation,
    /// so a render thread may read it.
    public static func threadCPUNanoseconds() -> Int {
        var t = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
        return t.tv_sec * 1_000_000_000 + t.tv_nsec
    }
}
