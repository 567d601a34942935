import CAllocationCounter
import Foundation
import Testing
import SpoolCore
@testable import SpoolOutput
@testable import SpoolBufferQueue
@testable import SpoolResampling
import SpoolTestSupport

/// The queue engine's rate conversion: libsoxr at a playback rate of 1, the sinc converter
/// while varispeed, and the switches between them.
@Suite("Queue rate conversion and varispeed")
struct VoiceResamplerTests {
    /// Renders `frames` device frames of the left channel in 256-frame periods.
    func renderLeft(_ device: OfflineDevice, frames: Int) throws -> [Float] {
        var left: [Float] = []
        var done = 0
        while done < frames {
            let n = min(256, frames - done)
            left += channel(try device.render(frames: n).samples, 0, of: 2)
            done += n
        }
        return left
    }

    /// A mono queue panned hard left (unity gain on the left channel) playing a 1 kHz sine of
    /// amplitude 0.5 at `rate`, `seconds` long.
    func sineQueue(rate: Double, seconds: Double, engine: QueueEngine) throws -> BufferQueue {
        let format = try AudioFormat(sampleRate: rate, channelCount: 1)
        let queue = try BufferQueue(format: format, engine: engine) { _, _ in }
        try queue.setPan(-1)
        let frames = Int(rate * seconds)
        try queue.enqueue(try filledBuffer(queue, sine(frequency: 1000, rate: rate, frames: frames, channels: 1)))
        return queue
    }

    /// SNR of `x` against the sine the source would give if every output frame were exactly
    /// where it belongs: `0.5 sin(2π · 1000 · (sourceTime(n)) / sourceRate)`, no fit at all.
    func exactSNR(_ x: ArraySlice<Float>, sourceRate: Double, sourceTime: (Int) -> Double) -> Double {
        var signal = 0.0, noise = 0.0
        for n in x.indices {
            let ideal = 0.5 * sin(2 * Double.pi * 1000 * sourceTime(n) / sourceRate)
            signal += ideal * ideal
            noise += (Double(x[n]) - ideal) * (Double(x[n]) - ideal)
        }
        return 10 * log10(signal / max(noise, 1e-30))
    }

    /// The largest step between neighbouring samples.
    func largestStep(_ x: [Float]) -> Float {
        zip(x, x.dropFirst()).reduce(0) { max($0, abs($1.1 - $1.0)) }
    }

    // MARK: Switching between the fixed-ratio lane and varispeed

    @Test("playback rate 1 → 1.5 → 1 glides without a click and keeps ≥ 90 dB",
          arguments: [44_100.0, 48_000.0, 22_050.0, 8_000.0])
    func rateChangesDoNotClick(sourceRate: Double) throws {
        let (engine, device) = try makeOfflineEngine()
        let queue = try sineQueue(rate: sourceRate, seconds: 3, engine: engine)
        try queue.start()
        var left = try renderLeft(device, frames: 24_000)
        try queue.setPlaybackRate(1.5)
        left += try renderLeft(device, frames: 24_000)
        try queue.setPlaybackRate(1)
        left += try renderLeft(device, frames: 24_000)

        // A sine of amplitude A at frequency f moves at most 2πfA/fs between samples; the highest
        // frequency here is 1.5 kHz. A click (a jump between lanes) is a step far above that.
        let slopeLimit = Float(2 * Double.pi * 1500 / 48_000 * 0.5 * 1.01)
        #expect(largestStep(left) <= slopeLimit, "largest step \(largestStep(left)), limit \(slopeLimit)")
        // No overshoot either, once past the sine's abrupt onset (which rings through any
        // band-limited filter).
        let peak = left[480...].reduce(0) { max($0, abs($1)) }
        #expect(peak <= 0.5 * 1.001, "peak \(peak)")

        // The steady parts: before the change, after the glide to 1.5 (240-frame crossfade and
        // 512-frame glide), and after the way back (glide, 480-frame trim, crossfade).
        for (range, frequency) in [(4_800..<23_800, 1000.0), (26_400..<47_800, 1500.0), (50_400..<72_000, 1000.0)] {
            let part = left[range]
            let measured = zeroCrossingFrequency(part, rate: 48_000)
            #expect(abs(measured - frequency) / frequency < 0.001, "\(range): \(measured) Hz")
            let snr = sineFitSNR(part, frequency: frequency, rate: 48_000)
            #expect(snr >= 90, "\(range): SNR \(snr) dB")
        }
        #expect(queue.underrunCount == 0)
    }

