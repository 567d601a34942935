import Foundation
import SpoolCore
import SpoolTestSupport

/// What a synthetic decoder plays on one channel.
enum TestSignal: Sendable {
    /// A sine of this frequency in Hz, amplitude 0.5.
    case tone(Double)
    /// Uniform white noise in ±0.5 from a fixed seed: every stretch of it is unlike every
    /// other, so cross-correlation finds where a piece of output came from.
    case noise(seed: UInt64)
}

/// A decoder that computes its stream: `frameCount` frames of one signal per channel, seekable
/// to any frame, and optionally failing (`AudioError.Code.corruptData`) once it reaches
/// `failAtFrame`, after giving the frames before it.
final class SignalDecoder: AudioDecoder {
    let format: AudioFormat
    /// Frames really in the stream.
    let realFrameCount: Int
    /// What the decoder claims, as a header might: the real count unless told otherwise.
    let claimedFrameCount: Int?
    var frameCount: Int { claimedFrameCount ?? realFrameCount }
    var isFrameCountExact: Bool { claimedFrameCount == nil }
    private(set) var position = 0
    let signals: [TestSignal]
    let failAtFrame: Int?
    private let noise: [[Float]]
    var info: AudioFileInfo { AudioFileInfo(container: "test", codec: "synthetic") }
    var warnings: [DecodeWarning] { [] }

    init(sampleRate: Double = 44_100, signals: [TestSignal], frameCount: Int, failAtFrame: Int? = nil,
         claimedFrameCount: Int? = nil) throws {
        format = try AudioFormat(sampleRate: sampleRate, channelCount: signals.count)
        realFrameCount = frameCount
        self.claimedFrameCount = claimedFrameCount
        self.signals = signals
        self.failAtFrame = failAtFrame
        noise = signals.map { signal in
            guard case .noise(let seed) = signal else { return [] }
            var state = seed
            return (0..<frameCount).map { _ in
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return Float(Double(state >> 40) / Double(1 << 24) - 0.5)
            }
        }
    }

    /// Sample `frame` of channel `channel`.
    func sample(_ frame: Int, channel: Int) -> Float {
        switch signals[channel] {
        case .tone(let hz): Float(0.5 * sin(2 * Double.pi * hz * Double(frame) / format.sampleRate))
        case .noise: noise[channel][frame]
        }
    }

    /// Channel `channel` of frames `range`.
    func samples(_ range: Range<Int>, channel: Int = 0) -> [Float] { range.map { sample($0, channel: channel) } }

    func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int {
        let channels = format.channelCount
        var end = min(realFrameCount, position + buffer.count / channels)
        if let failAtFrame {
            if position >= failAtFrame { throw AudioError(.corruptData, "test stream fails at frame \(failAtFrame)") }
            end = min(end, failAtFrame)
        }
        for frame in position..<end {
            for c in 0..<channels { buffer[(frame - position) * channels + c] = sample(frame, channel: c) }
        }
        defer { position = end }
        return end - position
    }

    func seek(toFrame frame: Int) throws {
        guard (0...realFrameCount).contains(frame) else {
            throw AudioError(.outOfRange, "frame \(frame) is outside 0...\(realFrameCount)")
        }
        position = frame
    }
}

enum Analysis {
    /// Channel `channel` of interleaved `samples`.
    static func channel(_ samples: [Float], _ channel: Int, of channels: Int) -> [Float] {
        stride(from: channel, to: samples.count, by: channels).map { samples[$0] }
    }

    /// Magnitude of the Hann-windowed DFT of `x` at `hz` (Goertzel's recurrence).
    static func magnitude(_ x: [Float], window: [Double], at hz: Double, sampleRate: Double) -> Double {
        let w = 2 * Double.pi * hz / sampleRate
        let coefficient = 2 * cos(w)
        var s1 = 0.0, s2 = 0.0
        x.withUnsafeBufferPointer { p in
            window.withUnsafeBufferPointer { h in
                for i in 0..<p.count {
                    let s0 = Double(p[i]) * h[i] + coefficient * s1 - s2
                    s2 = s1
                    s1 = s0
                }
            }
        }
        return sqrt(max(0, s1 * s1 + s2 * s2 - coefficient * s1 * s2))
    }

