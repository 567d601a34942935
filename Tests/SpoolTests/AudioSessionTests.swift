import Foundation
@testable import Spool
import SpoolTestSupport
import Testing

/// The audio session in one process, on both back-ends rendered offline: categories, what a
/// non-mixable session does to another, ambient sounds that mix, ducking, and bad input.
@Suite("AudioSession in the process")
struct AudioSessionTests {
    static func offline(_ kind: Backend) throws -> any PlaybackBackend {
        let configuration = OutputConfiguration(sampleRate: 48_000)
        switch kind {
        case .queue: return try BufferQueueBackend.open(.offline, configuration: configuration).backend
        case .openAL: return try OpenALBackend.open(.offline, configuration: configuration).backend
        }
    }

    /// A session of `group` on its own offline back-end, with a player of a 2 s tone in it.
    struct Member {
        let session: AudioSession
        let backend: any PlaybackBackend
        let player: AudioPlayer
        let log = EventLog()

        init(_ kind: Backend, _ category: AudioSession.Category, options: AudioSession.CategoryOptions = [],
             group: AudioSessionGroup) throws {
            backend = try AudioSessionTests.offline(kind)
            session = AudioSession(backend: backend, group: group)
            try session.setCategory(category, options: options)
            player = try AudioPlayer(buffer: try sine(440, frames: 96_000, format: stereo48, amplitude: 0.5), backend: backend)
            player.session = session
            let log = self.log
            session.setEventHandler { log.record($0) }
        }

        /// Renders `frames` of the member's output.
        func render(_ frames: Int) throws -> [Float] { try #require(backend.offlineRenderer).render(frames: frames).samples }
    }

    /// The session's events, as they were delivered.
    final class EventLog: Sendable {
        private let entries = Locked<[AudioSessionEvent]>([])
        func record(_ event: AudioSessionEvent) { entries.withLock { $0.append(event) } }
        /// Waits up to 2 s for `count` events, then returns what came.
        func wait(for count: Int) -> [AudioSessionEvent] {
            let deadline = Date().addingTimeInterval(2)
            while entries.withLock({ $0.count }) < count, Date() < deadline { usleep(2_000) }
            return entries.withLock { $0 }
        }
        var events: [AudioSessionEvent] { entries.withLock { $0 } }

        /// Waits up to 2 s for `count` interruption events, then returns the interruptions
        /// that came (a route change the category's setting reports may come among them).
        func interruptions(_ count: Int) -> [AudioSessionEvent] {
            func only() -> [AudioSessionEvent] {
                entries.withLock { $0.filter { if case .interruption = $0 { true } else { false } } }
            }
            let deadline = Date().addingTimeInterval(2)
            while only().count < count, Date() < deadline { usleep(2_000) }
            return only()
        }
    }

    @Test(arguments: Backend.allCases)
    func aPlaybackSessionInterruptsAnotherWhichResumesOnRequest(_ kind: Backend) throws {
        let group = AudioSessionGroup()
        let music = try Member(kind, .playback, group: group)
        let call = try Member(kind, .playback, group: group)
        try music.player.play()
        _ = try music.render(4_800)
        #expect(music.session.isActive)

        try call.player.play()
        #expect(music.log.interruptions(1) == [.interruption(.began(.otherSession))])
        #expect(!music.player.isPlaying && music.player.state == .paused, "the interrupted player paused")
        #expect(!music.session.isActive && music.session.isInterrupted)
        _ = try music.render(4_800)  // the pause's fade
        let heldAt = music.player.currentTime

        // A session with a player playing cannot be deactivated (iOS's isBusy).
        #expect(throws: AudioError.self) { try call.session.setActive(false) }
        try call.player.pause()
        try call.session.setActive(false, options: .notifyOthersOnDeactivation)
        #expect(music.log.interruptions(2).last == .interruption(.ended(shouldResume: true)))
        #expect(!music.player.isPlaying, "the program decides when to resume")
        try music.player.play()
        #expect(music.player.isPlaying && music.session.isActive)
        #expect(abs(music.player.currentTime - heldAt) < 0.001, "resumed at \(music.player.currentTime), paused at \(heldAt)")
    }

