import Foundation
import Spool
import Testing
import SpoolTestSupport

/// Every public entry point that takes a time, given ±infinity, NaN, ±1e300: a clear
/// `.invalidParameter` for what is no time, a clamp for a finite time past the end, and never
/// a trap (`Int(_:)` of such a value traps).
@Suite("Times that are no time, or far too long")
struct ExtremeTimeTests {
    static let refused: [Double] = [.infinity, -.infinity, .nan, -1e300]

    static func tone(seconds: Double = 0.1) throws -> PCMBuffer {
        try sine(440, frames: Int(48_000 * seconds), format: stereo48, amplitude: 0.4)
    }

    @Test(arguments: Backend.allCases)
    func currentTimeRefusesNoTimeAndClampsAHugeOneToTheEnd(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let (player, _) = try makePlayer(rig, try Self.tone())
        for time in Self.refused {
            expectError(.invalidParameter, "setCurrentTime(\(time))") { try player.setCurrentTime(time) }
        }
        try player.setCurrentTime(1e300)
        #expect(player.currentTime == player.duration, "clamped to the end: \(player.currentTime) of \(player.duration)")
        try player.play()
        let out = try rig.render(until: { !player.isPlaying }, limit: 48_000)
        #expect(!player.isPlaying, "a player at its end finishes at once")
        #expect(out.allSatisfy { abs($0) < 1e-3 }, "nothing of the tone plays from its end")
    }

    @Test(arguments: Backend.allCases)
    func playAtTimeRefusesNoTimeAndWaitsForAFarOne(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let (player, _) = try makePlayer(rig, try Self.tone())
        for time in Self.refused {
            expectError(.invalidParameter, "play(atTime: \(time))") { try player.play(atTime: time) }
        }
        try player.play(atTime: 1e300)
        let out = try rig.render(4_800)
        #expect(player.isPlaying)
        #expect(out.allSatisfy { $0 == 0 }, "a start scheduled that far ahead plays nothing yet")
        try player.stop()
    }

    @Test(arguments: Backend.allCases)
    func aFadeOfAHugeDurationIsTakenAndNoTimeIsRefused(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let (player, _) = try makePlayer(rig, try Self.tone(seconds: 0.5))
        for time in Self.refused {
            expectError(.invalidParameter, "setVolume(fadeDuration: \(time))") { try player.setVolume(0.5, fadeDuration: time) }
        }
        try player.play()
        _ = try rig.render(2_400)
        try player.setVolume(0, fadeDuration: 1e300)
        let out = try rig.render(4_800)
        // Over a fade of 1e300 s the gain does not move audibly in 0.1 s.
        let loud = rms(out.suffix(2_400))
        #expect(loud > 0.2, "the tone still plays at about its level: rms \(loud)")
        for time in Self.refused {
            expectError(.invalidParameter, "voice.setVolume(rampSeconds: \(time))") {
                try rig.voice(stereo48).setVolume(0.5, rampSeconds: time)
            }
        }
        let voice = try rig.voice(stereo48)
        try voice.setVolume(0.2, rampSeconds: 1e300)
        voice.dispose()
    }

    @Test(arguments: Backend.allCases)
    func aPlaylistStartTimeRefusesNoTimeAndSkipsAnItemStartingPastItsEnd(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let playlist = try Playlist(items: [.buffer(try Self.tone()), .buffer(try Self.tone())], backend: rig.backend)
        for time in Self.refused {
            let error = #expect(throws: AudioError.self) { try playlist.setStartTime(time, forItemAt: 0) }
            #expect(error?.code == .invalidParameter)
            #expect(error?.message.contains("finite") == true, "\(error?.message ?? "")")
        }
        try playlist.setStartTime(1e300, forItemAt: 0)
        try playlist.play()
        let out = try rig.render(until: { playlist.player.state == .stopped }, limit: 48_000)
        // Only the second item's 0.1 s plays; the first starts past its end and is skipped.
        let sounding = out.indices.filter { abs(out[$0]) > 0.01 }
        #expect(!sounding.isEmpty && (sounding.last! - sounding.first!) / 2 < 5_000,
                "one item's tone, not two: \(sounding.count) sounding samples")
    }

    /// An item converted down (96 kHz to the 48 kHz output) maps the huge start back to its
    /// own rate, twice as many frames: that too is clamped, not trapped.
    @Test(arguments: Backend.allCases)
    func aHugeStartTimeOfAnItemConvertedDownIsSkippedToo(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let high = try sine(440, frames: 9_600, format: AudioFormat(sampleRate: 96_000, channelCount: 2), amplitude: 0.4)
        let playlist = try Playlist(items: [.buffer(high), .buffer(try Self.tone())], backend: rig.backend)
        try playlist.setStartTime(1e300, forItemAt: 0)
        try playlist.play()
        let out = try rig.render(until: { playlist.player.state == .stopped }, limit: 48_000)
        let sounding = out.indices.filter { abs(out[$0]) > 0.01 }
        #expect(!sounding.isEmpty && (sounding.last! - sounding.first!) / 2 < 5_000,
                "the second item's tone alone: \(sounding.count) sounding samples")
    }

    @Test(arguments: Backend.allCases)
    func renderingSecondsToAWAVRefusesNoTimeAndMoreThanAWAVHolds(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("spool-extreme-\(UUID()).wav").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        for time in Self.refused + [1e300, 1e12] {
            expectError(.invalidParameter, "render(seconds: \(time))") { _ = try rig.renderer.render(seconds: time, toWAV: path) }
        }
        #expect(!FileManager.default.fileExists(atPath: path), "no file for a render that was refused")
        #expect(try rig.renderer.render(seconds: 0.01, toWAV: path) == 480)
    }
}
