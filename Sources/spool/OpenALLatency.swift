import Foundation
import Spool

/// The OpenAL back-end in the latency bench.
enum OpenALLatency {
    static func makeProbe(output: OutputTarget, rate: Double, periodFrames: Int, periods: Int,
                          reference: Bool) throws -> (any LatencyProbe, String) {
        throw AudioError(.deviceUnavailable, "the OpenAL back-end is not available yet")
    }
}

/// `--acoustic`: both back-ends start a click at one host time; the sound server's monitor
/// says how far apart they really were.
enum AcousticCheck {
    static func run(rate: Double) throws {
        throw AudioError(.deviceUnavailable, "the acoustic check needs the OpenAL back-end")
    }
}

