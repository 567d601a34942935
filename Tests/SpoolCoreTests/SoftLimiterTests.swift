import Foundation
import SpoolCore
import Testing

/// `SoftLimiter`: bit for bit below −1 dBFS, a smooth knee above that never passes 1.
@Suite("SoftLimiter")
struct SoftLimiterTests {
    @Test func samplesAtOrBelowTheThresholdPassBitForBit() {
        let t = SoftLimiter.threshold
        var values: [Float] = [0, -0, t, -t, t.nextDown, -t.nextDown, .leastNonzeroMagnitude, 0.5, -0.3]
        for i in 0...100_000 { values.append(t * Float(i) / 100_000) }
        for value in values + values.map(-) {
            #expect(SoftLimiter.limit(value).bitPattern == value.bitPattern, "\(value)")
        }
        #expect(SoftLimiter.limit(.nan).isNaN)
    }

    @Test func aboveTheThresholdTheKneeRisesSmoothlyAndNeverPassesFullScale() {
        let t = SoftLimiter.threshold
        var previous = t
        for i in 1...200_000 {
            let x = t + Float(i) * 0.000_05  // up to 10.9
            let y = SoftLimiter.limit(x)
            #expect(y <= 1, "\(x) → \(y)")
            #expect(y >= previous, "rises: \(x) → \(y) after \(previous)")
            #expect(SoftLimiter.limit(-x) == -y, "odd")
            previous = y
        }
        // The same slope as the line at the threshold: no corner.
        let step: Float = 0.000_01
        let slope = (SoftLimiter.limit(t + step) - t) / step
        #expect(abs(slope - 1) < 0.01, "slope at the threshold: \(slope)")
        #expect(SoftLimiter.limit(1.54) < 1 && SoftLimiter.limit(1.54) > 0.98)
        #expect(SoftLimiter.limit(.infinity) == 1)
        #expect(SoftLimiter.limit(-.infinity) == -1)
        #expect(SoftLimiter.limit(1e30) == 1)
    }

    @Test func processingABufferIsEachSampleLimited() {
        var samples: [Float] = (0..<4_096).map { i in Float(sin(Double(i) * 0.01)) * 2.1 }
        let expected = samples.map(SoftLimiter.limit)
        samples.withUnsafeMutableBufferPointer { SoftLimiter.process($0.baseAddress!, count: $0.count) }
        #expect(samples == expected)
        #expect(samples.map(abs).max()! <= 1)
    }
}
