import Dispatch
import Foundation
import Spool
import Testing
import SpoolTestSupport

/// The output limiter on both back-ends, rendered offline: overlapping sounds that would pass
/// full scale stay within it, and a mix below −1 dBFS is untouched.
@Suite("Output limiter on both back-ends")
struct OutputLimiterTests {
    /// Seven plays of a 0.3-peak tone, started a few samples apart: the largest sample of
    /// what renders.
    static func peakOfSevenEffects(_ kind: Backend, limiter: Bool) throws -> Float {
        let rig = try Rig(kind)
        let queue = DispatchQueue(label: "test.limiter")
        let effects = try SoundEffects(backend: rig.backend, eventQueue: queue, outputLimiter: limiter)
        #expect(rig.backend.outputLimiter == limiter)
        let tone = try sine(440, frames: 4_800, format: stereo48, amplitude: 0.3)
        let sound = try SystemSound(buffer: tone, effects: effects)
        var out: [Float] = []
        for _ in 0..<7 {
            try sound.play()
            out += try rig.render(8)
        }
        out += try rig.render(until: { effects.playingCount == 0 }, limit: 48_000)
        queue.sync {}
        return out.map(abs).max() ?? 0
    }

    @Test(arguments: Backend.allCases)
    func sevenOverlappingEffectsStayWithinFullScale(_ kind: Backend) throws {
        let limited = try Self.peakOfSevenEffects(kind, limiter: true)
        let unlimited = try Self.peakOfSevenEffects(kind, limiter: false)
        #expect(unlimited > 1.2, "\(kind): without the limiter the mix passes full scale (\(unlimited))")
        #expect(limited <= 1, "\(kind): \(limited)")
        #expect(limited > SoftLimiter.threshold, "\(kind): bent, not cut down: \(limited)")
    }

    /// A file played below −1 dBFS renders the same samples with the limiter on and off.
    @Test(arguments: Backend.allCases)
    func aMixBelowTheThresholdIsBitIdenticalWithTheLimiterOn(_ kind: Backend) throws {
        func render(limiter: Bool) throws -> [Float] {
            let rig = try Rig(kind)
            try rig.backend.setOutputLimiter(limiter)
            let player = try AudioPlayer(contentsOfFile: fixture("flac-44100-stereo-s16.flac"), backend: rig.backend)
            return try player.renderToEnd().samples
        }
        let on = try render(limiter: true), off = try render(limiter: false)
        let peak = off.map(abs).max() ?? 0
        #expect(peak > 0.1 && peak <= SoftLimiter.threshold, "\(kind): the file peaks at \(peak)")
        #expect(on.count == off.count)
        #expect(zip(on, off).allSatisfy { $0.bitPattern == $1.bitPattern }, "\(kind): bit for bit")
    }
}