    /// The frequency of the highest peak of `x`'s spectrum within `range` Hz, found on a
    /// 2 Hz grid and refined to 0.05 Hz. `x` is analysed over its middle 16384 frames.
    static func dominantFrequency(_ x: [Float], sampleRate: Double, in range: ClosedRange<Double> = 200...1200) -> Double {
        let n = min(16_384, x.count)
        let start = (x.count - n) / 2
        let piece = Array(x[start..<(start + n)])
        let window = (0..<n).map { 0.5 - 0.5 * cos(2 * Double.pi * Double($0) / Double(n - 1)) }
        func peak(_ grid: StrideThrough<Double>) -> Double {
            var best = range.lowerBound, bestMagnitude = -1.0
            for hz in grid {
                let m = magnitude(piece, window: window, at: hz, sampleRate: sampleRate)
                if m > bestMagnitude { (best, bestMagnitude) = (hz, m) }
            }
            return best
        }
        let coarse = peak(stride(from: range.lowerBound, through: range.upperBound, by: 2))
        return peak(stride(from: coarse - 2, through: coarse + 2, by: 0.05))
    }

    /// Spectrum magnitude at `hz` over the middle 16384 frames (same window as
    /// `dominantFrequency`).
    static func magnitude(_ x: [Float], at hz: Double, sampleRate: Double) -> Double {
        let n = min(16_384, x.count)
        let start = (x.count - n) / 2
        let window = (0..<n).map { 0.5 - 0.5 * cos(2 * Double.pi * Double($0) / Double(n - 1)) }
        return magnitude(Array(x[start..<(start + n)]), window: window, at: hz, sampleRate: sampleRate)
    }

    /// Where in `source` the `length` frames of `output` from `outputFrame` on came from: the
    /// source frame within `around ± reach` whose following frames correlate best with them
    /// (normalised), and that correlation.
    static func origin(of output: [Float], at outputFrame: Int, length: Int = 128, in source: [Float],
                       around: Int, reach: Int) -> (frame: Int, correlation: Double) {
        var best = (frame: around, correlation: -2.0)
        output.withUnsafeBufferPointer { o in
            source.withUnsafeBufferPointer { s in
                var energyOut = 0.0
                for j in 0..<length { energyOut += Double(o[outputFrame + j]) * Double(o[outputFrame + j]) }
                let lower = max(0, around - reach), upper = min(s.count - length, around + reach)
                guard lower <= upper else { return }
                for candidate in lower...upper {
                    var dot = 0.0, energySource = 0.0
                    for j in 0..<length {
                        let a = Double(o[outputFrame + j]), b = Double(s[candidate + j])
                        dot += a * b
                        energySource += b * b
                    }
                    let c = dot / max(1e-20, (energyOut * energySource).squareRoot())
                    if c > best.correlation { best = (candidate, c) }
                }
            }
        }
        return best
    }

    /// Root mean square of `x[range]`.
    static func rms(_ x: [Float], _ range: Range<Int>) -> Double {
        guard !range.isEmpty else { return 0 }
        return (x[range].reduce(0.0) { $0 + Double($1) * Double($1) } / Double(range.count)).squareRoot()
    }
}

extension AudioDecoder {
    /// Reads to the end in reads of `chunkFrames`, returning the frames and the error that
    /// ended them, if any.
    func readAll(chunkFrames: Int = 1000) -> (samples: [Float], error: (any Error)?) {
        var all: [Float] = []
        var buffer = [Float](repeating: 0, count: chunkFrames * format.channelCount)
        while true {
            do {
                let got = try buffer.withUnsafeMutableBufferPointer { try read(into: $0) }
                if got == 0 { return (all, nil) }
                all += buffer[0..<(got * format.channelCount)]
            } catch {
                return (all, error)
            }
        }
    }
}
