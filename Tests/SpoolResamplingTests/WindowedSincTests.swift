import Foundation
import SpoolCore
import Testing
@testable import SpoolResampling
@testable import SpoolBenchmarks
import SpoolTestSupport

/// Spool's own windowed-sinc converter computes what its filter says: each output frame the
/// Kaiser-windowed sinc evaluated in double precision at that frame's instant (stretched by
/// `1 / ratio` below a ratio of 1), whatever the channel count and the pieces it is fed in.
@Suite("Windowed-sinc converter")
struct WindowedSincTests {
    static let kinds: [RateConverterKind] = [.windowedSinc32, .windowedSinc40, .windowedSinc64]

    /// The filter at `x` input frames from the instant, by the formula the table is made from,
    /// scaled as the table is (its points summed over one frame give 1).
    static func reference(_ design: WindowedSincEngine.Design) -> (Double) -> Double {
        func raw(_ x: Double) -> Double {
            let edge = x / Double(design.halfTaps)
            guard abs(edge) < 1 else { return 0 }
            let window = WindowedSincEngine.Table.besselI0(design.beta * (1 - edge * edge).squareRoot())
                / WindowedSincEngine.Table.besselI0(design.beta)
            let y = design.cutoff * x
            return design.cutoff * (y == 0 ? 1 : sin(Double.pi * y) / (Double.pi * y)) * window
        }
        let points = design.pointsPerFrame
        var sum = 0.0
        for i in 0...(2 * design.halfTaps * points) { sum += raw(Double(i) / Double(points) - Double(design.halfTaps)) }
        let gain = Double(points) / sum
        return { raw($0) * gain }
    }

    /// Output frame `k` of `input` (one channel) at `ratio`, evaluated directly.
    static func directFrame(_ k: Int, input: [Float], ratio: Double, filter: (Double) -> Double, halfTaps: Int) -> Double {
        let instant = Double(k) / ratio
        let stretch = min(ratio, 1)
        let reach = Int((Double(halfTaps) / stretch).rounded(.up)) + 1
        let base = Int(instant.rounded(.down))
        var sum = 0.0
        for j in max(0, base - reach)...min(input.count - 1, base + reach) {
            sum += stretch * filter(stretch * (Double(j) - instant)) * Double(input[j])
        }
        return sum
    }

    @Test(arguments: kinds, [48_000.0 / 44_100, 1, 3.7, 44_100.0 / 48_000, 0.68, 0.31])
    func everyFrameIsTheFilterEvaluatedAtItsInstant(kind: RateConverterKind, ratio: Double) throws {
        let design = try #require(kind.windowedSincDesign)
        let filter = Self.reference(design)
        let frames = 6_000
        var generator = SplitMix(seed: 11)
        let noise = (0..<frames).map { _ in Float.random(in: -0.5...0.5, using: &generator) }
        let tones = RateConverterSignal.tones([997, 6_100, 12_300], sampleRate: 44_100, frames: frames)
        // Tones, with a little noise to reach every part of the table.
        let mono = (0..<frames).map { tones[$0] + 0.05 * noise[$0] }
        // Three channels: the same signal, inverted, and halved: each channel converts alone.
        let interleaved = mono.flatMap { [$0, -$0, $0 / 2] }
        for channels in [1, 2, 3] {
            let input = channels == 1 ? mono : channels == 2 ? mono.flatMap { [$0, -$0] } : interleaved
            let converter = try makeRateConverter(kind, channelCount: channels, ratio: ratio)
            let output = RateConverterSignal.convertAll(converter, input: input, periodFrames: 301)
            let outputFrames = output.count / channels
            #expect(abs(Double(outputFrames) - (Double(frames) * ratio).rounded(.up)) <= 1, "\(kind) at \(ratio): \(outputFrames) frames")
            var signal = 0.0, error = 0.0
            for k in stride(from: 0, to: outputFrames, by: 7) {
                let expected = Self.directFrame(k, input: mono, ratio: ratio, filter: filter, halfTaps: design.halfTaps)
                for channel in 0..<channels {
                    let scale = [1.0, -1.0, 0.5][channel]
                    let got = Double(output[k * channels + channel])
                    signal += (expected * scale) * (expected * scale)
                    error += (got - expected * scale) * (got - expected * scale)
                }
            }
            let snr = 10 * log10(signal / max(error, 1e-30))
            #expect(snr >= 90, "\(kind) at \(ratio), \(channels) channels: \(snr) dB against the filter evaluated directly")
        }
    }

    @Test(arguments: kinds)
    func aGlideFromAboveToBelowARatioOfOneStaysContinuous(kind: RateConverterKind) throws {
        // A 500 Hz sine at 44.1 kHz gliding from ratio 1.5 to 0.6 and back, across the change of
        // method at 1: no step larger than the sine's steepest slope allows.
        let converter = try makeRateConverter(kind, channelCount: 1, ratio: 1.5)
        let input = RateConverterSignal.tones([500], sampleRate: 44_100, frames: 200_000)
        var output = [Float](repeating: 0, count: 60_000)
        var used = 0, written = 0
        while written + 256 <= output.count {
            let progress = Double(written) / Double(output.count)
            converter.setRatio(progress < 0.5 ? 1.5 - 1.8 * progress : 0.6 + 1.8 * (progress - 0.5))
            let result = input.withUnsafeBufferPointer { input in
                output.withUnsafeMutableBufferPointer { output in
                    converter.process(
                        input: input.baseAddress! + used, inputFrames: input.count - used,
                        output: output.baseAddress! + written, outputCapacity: 256)
                }
            }
            used += result.inputUsed
            written += result.outputWritten
            try #require(result.outputWritten == 256)
        }
        // At the fastest (ratio 0.6) the sine is 500 / 0.6 Hz at the output's frame spacing.
        let slopeLimit = 2 * Double.pi * (500 / 0.6) / 44_100 * RateConverterSignal.amplitude * 1.02
        var largestStep = 0.0
        for frame in 1..<written {
            largestStep = max(largestStep, abs(Double(output[frame]) - Double(output[frame - 1])))
        }
        #expect(largestStep <= slopeLimit, "\(kind): largest step \(largestStep), limit \(slopeLimit)")
    }
}
