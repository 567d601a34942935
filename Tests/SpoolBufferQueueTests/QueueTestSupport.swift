import Foundation
import Synchronization
import SpoolCore
import SpoolOutput
@testable import SpoolBufferQueue
import SpoolTestSupport

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

/// Fills a new buffer of `queue` with `samples`.
func filledBuffer(_ queue: BufferQueue, _ samples: [Float]) throws -> AudioQueueBuffer {
    let frames = samples.count / queue.format.channelCount
    let buffer = try queue.allocateBuffer(frameCapacity: frames)
    _ = buffer.data.update(from: samples)
    buffer.frameCount = frames
    return buffer
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

