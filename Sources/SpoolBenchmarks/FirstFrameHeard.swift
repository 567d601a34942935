import Foundation
import Spool

/// Seconds from host time `since` to the moment a started sound's first frame leaves the
/// device, as the sound itself reports it: polled every 50 µs until it reports frames played,
/// then now + what the output still holds ahead of the speaker − the frames played at `rate`.
/// `since` may lie ahead (a start scheduled for a host time): the result is then negative when
/// the sound came early. The benchmarks time every side of a comparison with this one function.
/// - Parameters:
///   - since: The host time to measure from (the start call, or the time a start was set for).
///   - rate: The rate of the frames `played` counts.
///   - timeout: Seconds to wait for a first frame.
///   - played: The sound's frames played so far.
///   - latency: The output's latency, in seconds, as the sound reports it.
/// - Returns: Seconds, or nil when no frame played within `timeout`.
package func firstFrameHeard(since: UInt64, rate: Double, timeout: Double = 2, played: () -> Int,
                     latency: () -> Double) -> Double? {
    let deadline = HostTime.now() + HostTime.nanoseconds(timeout)
    while HostTime.now() < deadline {
        let frames = played()
        if frames > 0 {
            let elapsed = Double(Int64(bitPattern: HostTime.now() &- since)) * 1e-9
            return elapsed + latency() - Double(frames) / rate
        }
        usleep(50)
    }
    return nil
}
