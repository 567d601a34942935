import Foundation
import Testing
import Spool
#if canImport(Glibc)
import Glibc
import SpoolTestSupport
#endif

/// `spool decode --output -` and `--output FILE.raw` write the decoder's samples straight from
/// its buffer: the same bytes as the library decodes, as the WAV holds, and nothing more.
@Suite("spool decode raw output")
struct DecodeRawOutputTests {
    private static func temporary(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("spool-raw-\(UUID())-\(name)").path
    }

    /// The little-endian float32 bytes of what the library decodes from `path`.
    private static func libraryBytes(_ path: String) throws -> Data {
        let buffer = try openDecoder(.file(path: path)).decodeAll()
        return buffer.withUnsafeSamples { Data(buffer: $0) }
    }

    @Test(arguments: ["mp3-44100-stereo.mp3", "mp3-22050-mono-vbr.mp3", "vorbis-22050-mono.ogg", "vorbis-48000-5.1.ogg",
                      "flac-44100-stereo-s16.flac"])
    func standardOutputAFileAndTheWAVHoldTheLibrarysSamples(name: String) throws {
        let path = Tool.fixture(name)
        let expected = try Self.libraryBytes(path)
        #expect(!expected.isEmpty)

        let piped = try Tool.run(["decode", path, "--output", "-"])
        #expect(piped.status == 0, "\(piped.stderr)")
        #expect(piped.stdout == expected)

        let raw = Self.temporary("out.raw"), wav = Self.temporary("out.wav")
        defer { for p in [raw, wav] { try? FileManager.default.removeItem(atPath: p) } }
        #expect(try Tool.run(["decode", path, "--output", raw]).status == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: raw)) == expected)
        #expect(try Tool.run(["decode", path, "--output", wav]).status == 0)
        let file = try Data(contentsOf: URL(fileURLWithPath: wav))
        #expect(file.suffix(expected.count) == expected, "the WAV's data chunk ends the file")
    }

    @Test func aLongerFileAtThePathIsReplacedNotOverwrittenInPlace() throws {
        let out = Self.temporary("old.raw")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let path = Tool.fixture("mp3-11025-mono.mp3")
        let expected = try Self.libraryBytes(path)
        try Data(repeating: 0xAB, count: expected.count * 3).write(to: URL(fileURLWithPath: out))
        #expect(try Tool.run(["decode", path, "--output", out]).status == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: out)) == expected)
    }

    /// A link is written through and a pipe stays a pipe: the output is opened in place,
    /// not replaced by a new file renamed over the path (which turned /dev/null, for a
    /// decode run as root, into a regular file).
    @Test func aLinkOrAPipeAtThePathIsWrittenThroughNotReplaced() throws {
        let path = Tool.fixture("mp3-11025-mono.mp3")
        let expected = try Self.libraryBytes(path)
        let target = Self.temporary("target.raw"), link = Self.temporary("link.raw"), fifo = Self.temporary("fifo.raw")
        defer { for p in [target, link, fifo] { try? FileManager.default.removeItem(atPath: p) } }

        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        #expect(try Tool.run(["decode", path, "--output", link]).status == 0)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == target)
        #expect(try Data(contentsOf: URL(fileURLWithPath: target)) == expected)

        #expect(mkfifo(fifo, 0o600) == 0)
        let process = Process()
        process.executableURL = Tool.executable
        process.arguments = ["decode", path, "--output", fifo]
        try process.run()
        // Opening the pipe's reading end waits for the decoder to open the writing end.
        let reader = try #require(FileHandle(forReadingAtPath: fifo))
        let received = reader.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(received == expected)
        var info = stat()
        #expect(stat(fifo, &info) == 0 && info.st_mode & S_IFMT == S_IFIFO, "the pipe is still a pipe")
    }

    @Test func aPathThatCannotBeCreatedIsNamed() throws {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("spool-no-such-dir-\(UUID())/out.raw").path
        let result = try Tool.run(["decode", Tool.fixture("mp3-11025-mono.mp3"), "--output", out])
        #expect(result.status == 1)
        #expect(result.stderr.contains("\(out): cannot create the file"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    @Test func aFullStandardOutputIsAWriteError() throws {
        // A full device: every write fails with ENOSPC, which must be an error, not a crash.
        let process = Process()
        process.executableURL = Tool.executable
        process.arguments = ["decode", Tool.fixture("mp3-11025-mono.mp3"), "--output", "-"]
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/full")
        let err = Pipe()
        process.standardError = err
        try process.run()
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 1)
        #expect(stderr.contains("standard output: write failed"), "\(stderr)")
    }
}
