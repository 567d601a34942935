import Foundation
import Testing
import SpoolCore
import Synchronization
@testable import SpoolOpenAL

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

/// `frames` interleaved frames whose every sample is distinct: sample k = (start + k) / 2^20.
func ramp(frames: Int, channels: Int, start: Int = 0) -> [Float] {
    (0..<(frames * channels)).map { Float(start + $0) / 1_048_576 }
}

/// A buffer of `samples` at `rate` with `channels` channels.
func pcm(_ samples: [Float], rate: Double = 48_000, channels: Int = 2) throws -> PCMBuffer {
    try PCMBuffer(format: try AudioFormat(sampleRate: rate, channelCount: channels), samples: samples)
}

/// A sine of `frequency` Hz at `rate`, `frames` long, the same on every channel.
func sine(frequency: Double, rate: Double = 48_000, frames: Int, channels: Int, amplitude: Float = 0.5) -> [Float] {
    var out = [Float](repeating: 0, count: frames * channels)
    for i in 0..<frames {
        let v = amplitude * Float(sin(2 * .pi * frequency * Double(i) / rate))
        for c in 0..<channels { out[i * channels + c] = v }
    }
    return out
}

/// One channel of interleaved samples.
func channel(_ samples: [Float], _ index: Int, of channels: Int = 2) -> [Float] {
    stride(from: index, to: samples.count, by: channels).map { samples[$0] }
}

/// Root mean square of `x`.
func rms<C: Collection>(_ x: C) -> Double where C.Element == Float {
    guard !x.isEmpty else { return 0 }
    return (x.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(x.count)).squareRoot()
}

/// Decibels of an amplitude ratio.
func decibels(_ ratio: Double) -> Double { 20 * log10(ratio) }

/// Frequency of a mono signal by linearly interpolated rising zero crossings.
func zeroCrossingFrequency(_ x: ArraySlice<Float>, rate: Double) -> Double {
    var crossings: [Double] = []
    var previous = x.first ?? 0
    for (i, v) in zip(x.indices, x).dropFirst() {
        if previous < 0, v >= 0 { crossings.append(Double(i - x.startIndex) - Double(v) / Double(v - previous)) }
        previous = v
    }
    guard crossings.count > 2, let first = crossings.first, let last = crossings.last else { return 0 }
    return Double(crossings.count - 1) / (last - first) * rate
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

/// Expects `body` to throw an `AudioError` with `code`.
func expectError(_ code: AudioError.Code, sourceLocation: SourceLocation = #_sourceLocation,
                 _ body: () throws -> Any) {
    let error = #expect(throws: AudioError.self, sourceLocation: sourceLocation) { _ = try body() }
    if let error { #expect(error.code == code, "\(error)", sourceLocation: sourceLocation) }
}

/// Runs the tests matching `filter` again in a process of their own (OpenAL Soft reads its
/// configuration and driver list once per process), with OpenAL's configuration variables
/// cleared and `environment` added; the child tells itself apart by a variable it sets.
/// - Returns: The child's exit status and standard output.
func runInFreshProcess(filter: String, environment extra: [String: String]) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    process.arguments = ["--testing-library", "swift-testing", "--filter", filter]
    var environment = ProcessInfo.processInfo.environment
    environment["ALSOFT_CONF"] = nil
    environment["ALSOFT_DRIVERS"] = nil
    environment.merge(extra) { _, new in new }
    process.environment = environment
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = FileHandle.nullDevice
    try process.run()
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return (process.terminationStatus, output)
}
