import Dispatch
import Foundation
import Spool
import Testing
import SpoolTestSupport

/// `SoundBank` and `MusicPlayerPool` over a folder, rendered offline on both back-ends.
@Suite("SoundBank and MusicPlayerPool")
struct SoundBankTests {
    /// A temporary folder with two good sounds, two broken files and a file that is no sound.
    static func folder() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spool-bank-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for (from, to) in [("flac-22050-mono-s16.flac", "chime.flac"), ("wav-44100-stereo-s16.wav", "click.wav"),
                           ("broken/text.mp3", "broken.mp3"), ("broken/random.bin", "noise.ogg"),
                           ("vorbis-22050-mono.ogg", "click.ogg")] {
            try FileManager.default.copyItem(atPath: fixture(from), toPath: directory.appendingPathComponent(to).path)
        }
        try Data("notes".utf8).write(to: directory.appendingPathComponent("README.txt"))
        return directory
    }

    @Test(arguments: Backend.allCases)
    func aFolderLoadsItsGoodSoundsAndListsItsBrokenOnes(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let directory = try Self.folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let bank = try SoundBank(effects: SoundEffects(backend: rig.backend))
        let report = try bank.load(directory: directory)
        #expect(report.loaded == ["chime.flac", "click.ogg", "click.wav"])
        #expect(report.failures.map(\.name) == ["broken.mp3", "noise.ogg"])
        #expect(report.failures.allSatisfy { $0.error.code == .unsupportedFormat || $0.error.code == .corruptData })
        #expect(bank.names == ["chime.flac", "click.ogg", "click.wav"], "the text file is not tried")
        // A file that did not load, asked for by name: refused with why, not as unknown.
        for name in ["broken", "broken.mp3"] {
            do {
                try bank.play(named: name)
                Issue.record("'\(name)' played")
            } catch let error as AudioError {
                let failure = try #require(report.failures.first { $0.name == "broken.mp3" }).error
                #expect(error.code == failure.code)
                #expect(error.message.contains("'\(name)' (broken.mp3) did not load") && error.message.contains(failure.message),
                        "\(error.message)")
            }
        }

        // By name, without the extension: the chime plays, converted to the output.
        let chime = try bank.play(named: "chime")
        let out = try rig.render(chime.buffer.frameCount)
        #expect(snr(out, chime.buffer.samples) >= 80)
        #expect(chime.buffer.format == rig.backend.outputFormat)
    }

    @Test(arguments: Backend.allCases)
    func anUnknownOrAmbiguousNameIsAClearError(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let directory = try Self.folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let bank = try SoundBank(effects: SoundEffects(backend: rig.backend))
        try bank.load(directory: directory)
        do {
            try bank.play(named: "chim")
            Issue.record("an unknown name played")
        } catch let error as AudioError {
            #expect(error.code == .fileNotFound)
            #expect(error.message.contains("'chim'") && error.message.contains("nearest: chime.flac"), "\(error.message)")
        }
        expectError(.invalidParameter, "a name two files share without extension") { try bank.play(named: "click") }
        #expect(try bank.sound(named: "click.wav").name.hasSuffix("click.wav"))
        #expect(bank.unload(named: "click.wav"))
        #expect(!bank.unload(named: "click.wav"))
        #expect(try bank.sound(named: "click").name.hasSuffix("click.ogg"), "now the name is the Ogg file's alone")
    }

    @Test(arguments: Backend.allCases)
    func theMusicPoolReusesAFilesPlayerAndKeepsFewPlayers(_ kind: Backend) throws {
        let rig = try Rig(kind, rate: 44_100)
        let directory = try Self.folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let pool = try MusicPlayerPool(directory: directory, backend: rig.backend, maximumPlayers: 2)
        let chime = try pool.playMusic(named: "chime")
        #expect(try pool.player(named: "chime.flac") === chime, "the same player, reused")
        _ = try rig.render(2_048)
        try pool.pauseMusic(named: "chime")
        #expect(chime.state == .paused)
        let wav = try pool.player(named: "click.wav")
        let ogg = try pool.player(named: "click.ogg")
        #expect(pool.playerCount == 2, "past the limit the least recently used player goes")
        #expect(try pool.player(named: "click.ogg") === ogg)
        #expect(try pool.player(named: "click.wav") === wav, "the paused chime went, not the players after it")
        #expect(try pool.player(named: "chime") !== chime, "a released file gets a new player")
        #expect(pool.playerCount == 2)
        expectError(.fileNotFound, "a name not in the folder") { try pool.playMusic(named: "fanfare") }
        expectError(.invalidParameter, "a pool of 0") { _ = try MusicPlayerPool(directory: directory, maximumPlayers: 0) }
    }
}
