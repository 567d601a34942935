import Foundation
import SpoolCore
import Testing
@testable import SpoolResampling
import SpoolTestSupport

/// A resampler taken back from a voice that is gone plays a new voice exactly as a new one
/// would, whatever the voice before did with it (varispeed, a change of level, a source cut
/// short); the pool gives only one of the shape asked for, and keeps no more than it may.
@Suite("Voice resampler pool")
struct VoiceResamplerPoolTests {
    /// 44.1 kHz stereo: a 440 Hz tone on the left, 1 kHz on the right, 2 s.
    static let source: [Float] = {
        (0..<88_200).flatMap { n -> [Float] in
            let t = Double(n) / 44_100
            return [Float(0.5 * sin(2 * .pi * 440 * t)), Float(0.4 * sin(2 * .pi * 1_000 * t))]
        }
    }()

    struct Step {
        var frames: Int
        var rate: Float = 1
        var quality: ResamplingQuality?
        var sourceEndsAt: Int?
    }

    /// Renders `steps` in 256-frame calls from the start of `source`, to 48 kHz.
    static func render(_ resampler: VoiceResampler, _ steps: [Step]) -> [Float] {
        var position = 0
        var end = Int.max
        var out: [Float] = []
        let block = UnsafeMutablePointer<Float>.allocate(capacity: 256 * 2)
        defer { block.deallocate() }
        for step in steps {
            if let quality = step.quality { resampler.setQuality(quality) }
            if let cut = step.sourceEndsAt { end = cut }
            var done = 0
            while done < step.frames {
                let n = min(256, step.frames - done)
                let got = resampler.render(into: block, frames: n, playbackRate: step.rate) { pointer, frames in
                    let take = max(0, min(frames, end - position))
                    let count = source.count / 2
                    for frame in 0..<take {
                        let at = (position + frame) % count
                        pointer[frame * 2] = source[at * 2]
                        pointer[frame * 2 + 1] = source[at * 2 + 1]
                    }
                    position += take
                    return take
                }
                out += UnsafeBufferPointer(start: block, count: got * 2)
                if got < n { return out }
                done += n
            }
        }
        return out
    }

    static func take(_ pool: VoiceResamplerPool, ratio: Double = 48_000 / 44_100,
                     quality: ResamplingQuality = .balanced) throws -> VoiceResampler {
        try pool.take(channelCount: 2, sourceRate: 44_100, ratio: ratio, maximumFrames: 256, declickFrames: 240, quality: quality)
    }

    /// What a voice plays after another: 0.3 s at 1, a glide to 1.25 and back, 0.2 s more.
    static let next = [Step(frames: 14_400), Step(frames: 9_600, rate: 1.25), Step(frames: 9_600, rate: 1)]

    @Test("a resampler taken back after varispeed, a level change and an ended source plays like a new one",
          arguments: ResamplingQuality.allCases)
    func aReusedResamplerPlaysAsANewOne(_ quality: ResamplingQuality) throws {
        let pool = VoiceResamplerPool(capacity: 4)
        let first = try Self.take(pool, quality: .fast)
        let before = Self.render(first, [Step(frames: 9_000, rate: 0.7), Step(frames: 7_000, rate: 1.6, quality: .high),
                                         Step(frames: 400_000, quality: quality),
                                         Step(frames: 20_000, sourceEndsAt: 380_000)])
        #expect(before.count < 436_000 * 2, "the first voice's source ran out")
        #expect(first.needsRenewal, "the first voice fed a fixed stream")
        pool.give(first)
        pool.settle()
        #expect(pool.count == 1)
        #expect(!first.needsRenewal, "the streams it fed were made anew")

        let reused = try Self.take(pool, quality: quality)
        #expect(reused === first, "the pool gave back the resampler of the same shape")
        #expect(pool.count == 0)
        #expect(reused.quality == quality)
        let again = Self.render(reused, Self.next)
        let fresh = Self.render(try Self.take(VoiceResamplerPool(capacity: 0), quality: quality), Self.next)
        #expect(again.count == fresh.count && again.count == 33_600 * 2)
        let differing = zip(again, fresh).filter { $0 != $1 }.count
        let worst = zip(again, fresh).map { abs($0 - $1) }.max() ?? 0
        #expect(differing == 0, "\(differing) of \(fresh.count) samples differ from a new resampler's at \(quality), by up to \(worst)")
    }

    @Test func onlyTheShapeAskedForIsTakenAndThePoolKeepsItsCapacity() throws {
        let pool = VoiceResamplerPool(capacity: 2)
        let made = try (0..<3).map { _ in try Self.take(pool) }
        for resampler in made { pool.give(resampler) }
        pool.settle()
        #expect(pool.count == 2, "the oldest let go past the capacity")
        let other = try Self.take(pool, ratio: 48_000 / 32_000)
        #expect(!made.contains { $0 === other } && pool.count == 2, "another ratio is not taken from the pool")
        let mono = try pool.take(channelCount: 1, sourceRate: 44_100, ratio: 48_000 / 44_100, maximumFrames: 256,
                                 declickFrames: 240, quality: .balanced)
        #expect(!made.contains { $0 === mono } && pool.count == 2, "nor another channel count")
        let same = try Self.take(pool)
        #expect(same === made[2], "the last given back is taken first")
        #expect(pool.count == 1)
        pool.removeAll()
        #expect(pool.count == 0)
        let none = VoiceResamplerPool(capacity: 0)
        none.give(same)
        none.settle()
        #expect(none.count == 0)
    }
}
