import Dispatch
import Foundation
import Spool
import SpoolCore
import SpoolTestSupport
import Testing

/// Every public type called from many threads at once while its back-end renders: a player,
/// a playlist, system sounds, a sound bank, a music pool and a buffer cache, for a bounded
/// time. Run in CI under ThreadSanitizer too, where any report fails the run. Afterwards each
/// object still does its job: the player plays its file from the start, exactly.
@Suite("Every public type from many threads at once")
struct ThreadStressTests {
    /// Calls that may be refused in the state another thread left: the refusal must be an
    /// `AudioError`, and never a crash or a hang.
    static func attempt(_ errors: Locked<[String]>, _ body: () throws -> Void) {
        do { try body() } catch let error as AudioError { _ = error } catch {
            errors.withLock { $0.append("\(error)") }
        }
    }

    @Test(arguments: Backend.allCases)
    func everyTypeFromEightThreadsWhileItRenders(_ kind: Backend) throws {
        let rig = try Rig(kind, rate: 44_100)
        let folder = URL(fileURLWithPath: fixture("wav-44100-stereo-s16.wav")).deletingLastPathComponent()
        let path = fixture("wav-44100-stereo-s16.wav")
        let reference = try DecoderRegistry.shared.open(path: path).decodeAll()
        let player = try AudioPlayer(contentsOf: URL(fileURLWithPath: path), backend: rig.backend)
        let playlist = try Playlist(items: ["mp3-44100-stereo.mp3", "flac-44100-stereo-s16.flac", "vorbis-44100-stereo.ogg"]
            .map { .file(URL(fileURLWithPath: fixture($0))) }, backend: rig.backend)
        let effects = try SoundEffects(backend: rig.backend, voiceLimit: 4)
        let sound = try SystemSound(contentsOf: URL(fileURLWithPath: fixture("wav-22050-mono-u8.wav")), effects: effects)
        let bank = try SoundBank(effects: effects)
        let pool = try MusicPlayerPool(directory: folder, backend: rig.backend, maximumPlayers: 2)
        let cache = try BufferCache(budgetBytes: 1 << 20)
        let errors = Locked<[String]>([])
        let stop = Locked(false)
        let calls = Locked(0)
        let kinds = Locked<Set<Int>>([])

        // The render thread: the back-end's mixer running all along.
        let renderer = DispatchGroup()
        renderer.enter()
        Thread {
            defer { renderer.leave() }
            while !stop.withLock({ $0 }) {
                do { _ = try rig.render(256) } catch { errors.withLock { $0.append("render: \(error)") } }
            }
        }.start()

        let deadline = Date().addingTimeInterval(2)
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            var generator = SystemRandomNumberGenerator()
            var step = worker
            while Date() < deadline {
                step += 1
                let x = Double.random(in: 0...1, using: &generator)
                Self.attempt(errors) {
                    switch step % 16 {
                    case 0: try player.play()
                    case 1: try player.pause()
                    case 2: try player.setCurrentTime(x * player.duration)
                    case 3: try player.setVolume(Float(x), fadeDuration: x < 0.5 ? 0 : 0.01)
                    case 4:
                        player.updateMeters()
                        _ = (player.currentTime, player.state, player.isPlaying, player.underrunCount)
                    case 5: try player.stop()
                    case 6: try playlist.play()
                    case 7: if x < 0.5 { try playlist.advanceToNextItem() } else { try playlist.previous() }
                    case 8: try playlist.jump(to: Int(x * 2.99))
                    case 9: if x < 0.3 { try playlist.stop() } else { try playlist.pause() }
                    case 10: _ = try sound.play()
                    case 11:
                        if x < 0.5 { effects.stopAll() } else {
                            _ = try bank.preload(URL(fileURLWithPath: fixture("wav-8000-mono-ulaw.wav")))
                        }
                    case 12: _ = try bank.play(named: "wav-8000-mono-ulaw")
                    case 13: _ = try pool.playMusic(named: x < 0.5 ? "wav-22050-mono-u8" : "aiff-44100-stereo-s16")
                    case 14:
                        if x < 0.5 { try pool.pauseMusic(named: "wav-22050-mono-u8") } else {
                            try pool.stopMusic(named: "aiff-44100-stereo-s16")
                        }
                    default:
                        let name = x < 0.5 ? "wav-8000-mono-alaw.wav" : "caf-44100-stereo-s16.caf"
                        _ = try cache.buffer(forPath: folder.appendingPathComponent(name).path)
                        _ = cache.stats
                    }
                }
                calls.withLock { $0 += 1 }
                kinds.withLock { _ = $0.insert(step % 16) }
            }
        }
        stop.withLock { $0 = true }
        renderer.wait()
        #expect(errors.withLock { $0 }.isEmpty, "\(errors.withLock { $0 })")
        #expect(kinds.withLock { $0.count } == 16, "every kind of call made, \(calls.withLock { $0 }) calls in all")
        #expect(cache.stats.peakBytesHeld <= 1 << 20)

        // Everything quiet again, and the player still plays its file exactly from the start.
        try playlist.stop()
        effects.stopAll()
        try pool.stopMusic(named: "wav-22050-mono-u8")
        try pool.stopMusic(named: "aiff-44100-stereo-s16")
        try player.stop()
        _ = try rig.render(4_096)
        #expect(try rig.render(1_024).allSatisfy { $0 == 0 }, "silence once everything stopped")
        try player.setVolume(1)
        try player.setCurrentTime(0)
        try player.play()
        let out = try rig.render(until: { player.state == .stopped }, limit: 44_100 * 2)
        let quality = snr(Array(out.prefix(reference.samples.count)), reference.samples)
        #expect(quality >= 80, "the player after the storm: \(quality) dB")
    }
}