    @Test("rate changes at any moment, mid-crossfade and mid-trim too, never click, at every level",
          arguments: [44_100.0, 48_000.0, 8_000.0, 96_000.0], ResamplingQuality.allCases)
    func rateChangesAtAnyMomentNeverClick(sourceRate: Double, quality: ResamplingQuality) throws {
        let (engine, device) = try makeOfflineEngine(periodFrames: 128)
        let format = try AudioFormat(sampleRate: sourceRate, channelCount: 1)
        let queue = try BufferQueue(format: format, engine: engine, quality: quality) { _, _ in }
        try queue.setPan(-1)
        try queue.enqueue(try filledBuffer(queue, sine(frequency: 300, rate: sourceRate, frames: Int(sourceRate * 6), channels: 1)))
        try queue.start()
        // A fixed pseudo-random walk: a new rate every 1 to 12 periods of 128 frames, 1 half the time.
        var seed: UInt64 = 0x5EED
        func next(_ bound: Int) -> Int {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int(seed >> 33) % bound
        }
        let rates: [Float] = [1, 1, 1, 1, 1, 1, 1, 0.5, 0.75, 0.99, 1.01, 1.25, 1.5, 2]
        var left: [Float] = []
        var changes = 0
        var nextChange = 0
        for period in 0..<1_000 {
            if period == nextChange {
                try queue.setPlaybackRate(rates[next(rates.count)])
                changes += 1
                nextChange = period + 1 + next(12)
            }
            left += channel(try device.render(frames: 128).samples, 0, of: 2)
        }
        // At most 600 Hz (300 Hz at rate 2): a sine's slope bounds every step.
        let slopeLimit = Float(2 * Double.pi * 600 / 48_000 * 0.5 * 1.01)
        #expect(largestStep(left) <= slopeLimit, "largest step \(largestStep(left)), limit \(slopeLimit), \(changes) changes")
        #expect(left.allSatisfy { abs($0) <= 0.5 * 1.001 })
        #expect(queue.underrunCount == 0)
    }

    @Test("currentTime names the source frame sounding, through rate changes", arguments: [44_100.0, 48_000.0])
    func currentTimeFollowsTheConvertedPosition(sourceRate: Double) throws {
        let (engine, device) = try makeOfflineEngine()
        let queue = try sineQueue(rate: sourceRate, seconds: 3, engine: engine)
        try queue.start()
        _ = try renderLeft(device, frames: 9_600)
        #expect(abs(queue.currentTime.sampleTime - 9_600 * sourceRate / 48_000) < 1e-6)
        try queue.setPlaybackRate(1.5)
        _ = try renderLeft(device, frames: 9_600)
        try queue.setPlaybackRate(0.75)
        _ = try renderLeft(device, frames: 9_600)
        try queue.setPlaybackRate(1)
        _ = try renderLeft(device, frames: 9_600)
        // The next frames sound the source from `currentTime` on, at rate 1: their phase says
        // which source frame they are, to a fraction of a frame.
        let time = queue.currentTime.sampleTime
        let next = try renderLeft(device, frames: 4_096)
        let snr = exactSNR(next[...], sourceRate: sourceRate) { time + Double($0) * sourceRate / 48_000 }
        #expect(snr >= 80, "SNR \(snr) dB against the sine at source time \(time)")
        #expect(queue.framesPlayed >= Int(time))
    }

    @Test("libsoxr reads at most 30 ms of source ahead of what is heard",
          arguments: [8_000.0, 16_000.0, 22_050.0, 32_000.0, 44_100.0, 96_000.0, 192_000.0])
    func readAheadIsBounded(sourceRate: Double) throws {
        let (engine, device) = try makeOfflineEngine()
        let queue = try sineQueue(rate: sourceRate, seconds: 2, engine: engine)
        try queue.start()
        var worst = 0.0
        for _ in 0..<200 {
            _ = try device.render(frames: 256)
            // Read from the buffers, less heard: what the converters hold.
            worst = max(worst, Double(queue.framesPlayed) - queue.currentTime.sampleTime)
        }
        #expect(worst <= sourceRate * VoiceResampler.maximumReadAheadSeconds, "read \(worst) frames ahead")
    }

    // MARK: Where the converted audio starts

    @Test func aConvertedQueueStartsOnItsFirstFrame() throws {
        let (engine, device) = try makeOfflineEngine()
        let queue = try sineQueue(rate: 44_100, seconds: 1, engine: engine)
        try queue.start()
        let left = try renderLeft(device, frames: 48_000)
        // Output frame n sounds source time n × 44.1/48: libsoxr's warm-up left no delay.
        let snr = exactSNR(left[1_000..<40_000], sourceRate: 44_100) { Double($0) * 44_100 / 48_000 }
        #expect(snr >= 90, "SNR \(snr) dB against the sine with no time shift")
        #expect(abs(left[0]) < 1e-3)  // sin(0), through a centred filter
    }

    @Test func aQueueStartedAtAnotherRatePlaysVarispeedFromItsFirstFrame() throws {
        let (engine, device) = try makeOfflineEngine()
        let queue = try sineQueue(rate: 44_100, seconds: 1, engine: engine)
        try queue.setPlaybackRate(1.25)
        try queue.start()
        let left = try renderLeft(device, frames: 24_000)
        let snr = exactSNR(left[1_000..<24_000], sourceRate: 44_100) { Double($0) * 1.25 * 44_100 / 48_000 }
        #expect(snr >= 90, "SNR \(snr) dB")
    }

