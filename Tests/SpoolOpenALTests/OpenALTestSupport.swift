import Foundation
import Testing
import SpoolCore
import Synchronization
@testable import SpoolOpenAL
import SpoolTestSupport

/// A loopback device at `rate` rendering `periodFrames` at a time.
func makeLoopback(rate: Double = 48_000, periodFrames: Int = 256, sourceLimit: Int = 16) throws -> OpenALDevice {
    try OpenALDevice(.loopback(OutputConfiguration(sampleRate: rate, periodFrames: periodFrames)), sourceLimit: sourceLimit)
}

/// Records what a voice hands back and whether it finished, in order.
final class VoiceLog: Sendable {
    private let consumed = Locked<[PCMBuffer]>([])
    private let finishes = Atomic<Int>(0)

    init(_ voice: any PlaybackVoice) {
        voice.addBufferConsumedHandler { [weak self] buffer in self?.consumed.withLock { $0.append(buffer) } }
        voice.addFinishedHandler { [weak self] _ in self?.finishes.add(1, ordering: .relaxed) }
    }

    var buffers: [PCMBuffer] { consumed.withLock { $0 } }
    var count: Int { consumed.withLock { $0.count } }
    var finishedCount: Int { finishes.load(ordering: .relaxed) }
}

/// Host time of frame `frame` on a loopback device's rendered timeline, rounded down so that
/// the frame is the first at or after it.
func hostTime(ofFrame frame: Int, on device: OpenALDevice) -> UInt64 {
    device.hostTimeBase + UInt64((Double(frame) * 1e9 / device.format.sampleRate).rounded(.down))
}

/// Where two sample arrays first differ, for a short failure message; nil when equal.
func mismatch(_ actual: some Collection<Float>, _ expected: some Collection<Float>) -> String? {
    guard actual.count == expected.count else { return "\(actual.count) samples, expected \(expected.count)" }
    for (i, (a, e)) in zip(actual, expected).enumerated() where a != e {
        return "sample \(i): \(a), expected \(e)"
    }
    return nil
}

/// Runs the tests matching `filter` again in a process of their own (OpenAL Soft reads its
/// configuration and driver list once per process), with OpenAL's configuration variables
/// cleared and `environment` added; the child tells itself apart by a variable it sets.
/// - Returns: The child's exit status and standard output.
func runInFreshProcess(filter: String, environment extra: [String: String]) throws -> (status: Int32, output: String) {
    try SpoolTestSupport.runInFreshProcess(filter: filter, environment: extra, removing: ["ALSOFT_CONF", "ALSOFT_DRIVERS"])
}
