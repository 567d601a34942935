import Foundation
@testable import Spool
@testable import SpoolOpenAL
import SpoolTestSupport
import Testing

/// A player whose output was lost is paused with no voice; what it is told then (a seek) is
/// where the voice it makes on the session's reopened output starts.
@Suite("A player paused by a lost output")
struct LostOutputSeekTests {
    /// A session that opens OpenAL loopback outputs itself, a player of a 1 s ramp (every sample
    /// tells its frame) on its first output, played 0.1 s, and that output disconnected.
    static func lostPlayer() throws
        -> (session: AudioSession, player: AudioPlayer, opened: Locked<[OpenALBackend]>, log: AudioSessionTests.EventLog) {
        let opened = Locked<[OpenALBackend]>([])
        let session = AudioSession(group: AudioSessionGroup()) { configuration, _ in
            let backend = try OpenALBackend.open(.offline, configuration: configuration).backend
            opened.withLock { $0.append(backend) }
            return backend
        }
        try session.setPreferredSampleRate(48_000)
        let log = AudioSessionTests.EventLog()
        session.setEventHandler { log.record($0) }
        let first = try session.backend()
        let player = try AudioPlayer(buffer: try pcm(ramp(frames: 48_000, channels: 2)), backend: first)
        player.session = session
        try player.play()
        let renderer = try #require(first.offlineRenderer)
        _ = try renderer.render(frames: 4_800)
        try #require(opened.withLock { $0.count } == 1)
        opened.withLock { $0[0].device.forcedDisconnect.store(true, ordering: .relaxed) }
        _ = try renderer.render(frames: 480)
        let deadline = Date().addingTimeInterval(2)
        while player.state != .paused, Date() < deadline { usleep(2_000) }
        try #require(player.state == .paused, "the lost output paused the player: \(player.state)")
        return (session, player, opened, log)
    }

    /// The source frame each rendered frame of `samples` carries (left channel of the ramp).
    static func sourceFrames(_ samples: [Float]) -> [Int] {
        stride(from: 0, to: samples.count, by: 2).map { Int((Double(samples[$0]) * 1_048_576 / 2).rounded()) }
    }

    @Test func aSeekWhilePausedByALostOutputIsWhereTheNextPlayStarts() throws {
        let (session, player, opened, _) = try Self.lostPlayer()
        let heard = player.currentTime
        #expect(heard > 0.05 && heard < 0.2, "paused where it was heard: \(heard) s")
        try player.setCurrentTime(0.5)
        #expect(player.currentTime == 0.5)
        try player.play()
        let replacement = try #require(opened.withLock { $0.count == 2 ? $0[1] : nil }, "the session opened its output again")
        let out = Self.sourceFrames(try #require(replacement.offlineRenderer).render(frames: 4_800).samples)
        let start = try #require(out.firstIndex { $0 > 0 }, "the replacement output is silent")
        // Past the start's fade, frame `start + k` is source frame 24 000 + k.
        let offsets = Set((start + 480..<start + 1_480).map { out[$0] - ($0 - start) })
        #expect(offsets.count == 1, "the source frames run on one by one: \(offsets.sorted().prefix(5))")
        let first = try #require(offsets.first)
        #expect(abs(first - 24_000) <= 2, "the next play started at source frame \(first), not 24 000 (0.5 s)")
        #expect(player.currentTime > 0.5)
        withExtendedLifetime(session) {}
    }

    @Test func aPlayAfterALostOutputGoesOnFromTheFrameHeard() throws {
        let (session, player, opened, log) = try Self.lostPlayer()
        let heard = Int((player.currentTime * 48_000).rounded())
        try player.play()
        let replacement = try #require(opened.withLock { $0.count == 2 ? $0[1] : nil })
        let out = Self.sourceFrames(try #require(replacement.offlineRenderer).render(frames: 4_800).samples)
        let start = try #require(out.firstIndex { $0 > 0 })
        let offsets = Set((start + 480..<start + 1_480).map { out[$0] - ($0 - start) })
        let first = try #require(offsets.first)
        #expect(offsets.count == 1 && abs(first - heard) <= 2, "went on from \(first), heard \(heard)")
        // The loss reached the session from the output and from the player's voice: heard once.
        Thread.sleep(forTimeInterval: 0.2)
        let lost = log.events.filter { if case .routeChange(let c) = $0 { c.reason == .oldDeviceUnavailable } else { false } }
        #expect(lost.count == 1, "\(log.events)")
        withExtendedLifetime(session) {}
    }
}
