import Dispatch
import Foundation
import Spool
import SpoolTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A file cut short on disk after its player opened it, and while it plays: the player plays
/// what was there, reports the damage as a decode error and finishes; it neither crashes nor
/// hangs. A file replaced by another (renamed over it) plays on as the file it opened, since
/// the player holds that file open.
@Suite("A file changed on disk while it plays")
struct FileChangedWhilePlayingTests {
    /// A folder of its own for each case, removed when it ends.
    final class Folder {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("spool-changed-\(UUID().uuidString)")
        init() throws { try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true) }
        deinit { try? FileManager.default.removeItem(at: url) }
        func copy(_ name: String) throws -> String {
            let path = url.appendingPathComponent((name as NSString).lastPathComponent).path
            try FileManager.default.copyItem(atPath: fixture(name), toPath: path)
            return path
        }
    }

    static func cut(_ path: String, toBytes bytes: Int) {
        #expect(truncate(path, off_t(bytes)) == 0, "truncate(\(path)): \(String(cString: strerror(errno)))")
    }

    /// Each codec's decoder opened on the whole file, then the file cut to half its size
    /// before the first frame plays (the compressed files last 12 s, more than a player
    /// decodes ahead, and hold more than twice the 64 KiB a decoder reads ahead): what was
    /// read plays, every frame of it the whole file's, and then the decode error.
    @Test(arguments: Backend.allCases, ["wav-44100-stereo-s16.wav", "long/tone-12s.mp3", "long/tone-12s.ogg", "long/tone-12s.flac"])
    func aFileCutAfterItOpenedPlaysWhatIsLeftThenReportsTheDamage(_ kind: Backend, _ name: String) throws {
        let folder = try Folder()
        let path = try folder.copy(name)
        let whole = try DecoderRegistry.shared.open(path: path).decodeAll()
        let channels = whole.format.channelCount
        let rig = try Rig(kind, rate: whole.format.sampleRate)
        let (player, log) = try makePlayer(rig, url: URL(fileURLWithPath: path))
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0
        Self.cut(path, toBytes: size / 2)
        try player.play()
        let stereo = try rig.render(until: { player.state == .stopped }, limit: whole.frameCount * 2) + rig.render(512)
        #expect(player.state == .stopped, "the player ended")
        let events = log.events
        #expect(events.count == 2 && events[0].hasPrefix("decodeError(") && events[1] == "finished(false)", "\(name): \(events)")
        // The output is stereo; a mono file is heard on both channels.
        let out = channels == 2 ? stereo : stride(from: 0, to: stereo.count, by: 2).map { stereo[$0] }
        // What played: the whole file's frames from its first, up to the cut or the end of
        // the bytes read before it (a lossy codec's last frames before it may decode only in
        // part), well short of the whole.
        let heard = (0..<(out.count / channels)).last { frame in
            (0..<channels).contains { abs(out[frame * channels + $0]) > 1e-4 }
        }.map { $0 + 1 } ?? 0
        #expect(heard > whole.frameCount / 4 && heard < whole.frameCount * 9 / 10, "\(name): \(heard) of \(whole.frameCount) frames")
        let checked = max(0, heard - 4_096) * channels
        let quality = snr(Array(out.prefix(checked)), Array(whole.samples.prefix(checked)))
        #expect(quality >= 80, "\(name): the frames before the cut, \(quality) dB")
    }

    /// A 10 s file cut to 4 s half a second into playing, while its decoder is reading
    /// ahead: every frame up to the cut plays, exactly, then the decode error.
    @Test(arguments: Backend.allCases)
    func aFileCutWhileItPlaysPlaysEveryFrameUpToTheCut(_ kind: Backend) throws {
        let folder = try Folder()
        let path = folder.url.appendingPathComponent("long.wav").path
        let format = try AudioFormat(sampleRate: 22_050, channelCount: 2)
        let frames = 220_500
        let samples: [Float] = (0..<(frames * 2)).map { index in
            let phase = Double(index / 2) * 0.031 + Double(index % 2)
            return Float(sin(phase) * 0.5)
        }
        let writer = try WAVFileWriter(path: path, format: format)
        try writer.write(try PCMBuffer(format: format, samples: samples))
        try writer.finish()
        let header = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0) - frames * 8
        let rig = try Rig(kind, rate: 22_050)
        let (player, log) = try makePlayer(rig, url: URL(fileURLWithPath: path))
        try player.play()
        var out = try rig.render(11_025)
        let kept = 88_200
        Self.cut(path, toBytes: header + kept * 8)
        out += try rig.render(until: { player.state == .stopped }, limit: 22_050 * 12) + rig.render(512)
        #expect(log.events.count == 2 && log.events.first?.hasPrefix("decodeError(") == true, "\(log.events)")
        #expect(log.events.last == "finished(false)")
        let played = Array(out.prefix(kept * 2))
        let quality = snr(played, Array(samples.prefix(kept * 2)))
        #expect(quality >= 80, "every frame up to the cut: \(quality) dB")
        #expect(out[(kept * 2)...].allSatisfy { abs($0) < 1e-3 }, "nothing after the cut but the fade's end")
    }

    /// A file renamed over by another while it plays: the player plays the file it opened,
    /// whole, with no error.
    @Test(arguments: Backend.allCases)
    func aFileReplacedWhileItPlaysPlaysOnAsTheFileItOpened(_ kind: Backend) throws {
        let folder = try Folder()
        let path = try folder.copy("wav-44100-stereo-s16.wav")
        let other = try folder.copy("flac-44100-stereo-s16.flac")
        let whole = try DecoderRegistry.shared.open(path: path).decodeAll()
        let rig = try Rig(kind, rate: 44_100)
        let (player, log) = try makePlayer(rig, url: URL(fileURLWithPath: path))
        try player.play()
        var out = try rig.render(2_048)
        #expect(rename(other, path) == 0)
        out += try rig.render(until: { player.state == .stopped }, limit: 44_100 * 2)
        #expect(log.events == ["finished(true)"])
        let quality = snr(Array(out.prefix(whole.samples.count)), whole.samples)
        #expect(quality >= 80, "\(quality) dB")
    }
}