    @Test(arguments: Backend.allCases)
    func withoutNotifyOthersTheInterruptedSessionIsToldNotToResume(_ kind: Backend) throws {
        let group = AudioSessionGroup()
        let music = try Member(kind, .soloAmbient, group: group)
        let other = try Member(kind, .playback, group: group)
        music.session.resumesAfterInterruption = true
        try music.player.play()
        try other.session.setActive(true)
        #expect(music.log.interruptions(1) == [.interruption(.began(.otherSession))])
        try other.session.setActive(false)
        #expect(music.log.interruptions(2).last == .interruption(.ended(shouldResume: false)))
        #expect(!music.player.isPlaying, "no resume without shouldResume, whatever the policy")
    }

    @Test(arguments: Backend.allCases)
    func aResumePolicyPlaysAgainWhenTheInterruptionEnds(_ kind: Backend) throws {
        let group = AudioSessionGroup()
        let music = try Member(kind, .playback, group: group)
        let other = try Member(kind, .playback, group: group)
        music.session.resumesAfterInterruption = true
        try music.player.play()
        try other.session.setActive(true)
        _ = music.log.interruptions(1)
        #expect(!music.player.isPlaying)
        try other.session.setActive(false, options: .notifyOthersOnDeactivation)
        _ = music.log.interruptions(2)
        let deadline = Date().addingTimeInterval(2)
        while !music.player.isPlaying, Date() < deadline { usleep(2_000) }
        #expect(music.player.isPlaying, "the policy resumed the player")
    }

    @Test(arguments: Backend.allCases)
    func ambientSoundsMixAndAreNotInterrupted(_ kind: Backend) throws {
        let group = AudioSessionGroup()
        let effects = try Member(kind, .ambient, group: group)
        let music = try Member(kind, .playback, group: group)
        let mixing = try Member(kind, .playback, options: .mixWithOthers, group: group)
        try effects.player.play()
        try music.player.play()
        try mixing.player.play()
        #expect(effects.player.isPlaying && music.player.isPlaying && mixing.player.isPlaying)
        #expect(effects.session.isMixable && !music.session.isMixable && mixing.session.isMixable)
        // The mixable session's start interrupted no one, and the ambient one is never interrupted.
        Thread.sleep(forTimeInterval: 0.05)
        #expect(effects.log.events.isEmpty && music.log.events.isEmpty)
    }

    @Test(arguments: Backend.allCases)
    func duckOthersPlaysTheOthersAtAQuarter(_ kind: Backend) throws {
        let group = AudioSessionGroup()
        let music = try Member(kind, .playback, options: .mixWithOthers, group: group)
        let voiceOver = try Member(kind, .playback, options: .duckOthers, group: group)
        try music.player.play()
        let loud = try music.render(9_600)
        try voiceOver.session.setActive(true)
        _ = try music.render(9_600)  // the 50 ms glide
        let ducked = try music.render(9_600)
        #expect(abs(rms(ducked) / rms(loud) - Double(AudioSession.duckedGain)) < 0.01, "ducked to \(rms(ducked) / rms(loud))")
        #expect(music.player.isPlaying, "ducked, not interrupted")
        try voiceOver.session.setActive(false)
        _ = try music.render(9_600)
        #expect(abs(rms(try music.render(9_600)) / rms(loud) - 1) < 0.01, "back to full volume")
    }

    @Test(arguments: Backend.allCases)
    func soundEffectsPlayOnThroughAnotherSessionAndStopWhenTheirOutputGoes(_ kind: Backend) throws {
        let group = AudioSessionGroup()
        let game = try Member(kind, .soloAmbient, group: group)
        let effects = try SoundEffects(backend: game.backend)
        effects.session = game.session
        let sound = try SystemSound(buffer: try sine(880, frames: 48_000, format: stereo48), effects: effects)
        try game.player.play()
        let play = try sound.play()
        _ = try game.render(4_800)
        let music = try Member(kind, .playback, group: group)
        try music.session.setActive(true)
        #expect(game.log.interruptions(1) == [.interruption(.began(.otherSession))])
        #expect(!game.player.isPlaying, "the player paused")
        _ = try game.render(4_800)
        #expect(play.isPlaying, "a sound effect is not interrupted by another session of the process")
        // The session's output lost: what would stop them from outside the process.
        game.session.handle(.deviceLost(AudioError(.deviceLost, "test: gone")), from: ObjectIdentifier(game.backend))
        _ = try game.render(4_800)
        #expect(!play.isPlaying, "the sound stopped with its output")
    }

