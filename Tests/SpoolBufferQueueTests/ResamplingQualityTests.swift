import Foundation
import Testing
import SpoolCore
@testable import SpoolBufferQueue
@testable import SpoolResampling
import SpoolTestSupport

/// The engine's three conversion levels: each converts a stepped sweep of tones (44.1 → 48 kHz)
/// at its floor, measured against the exact sine at each output frame's source instant, with
/// no fit: a shifted, stretched or noisy conversion fails.
@Suite("Resampling quality levels")
struct ResamplingQualityTests {
    /// The floor each level keeps on every tone of the sweep (the worst of the table
    /// `spool bench resample` measured, less a margin: libswresample's 16 taps reach 57 dB at
    /// 15 kHz, its 32 taps with cutoff 0.85 91 dB, libsoxr HQ 104 dB).
    static func floor(_ quality: ResamplingQuality) -> Double {
        switch quality {
        case .fast: 50
        case .balanced: 85
        case .high: 95
        }
    }

    static let tones = [250.0, 1_000, 3_000, 6_000, 10_000, 15_000]

    @Test(arguments: ResamplingQuality.allCases)
    func eachLevelConvertsASweepAtItsFloor(_ quality: ResamplingQuality) throws {
        var worst = Double.infinity
        for frequency in Self.tones {
            let (engine, device) = try makeOfflineEngine()
            let format = try AudioFormat(sampleRate: 44_100, channelCount: 1)
            let queue = try BufferQueue(format: format, engine: engine, quality: quality) { _, _ in }
            #expect(queue.resamplingQuality == quality)
            try queue.setPan(-1)  // unity gain on the left channel
            try queue.enqueue(try filledBuffer(queue, sine(frequency: frequency, rate: 44_100, frames: 22_050, channels: 1)))
            try queue.start()
            let left = channel(try device.render(frames: 24_000).samples, 0, of: 2)
            // Away from the ends, where the filters ring against the silence around the tone.
            var signal = 0.0, noise = 0.0
            for n in 2_000..<22_000 {
                let ideal = 0.5 * sin(2 * Double.pi * frequency * Double(n) * 44_100 / 48_000 / 44_100)
                signal += ideal * ideal
                noise += (Double(left[n]) - ideal) * (Double(left[n]) - ideal)
            }
            let snr = 10 * log10(signal / max(noise, 1e-30))
            #expect(snr >= Self.floor(quality), "\(quality): \(frequency) Hz at \(snr) dB")
            worst = min(worst, snr)
        }
        // The levels differ: each is a real choice of converter.
        if quality == .fast { #expect(worst < Self.floor(.balanced), "fast is not balanced: \(worst) dB") }
    }

    @Test func anEngineGivesItsLevelToTheQueuesMadeOnIt() throws {
        let (engine, _) = try makeOfflineEngine()
        #expect(engine.resamplingQuality == .high, "high is the default")
        engine.resamplingQuality = .fast
        let format = try AudioFormat(sampleRate: 44_100, channelCount: 2)
        let queue = try BufferQueue(format: format, engine: engine) { _, _ in }
        #expect(queue.resamplingQuality == .fast)
        let asked = try BufferQueue(format: format, engine: engine, quality: .balanced) { _, _ in }
        #expect(asked.resamplingQuality == .balanced)
        #expect(VoiceResampler.fixedKind(.fast) == .swrFilter16 && VoiceResampler.fixedKind(.high) == .soxrHQ)
    }

    @Test("switching levels while playing never clicks and keeps the tone's place", arguments: [44_100.0, 22_050.0, 8_000.0])
    func switchingLevelsWhilePlayingNeverClicks(sourceRate: Double) throws {
        let (engine, device) = try makeOfflineEngine(periodFrames: 128)
        let format = try AudioFormat(sampleRate: sourceRate, channelCount: 1)
        let queue = try BufferQueue(format: format, engine: engine, quality: .fast) { _, _ in }
        try queue.setPan(-1)
        try queue.enqueue(try filledBuffer(queue, sine(frequency: 300, rate: sourceRate, frames: Int(sourceRate * 3), channels: 1)))
        try queue.start()
        var left: [Float] = []
        let levels: [ResamplingQuality] = [.balanced, .high, .fast, .high, .balanced, .fast]
        for (k, level) in levels.enumerated() {
            // Each level for 40 to 90 periods of 128 frames: the 20 ms switch ends well inside.
            for _ in 0..<(40 + 10 * k) { left += channel(try device.render(frames: 128).samples, 0, of: 2) }
            try queue.setResamplingQuality(level)
            #expect(queue.resamplingQuality == level)
        }
        for _ in 0..<40 { left += channel(try device.render(frames: 128).samples, 0, of: 2) }
        // A 300 Hz sine's slope bounds every step; a jump between converters would pass it.
        let slopeLimit = Float(2 * Double.pi * 300 / 48_000 * 0.5 * 1.02)
        // Past the onset, which rings through any band-limited filter.
        let steps = zip(left[480...], left[481...]).map { abs($1 - $0) }
        #expect((steps.max() ?? 0) <= slopeLimit, "largest step \(steps.max() ?? 0), limit \(slopeLimit)")
        // The tone keeps its place through every switch: each output frame is the sine at its
        // own source instant (frame n sounds source time n × rate / 48 000), no frame lost or
        // repeated, to within the fast level's floor.
        var signal = 0.0, noise = 0.0
        for n in 2_000..<left.count {
            let ideal = 0.5 * sin(2 * Double.pi * 300 * Double(n) / 48_000)
            signal += ideal * ideal
            noise += (Double(left[n]) - ideal) * (Double(left[n]) - ideal)
        }
        let snr = 10 * log10(signal / max(noise, 1e-30))
        #expect(snr >= 50, "\(snr) dB against the tone at every frame's own instant")
        #expect(queue.underrunCount == 0)
    }
}
