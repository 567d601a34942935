import Foundation
import SpoolCore

// The signals and measurements the tests of every target render and compare with.

public let stereo48 = try! AudioFormat(sampleRate: 48_000, channelCount: 2)
public let mono48 = try! AudioFormat(sampleRate: 48_000, channelCount: 1)

/// A sine of `frequency` Hz at `rate`, `frames` long, the same on every channel.
public func sine(frequency: Double, rate: Double = 48_000, frames: Int, channels: Int, amplitude: Float = 0.5,
                 phase: Double = 0) -> [Float] {
    var out = [Float](repeating: 0, count: frames * channels)
    for i in 0..<frames {
        let v = amplitude * Float(sin(2 * .pi * frequency * Double(i) / rate + phase))
        for c in 0..<channels { out[i * channels + c] = v }
    }
    return out
}

/// A sine of `frequency` Hz, the same on every channel.
public func sine(_ frequency: Double, frames: Int, format: AudioFormat, amplitude: Float = 0.5) throws -> PCMBuffer {
    try PCMBuffer(format: format, samples: sine(frequency: frequency, rate: format.sampleRate, frames: frames,
                                                channels: format.channelCount, amplitude: amplitude))
}

/// A buffer of `frames` frames of `value` on every channel.
public func constant(_ value: Float, frames: Int, format: AudioFormat = stereo48) throws -> PCMBuffer {
    try PCMBuffer(format: format, samples: [Float](repeating: value, count: frames * format.channelCount))
}

/// A buffer of `samples` at `rate` with `channels` channels.
public func pcm(_ samples: [Float], rate: Double = 48_000, channels: Int = 2) throws -> PCMBuffer {
    try PCMBuffer(format: try AudioFormat(sampleRate: rate, channelCount: channels), samples: samples)
}

/// One channel of interleaved samples.
public func channel(_ samples: [Float], _ index: Int, of channels: Int = 2) -> [Float] {
    stride(from: index, to: samples.count, by: channels).map { samples[$0] }
}

/// Root mean square.
public func rms<C: Collection>(_ x: C) -> Double where C.Element == Float {
    guard !x.isEmpty else { return 0 }
    return (x.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(x.count)).squareRoot()
}

/// Signal-to-noise ratio of `actual` against `reference`, in dB, over the longer of the two
/// (the shorter is padded with silence, so a missing frame counts as noise).
public func snr(_ actual: [Float], _ reference: [Float]) -> Double {
    var signal = 0.0, noise = 0.0
    for i in 0..<max(actual.count, reference.count) {
        let a = i < actual.count ? Double(actual[i]) : 0
        let r = i < reference.count ? Double(reference[i]) : 0
        signal += r * r
        noise += (a - r) * (a - r)
    }
    return noise == 0 ? .infinity : 10 * log10(signal / noise)
}

/// Frequency of a signal by linearly interpolated rising zero crossings.
public func zeroCrossingFrequency(_ x: ArraySlice<Float>, rate: Double) -> Double {
    var crossings: [Double] = []
    var previous = x.first ?? 0
    for (i, v) in zip(x.indices, x).dropFirst() {
        if previous < 0, v >= 0 { crossings.append(Double(i - x.startIndex) - Double(v) / Double(v - previous)) }
        previous = v
    }
    guard crossings.count > 2, let first = crossings.first, let last = crossings.last else { return 0 }
    return Double(crossings.count - 1) / (last - first) * rate
}

/// Index of the first frame (stereo) with a sample whose magnitude exceeds `threshold`.
public func firstSoundingFrame(_ samples: [Float], threshold: Float = 0) -> Int? {
    samples.firstIndex { abs($0) > threshold }.map { $0 / 2 }
}

/// Decibels of an amplitude ratio.
public func decibels(_ ratio: Double) -> Double { 20 * log10(ratio) }

/// `frames` interleaved frames whose every sample is distinct: sample k = (start + k) / 2^20.
public func ramp(frames: Int, channels: Int, start: Int = 0) -> [Float] {
    (0..<(frames * channels)).map { Float(start + $0) / 1_048_576 }
}