    @Test func afterAResetTheNextBufferStartsAtOnce() throws {
        let (engine, device) = try makeOfflineEngine()
        let queue = try sineQueue(rate: 44_100, seconds: 1, engine: engine)
        try queue.start()
        _ = try renderLeft(device, frames: 10_000)
        try queue.reset()
        try queue.enqueue(try filledBuffer(queue, sine(frequency: 1000, rate: 44_100, frames: 22_050, channels: 1)))
        let left = try renderLeft(device, frames: 20_000)
        let snr = exactSNR(left[200..<20_000], sourceRate: 44_100) { Double($0) * 44_100 / 48_000 }
        #expect(snr >= 90, "SNR \(snr) dB: the new buffer starts on the first frame after the reset")
    }

    @Test(arguments: [(44_100.0, 1.0), (44_100.0, 1.5), (22_050.0, 1.0), (96_000.0, 1.0), (48_000.0, 0.5)])
    func aDrainedConvertedQueuePlaysEveryFrameThenStops(sourceRate: Double, playbackRate: Float) throws {
        let (engine, device) = try makeOfflineEngine()
        let queue = try sineQueue(rate: sourceRate, seconds: 0.5, engine: engine)
        try queue.setPlaybackRate(playbackRate)
        try queue.start()
        try queue.stop(immediately: false)
        let expected = 0.5 * 48_000 / Double(playbackRate)
        let left = try renderLeft(device, frames: Int(expected) + 4_096)
        let last = left.lastIndex { abs($0) > 1e-4 } ?? 0
        #expect(abs(Double(last + 1) - expected) <= 2, "last sounding frame \(last), expected about \(expected)")
        #expect(!queue.isRunning)
        #expect(queue.framesPlayed == Int(sourceRate * 0.5))
        #expect(queue.underrunCount == 0)
    }

    // MARK: Real time

    /// Drives a real-time engine's render entry point on this thread and counts the heap
    /// allocations of the render calls alone, while control calls in between switch the
    /// playback rate back and forth, reset, stop and start queues at several rates.
    @Test(arguments: ResamplingQuality.allCases)
    func switchingLanesAllocatesNothingOnTheRenderThread(_ quality: ResamplingQuality) throws {
        let device = try NullDevice(configuration: OutputConfiguration(sampleRate: 48_000, periodFrames: 256, periodCount: 2))
        let engine = QueueEngine(device: device)  // not started: this test is its render thread
        engine.startsBelowFloor = false  // which makes no rewind pass
        let refill: BufferQueue.OutputCallback = { queue, buffer in try? queue.enqueue(buffer) }
        var queues: [BufferQueue] = []
        for (rate, channels) in [(44_100.0, 2), (48_000.0, 2), (22_050.0, 1), (96_000.0, 2), (8_000.0, 1)] {
            let queue = try BufferQueue(format: AudioFormat(sampleRate: rate, channelCount: channels), engine: engine,
                                        quality: quality, callback: refill)
            for _ in 0..<4 {
                let frames = Int(rate / 10)
                try queue.enqueue(try filledBuffer(queue, sine(frequency: 440, rate: rate, frames: frames, channels: channels)))
            }
            try queue.start()
            queues.append(queue)
        }
        // `start` starts the engine's device too; stopped, it leaves this thread as the only
        // render thread.
        engine.stop()
        let buffer = UnsafeMutablePointer<Float>.allocate(capacity: 256 * 2)
        defer { buffer.deallocate() }
        var sampleTime: Int64 = 0
        var allocations: UInt64 = 0
        func periods(_ count: Int) {
            for _ in 0..<count {
                spool_allocation_counting_begin()
                engine.render(into: buffer, frames: 256, timestamp: RenderTimestamp(sampleTime: sampleTime, hostTime: HostTime.now()))
                allocations += spool_allocation_counting_end()
                sampleTime += 256
            }
        }
        periods(20)  // warm-up: first commands, the Swift runtime's first uses
        allocations = 0
        for rate: Float in [1.5, 1, 0.5, 2, 1, 1.25, 1] {
            for queue in queues { try queue.setPlaybackRate(rate) }
            periods(30)
        }
        for queue in queues {
            try queue.reset()  // returns every buffer; the refill cannot enqueue during a reset
            let frames = Int(queue.format.sampleRate / 10), channels = queue.format.channelCount
            for _ in 0..<4 {
                try queue.enqueue(try filledBuffer(queue, sine(frequency: 440, rate: queue.format.sampleRate, frames: frames, channels: channels)))
            }
        }
        periods(10)
        for queue in queues { try queue.setPlaybackRate(1.5) }
        periods(10)
        for queue in queues { try queue.stop(immediately: true) }
        periods(5)
        for queue in queues { try queue.start() }
        engine.stop()
        periods(30)
        #expect(allocations == 0)
        #expect(queues.allSatisfy { $0.framesPlayed > 0 })
    }
}