    @Test(arguments: Backend.allCases)
    func playlistsAndMusicPoolPlayersObeyTheSession(_ kind: Backend) throws {
        let group = AudioSessionGroup()
        let backend = try Self.offline(kind)
        let session = AudioSession(backend: backend, group: group)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spool-pool-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let writer = try WAVFileWriter(path: directory.appendingPathComponent("theme.wav").path, format: stereo48)
        try writer.write(try sine(330, frames: 96_000, format: stereo48, amplitude: 0.3))
        try writer.finish()
        let pool = try MusicPlayerPool(directory: directory, backend: backend)
        let theme = try pool.player(named: "theme")
        theme.session = session
        let playlist = try Playlist(items: [.buffer(try sine(550, frames: 96_000, format: stereo48, amplitude: 0.3))], backend: backend)
        playlist.player.session = session
        try pool.playMusic(named: "theme")
        try playlist.play()
        let render = { try #require(backend.offlineRenderer).render(frames: 4_800).samples }
        _ = try render()
        #expect(rms(try render()) > 0.2, "both play")

        let music = try Member(kind, .playback, group: group)
        try music.session.setActive(true)
        #expect(theme.state == .paused && playlist.player.state == .paused, "the pool's player and the playlist paused")
        let held = (theme.currentTime, playlist.player.currentTime)
        _ = try render()
        #expect(rms(try render()) < 1e-4, "silent while interrupted")
        #expect(theme.currentTime == held.0 && playlist.player.currentTime == held.1)

        // The music tool resumes where it paused.
        try music.session.setActive(false, options: .notifyOthersOnDeactivation)
        try pool.playMusic(named: "theme")
        #expect(abs(theme.currentTime - held.0) < 0.01, "resumed at \(theme.currentTime), held \(held.0)")
        _ = try render()
        #expect(theme.currentTime > held.0 + 0.05 && playlist.player.state == .paused)
    }

    @Test func categoriesThatRecordAreRefusedAndTheRestMapToRoles() throws {
        let session = AudioSession(group: AudioSessionGroup())
        for category in [AudioSession.Category.record, .playAndRecord, .audioProcessing, .multiRoute] {
            #expect(throws: AudioError.self) { try session.setCategory(category) }
        }
        #expect(session.category == .soloAmbient)
        #expect(throws: AudioError.self) { try session.setCategory(.ambient, options: .duckOthers) }
        #expect([AudioSession.Category.ambient, .soloAmbient, .playback].map(\.role) == ["event", "game", "music"])
    }

    @Test func preferencesOutsideTheirRangesAreRefused() {
        let session = AudioSession(group: AudioSessionGroup())
        for rate in [Double.nan, .infinity, -.infinity, 1e300, -1e300, 0, 7_999, 192_001] {
            #expect(throws: AudioError.self, "rate \(rate)") { try session.setPreferredSampleRate(rate) }
        }
        for duration in [Double.nan, .infinity, -.infinity, 1e300, -1, 0, 0.0002, 1.5] {
            #expect(throws: AudioError.self, "duration \(duration)") { try session.setPreferredIOBufferDuration(duration) }
        }
        #expect(session.preferredSampleRate == nil && session.preferredIOBufferDuration == nil)
    }

    @Test(arguments: Backend.allCases)
    func aCategoryChangeIsARouteChange(_ kind: Backend) throws {
        let member = try Member(kind, .playback, group: AudioSessionGroup())
        try member.session.setCategory(.ambient)
        guard case .routeChange(let change) = try #require(member.log.wait(for: 1).first) else {
            Issue.record("no route change: \(member.log.events)")
            return
        }
        #expect(change.reason == .categoryChange)
        #expect(change.previousRoute.output == member.backend.outputName)
    }

    @Test func theSessionsEventStreamEndsWithTheSession() async throws {
        var session: AudioSession? = AudioSession(group: AudioSessionGroup())
        let events = try #require(session).events
        let reader = Task {
            var count = 0
            for await _ in events { count += 1 }
            return count
        }
        try session?.setCategory(.playback)
        try await Task.sleep(nanoseconds: 50_000_000)
        session = nil
        #expect(await reader.value == 1)
    }
}
