import Foundation
import Synchronization
import SpoolCore
import SpoolOutput
@testable import SpoolBufferQueue

/// An offline engine at `rate`/`channels` with small periods, started.
func makeOfflineEngine(rate: Double = 48_000, channels: Int = 2, periodFrames: Int = 256) throws -> (QueueEngine, OfflineDevice) {
    let device = try OfflineDevice(configuration: OutputConfiguration(
        sampleRate: rate, channelCount: channels, periodFrames: periodFrames, periodCount: 2))
    let engine = QueueEngine(device: device)
    try engine.start()
    return (engine, device)
}

/// Records every callback a queue makes, in order.
final class CallbackLog: Sendable {
    private let entries = Locked<[AudioQueueBuffer]>([])
    func record(_ buffer: AudioQueueBuffer) { entries.withLock { $0.append(buffer) } }
    var buffers: [AudioQueueBuffer] { entries.withLock { $0 } }
    var count: Int { entries.withLock { $0.count } }
}

/// `frames` interleaved frames whose every sample is distinct: sample k = (start + k) / 2^20.
func ramp(frames: Int, channels: Int, start: Int = 0) -> [Float] {
    (0..<(frames * channels)).map { Float(start + $0) / 1_048_576 }
}

/// Fills a new buffer of `queue` with `samples`.
func filledBuffer(_ queue: BufferQueue, _ samples: [Float]) throws -> AudioQueueBuffer {
    let frames = samples.count / queue.format.channelCount
    let buffer = try queue.allocateBuffer(frameCapacity: frames)
    _ = buffer.data.update(from: samples)
    buffer.frameCount = frames
    return buffer
}

/// A sine of `frequency` Hz at `rate`, `frames` long, the same on every channel.
func sine(frequency: Double, rate: Double, frames: Int, channels: Int, amplitude: Float = 0.5, phase: Double = 0) -> [Float] {
    var out = [Float](repeating: 0, count: frames * channels)
    for i in 0..<frames {
        let v = amplitude * Float(sin(2 * .pi * frequency * Double(i) / rate + phase))
        for c in 0..<channels { out[i * channels + c] = v }
    }
    return out
}

/// Frequency of a mono signal by linearly interpolated rising zero crossings.
func zeroCrossingFrequency(_ x: ArraySlice<Float>, rate: Double) -> Double {
    var crossings: [Double] = []
    var previous = x.first ?? 0
    for (i, v) in zip(x.indices, x).dropFirst() {
        if previous < 0, v >= 0 { crossings.append(Double(i - x.startIndex) - Double(v) / Double(v - previous)) }
        previous = v
    }
    guard crossings.count > 2 else { return 0 }
    return Double(crossings.count - 1) / (crossings.last! - crossings.first!) * rate
}

/// SNR of `x` against the best-fitting sine of `frequency` (least squares in amplitude and phase).
func sineFitSNR(_ x: ArraySlice<Float>, frequency: Double, rate: Double) -> Double {
    var ss = 0.0, sc = 0.0, cc = 0.0, xs = 0.0, xc = 0.0
    for (n, v) in x.enumerated() {
        let w = 2 * Double.pi * frequency * Double(n) / rate
        let s = sin(w), c = cos(w)
        ss += s * s; sc += s * c; cc += c * c; xs += Double(v) * s; xc += Double(v) * c
    }
    let det = ss * cc - sc * sc
    let a = (xs * cc - xc * sc) / det, b = (xc * ss - xs * sc) / det
    var signal = 0.0, noise = 0.0
    for (n, v) in x.enumerated() {
        let w = 2 * Double.pi * frequency * Double(n) / rate
        let fit = a * sin(w) + b * cos(w)
        signal += fit * fit
        noise += (Double(v) - fit) * (Double(v) - fit)
    }
    return 10 * log10(signal / noise)
}

/// One channel of interleaved samples.
func channel(_ samples: [Float], _ index: Int, of channels: Int) -> [Float] {
    stride(from: index, to: samples.count, by: channels).map { samples[$0] }
}
