import Foundation
import HTTPTestSupport
import Testing

/// `spool info`, `decode` and `play` on an http(s) URL from a real nginx on 127.0.0.1: what
/// they give for the file, over a link slower than the audio too.
@Suite("spool with URLs")
struct URLCommandTests {
    static let files = ["mp3-44100-stereo.mp3", "vorbis-44100-stereo.ogg", "flac-44100-stereo-s16.flac", "wav-44100-stereo-s16.wav"]

    static func server() throws -> NginxServer {
        try NginxServer(root: URL(fileURLWithPath: Tool.fixture("mp3-44100-stereo.mp3")).deletingLastPathComponent())
    }

    @Test("decode of a URL gives the file's samples byte for byte, and info its facts", arguments: files)
    func decodeAndInfoOfAURLAgreeWithTheFile(_ name: String) throws {
        let nginx = try Self.server()
        let url = nginx.url(name).absoluteString
        let remote = try Tool.run(["decode", url, "--output", "-"])
        #expect(remote.status == 0, "\(remote.stderr)")
        let file = try Tool.run(["decode", Tool.fixture(name), "--output", "-"])
        #expect(remote.stdout.count == file.stdout.count && remote.stdout == file.stdout, "\(name): the samples differ")
        let info = try Tool.run(["info", "--json", url])
        #expect(info.status == 0, "\(info.stderr)")
        let a = try #require((try JSONSerialization.jsonObject(with: info.stdout) as? [[String: Any]])?.first)
        let b = try #require((try JSONSerialization.jsonObject(with: try Tool.run(["info", "--json", Tool.fixture(name)]).stdout)
            as? [[String: Any]])?.first)
        for key in ["container", "codec", "sampleRate", "channels", "frames"] {
            #expect("\(a[key] ?? "none")" == "\(b[key] ?? "none")", "\(name): \(key)")
        }
    }

    @Test("play of a URL over a link slower than its audio renders the file's WAV offline, byte for byte")
    func playOfASlowURLRendersTheFileOffline() throws {
        let nginx = try Self.server()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("spool-url-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // 176 400 bytes a second of audio, served at 40 000 (nginx sends a second's worth at a time).
        let name = "wav-44100-stereo-s16.wav"
        let remote = try Tool.run(["play", nginx.url("rate/40000/\(name)").absoluteString, "--output", "wav:\(folder.path)/url.wav", "--quiet"])
        #expect(remote.status == 0, "\(remote.stderr)")
        let file = try Tool.run(["play", Tool.fixture(name), "--output", "wav:\(folder.path)/file.wav", "--quiet"])
        #expect(file.status == 0)
        let a = try Data(contentsOf: folder.appendingPathComponent("url.wav"))
        let b = try Data(contentsOf: folder.appendingPathComponent("file.wav"))
        #expect(a.count > 44 && a == b, "the URL played \(a.count) bytes, the file \(b.count)")
    }

    @Test("play of a URL slower than its audio says when it buffers and when it plays on, and plays every frame")
    func playOfASlowURLSaysWhenItBuffers() throws {
        let nginx = try Self.server()
        let result = try Tool.run(["play", nginx.url("rate/40000/wav-44100-stereo-s16.wav").absoluteString, "--output", "null"])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stderr.split(separator: "\n").map(String.init)
        let buffering = lines.firstIndex(of: "spool: buffering…"), playingOn = lines.firstIndex(of: "spool: playing on")
        #expect(buffering != nil && playingOn != nil && buffering! < playingOn!, "\(result.stderr)")
        #expect(lines.last?.hasPrefix("spool: played 22050 frames") == true, "\(result.stderr)")
    }

    @Test("a URL the server refuses is one line naming the status, and status 1")
    func aRefusedURLIsOneLine() throws {
        let nginx = try Self.server()
        let result = try Tool.run(["info", nginx.url("missing.mp3").absoluteString])
        #expect(result.status == 1)
        #expect(result.stderr.contains("HTTP 404"), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
    }
}
