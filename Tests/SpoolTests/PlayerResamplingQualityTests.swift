import Foundation
import Spool
import Testing
import SpoolTestSupport

/// Resampling quality through the seam and the player, on both back-ends: a voice made at a
/// level reports it, a level changed while playing crossfades without a click, and both
/// back-ends play the same samples at each level.
@Suite("Resampling quality on both back-ends")
struct ResamplingQualitySeamTests {
    static let mono44 = try! AudioFormat(sampleRate: 44_100, channelCount: 1)

    /// Renders a 300 Hz tone at 44.1 kHz through a player at `levels` in turn (each for
    /// `periods` renders of 256 frames), changing the level while it plays.
    static func render(_ kind: Backend, levels: [ResamplingQuality], periods: Int = 40) throws -> (out: [Float], player: AudioPlayer) {
        let rig = try Rig(kind)
        let tone = try sine(300, frames: 44_100 * 2, format: mono44, amplitude: 0.5)
        let player = try AudioPlayer(buffer: tone, backend: rig.backend)
        try player.setResamplingQuality(levels[0])
        try player.play()
        var out: [Float] = []
        for level in levels {
            try player.setResamplingQuality(level)
            #expect(player.resamplingQuality == level)
            out += try rig.render(256 * periods)
        }
        return (out, player)
    }

    @Test(arguments: Backend.allCases)
    func aLevelChangedWhilePlayingCrossfadesWithoutAClick(_ kind: Backend) throws {
        let (out, _) = try Self.render(kind, levels: [.fast, .high, .balanced, .fast])
        let left = channel(out, 0)
        let sounding = try #require(left.firstIndex { $0 != 0 })
        // Past the onset, every step is within a 300 Hz sine's slope (both channels carry the
        // mono tone at unity at pan 0).
        let limit = Float(2 * Double.pi * 300 / 48_000 * 0.5 * 1.02)
        let steps = zip(left[(sounding + 480)...], left[(sounding + 481)...]).map { abs($1 - $0) }
        #expect((steps.max() ?? 1) <= limit, "largest step \(steps.max() ?? 1), limit \(limit)")
        #expect(left[(sounding + 480)...].allSatisfy { abs($0) <= 0.5 * 1.001 })
    }

    @Test(arguments: ResamplingQuality.allCases)
    func bothBackEndsPlayTheSameSamplesAtEachLevel(_ level: ResamplingQuality) throws {
        let queue = try Self.render(.queue, levels: [level]).out
        let openAL = try Self.render(.openAL, levels: [level]).out
        let q = try #require(queue.firstIndex { $0 != 0 }), o = try #require(openAL.firstIndex { $0 != 0 })
        let n = min(queue.count - q, openAL.count - o) - 2
        let value = snr(Array(openAL[o..<(o + n)]), Array(queue[q..<(q + n)]))
        #expect(value >= 80, "\(level): \(value) dB between the back-ends")
    }
}
