import Foundation
import SpoolCore
import Testing
import Spool
@testable import SpoolBenchmarks
import SpoolTestSupport

/// The mix the benchmark times is the mix it claims: its output equals the sum of its voices'
/// sines, computed here from the formula, not from the engine.
@Suite("Mix benchmark output")
struct MixBenchOutputTests {
    /// Renders `frames` of the bench's queue mix and the expected sum; skips the first `skip`.
    private func render(voices: Int, share: Double, frames: Int, skip: Int,
                        quality: ResamplingQuality = .high) throws -> (actual: [Float], expected: [Double]) {
        let (device, queues) = try MixBench.queueMix(voices: voices, periodFrames: 512, convertedShare: share, quality: quality)
        defer { for queue in queues { queue.dispose() } }
        var actual: [Float] = []
        let buffer = UnsafeMutableBufferPointer<Float>.allocate(capacity: 512 * 2)
        defer { buffer.deallocate() }
        while actual.count < frames * 2 {
            try device.render(frames: 512, into: buffer)
            actual += buffer
        }
        var expected = [Double](repeating: 0, count: frames)
        for v in 0..<voices {
            let f = MixBench.voiceFrequency(v)
            for n in 0..<frames { expected[n] += 0.5 * sin(2 * .pi * f * Double(n) / 48_000) / Double(voices) }
        }
        return (Array(actual[(skip * 2)..<(frames * 2)]), Array(expected[skip...]))
    }

    private func snr(_ actual: [Float], _ expected: [Double], channel: Int) -> Double {
        var signal = 0.0, noise = 0.0
        for (n, e) in expected.enumerated() {
            let a = Double(actual[n * 2 + channel])
            signal += e * e
            noise += (a - e) * (a - e)
        }
        return noise == 0 ? .infinity : 10 * log10(signal / noise)
    }

    @Test func unconvertedVoicesSumExactly() throws {
        let (actual, expected) = try render(voices: 8, share: 0, frames: 9600, skip: 1024)
        for channel in 0..<2 {
            #expect(snr(actual, expected, channel: channel) > 110, "channel \(channel)")
        }
    }

    @Test func convertedVoicesSumToTheSameSines() throws {
        let (actual, expected) = try render(voices: 8, share: 1, frames: 9600, skip: 1024)
        for channel in 0..<2 {
            #expect(snr(actual, expected, channel: channel) > 80, "channel \(channel)")
        }
    }

    @Test(arguments: [(ResamplingQuality.fast, 60.0), (.balanced, 80), (.high, 80)])
    func convertedVoicesAtEachLevelSumToTheSameSines(_ quality: ResamplingQuality, _ floor: Double) throws {
        // The voices' tones lie at 220…605 Hz, where even the fast level's 16 taps are clean.
        let (actual, expected) = try render(voices: 8, share: 1, frames: 9600, skip: 1024, quality: quality)
        for channel in 0..<2 {
            #expect(snr(actual, expected, channel: channel) > floor, "\(quality), channel \(channel)")
        }
    }

    /// A run that kept up (nothing dry, no late period) or fell behind (one source ran dry).
    static func run(keptUp: Bool) -> RealTimeRun {
        RealTimeRun(dry: keptUp ? 0 : 1, late: 0, load: RenderLoad.Snapshot())
    }

    @Test func theCapacitySearchFindsTheLargestCountThatPasses() throws {
        var tried: [Int] = []
        let found = try CapacityBench.search(maximum: 1024) { count in
            tried.append(count)
            return Self.run(keptUp: count <= 37)
        }
        #expect(found.passed == 37 && found.failed == 38, "\(found), tried \(tried)")
        #expect(Array(tried.prefix(6)) == [8, 16, 32, 64, 64, 48], "doubling first, a failure tried twice: \(tried)")
        let all = try CapacityBench.search(maximum: 16) { _ in Self.run(keptUp: true) }
        #expect(all.passed == 16 && all.failed == nil, "\(all)")
        let none = try CapacityBench.search(maximum: 64) { _ in Self.run(keptUp: false) }
        #expect(none.passed == 0 && none.failed == 1 && none.passedRuns.isEmpty, "\(none)")
        let unmixable = try CapacityBench.search(maximum: 64) { count in count <= 20 ? Self.run(keptUp: true) : nil }
        #expect(unmixable.passed == 20 && unmixable.failed == 21, "\(unmixable)")
    }

    @Test func aCountThatPassesOnItsSecondTryKeepsBothRuns() throws {
        var tries: [Int: Int] = [:]
        let found = try CapacityBench.search(maximum: 8) { count in
            tries[count, default: 0] += 1
            return Self.run(keptUp: tries[count] == 2)
        }
        #expect(found.passed == 8 && found.passedRuns.count == 2 && !found.passedRuns[0].keptUp, "\(found)")
    }

    @Test func aLatePeriodIsTheMixersOnlyAfterAnOverrun() {
        var load = RenderLoad.Snapshot()
        load.stalls = 2
        load.overruns = 1
        let stalled = RealTimeRun(dry: 0, late: 2, load: load)
        #expect(stalled.keptUp && stalled.lateFromOverruns == 0, "two late periods, both stalls")
        let behind = RealTimeRun(dry: 0, late: 3, load: load)
        #expect(!behind.keptUp && behind.lateFromOverruns == 1, "one late period after an overrun")
        let dry = RealTimeRun(dry: 1, late: 0, load: RenderLoad.Snapshot())
        #expect(!dry.keptUp, "a source ran dry")
    }
}
