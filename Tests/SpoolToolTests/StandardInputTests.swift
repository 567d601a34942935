import Foundation
import Testing

/// `-` for standard input: `spool info -`, `spool decode -` and `spool play -` read a stream
/// through the stream parser and give what they give for the file.
@Suite("spool with standard input")
struct StandardInputTests {
    /// Runs the tool with `path`'s bytes on its standard input (a pipe, as `cat FILE |` gives).
    static func run(_ arguments: [String], input path: String) throws -> Tool.Result {
        let process = Process()
        process.executableURL = Tool.executable
        process.arguments = arguments
        let input = Pipe(), out = Pipe(), err = Pipe()
        process.standardInput = input
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // An empty file is not read: Foundation's `Data(contentsOf:)` leaks its buffer on one.
        let size = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        let bytes = size == 0 ? Data() : try Data(contentsOf: URL(fileURLWithPath: path))
        let writer = Thread {
            try? input.fileHandleForWriting.write(contentsOf: bytes)
            try? input.fileHandleForWriting.close()
        }
        writer.start()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Tool.Result(status: process.terminationStatus, stdout: stdout, stderr: String(decoding: stderr, as: UTF8.self))
    }

    static let files = ["mp3-44100-stereo.mp3", "vorbis-44100-stereo.ogg", "flac-44100-stereo-s16.flac", "wav-44100-stereo-s16.wav",
                        "opus/opus-48000-stereo.opus", "mp3/lame-44100-stereo-vbr.mp3"]

    @Test(arguments: files)
    func decodeOfStandardInputGivesTheFilesSamples(_ name: String) throws {
        let path = Tool.fixture(name)
        let piped = try Self.run(["decode", "-", "--output", "-"], input: path)
        #expect(piped.status == 0, "\(piped.stderr)")
        let file = try Tool.run(["decode", path, "--output", "-"])
        #expect(file.status == 0)
        #expect(piped.stdout.count == file.stdout.count, "\(name): \(piped.stdout.count) bytes from the pipe, \(file.stdout.count) from the file")
        #expect(piped.stdout == file.stdout, "\(name): the samples differ")
    }

    @Test(arguments: files)
    func infoOfStandardInputAgreesWithTheFile(_ name: String) throws {
        let path = Tool.fixture(name)
        let piped = try Self.run(["info", "--json", "-"], input: path)
        #expect(piped.status == 0, "\(piped.stderr)")
        let file = try Tool.run(["info", "--json", path])
        let a = try #require((try JSONSerialization.jsonObject(with: piped.stdout) as? [[String: Any]])?.first)
        let b = try #require((try JSONSerialization.jsonObject(with: file.stdout) as? [[String: Any]])?.first)
        for key in ["container", "codec", "sampleRate", "channels", "frames"] {
            #expect("\(a[key] ?? "none")" == "\(b[key] ?? "none")", "\(name): \(key)")
        }
        #expect(a["framesExact"] as? Bool == true)
    }

    @Test func playOfStandardInputRendersTheFileOffline() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("spool-stdin-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = Tool.fixture("vorbis-44100-stereo.ogg")
        let piped = try Self.run(["play", "-", "--output", "wav:\(folder.path)/pipe.wav", "--quiet"], input: path)
        #expect(piped.status == 0, "\(piped.stderr)")
        let file = try Tool.run(["play", path, "--output", "wav:\(folder.path)/file.wav", "--quiet"])
        #expect(file.status == 0)
        let a = try Data(contentsOf: folder.appendingPathComponent("pipe.wav"))
        let b = try Data(contentsOf: folder.appendingPathComponent("file.wav"))
        #expect(a.count > 44 && a == b, "standard input played \(a.count) bytes, the file \(b.count)")
    }

    @Test func standardInputTwiceOrLoopedIsAUsageError() throws {
        let path = Tool.fixture("vorbis-44100-stereo.ogg")
        #expect(try Self.run(["play", "-", "-", "--output", "null"], input: path).status == 2)
        #expect(try Self.run(["play", "-", "--loops", "2", "--output", "null"], input: path).status == 2)
    }

    @Test func noBytesOnStandardInputIsOneLineAndStatus1() throws {
        let empty = FileManager.default.temporaryDirectory.appendingPathComponent("spool-empty-\(UUID().uuidString)")
        try Data().write(to: empty)
        defer { try? FileManager.default.removeItem(at: empty) }
        let result = try Self.run(["info", "-"], input: empty.path)
        #expect(result.status == 1)
        #expect(result.stderr.contains("standard input") && result.stderr.contains("before its first byte"), "\(result.stderr)")
    }
}
