import Foundation
import Spool
import SpoolTestSupport
import Testing

/// `spool decode` under a file-size limit (`ulimit -f`, RLIMIT_FSIZE): a write past it is an
/// error that names the limit, not SIGXFSZ (which ended the tool with exit 153 and a WAV whose
/// data chunk claimed 0 bytes), and the output holds whole frames, the WAV under a header true
/// to them, every one the decoder's.
@Suite("spool decode under a file-size limit")
struct DecodeSizeLimitTests {
    static let limitBlocks = 64  // bash's ulimit -f counts 1024-byte blocks: 64 KiB
    static let source = "flac-44100-stereo-s16.flac"  // 0.5 s of stereo: 176 KiB as float32

    static func temporary(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("spool-fsize-\(UUID())-\(name)").path
    }

    /// Runs `spool decode` under the limit through bash, standard output to `stdoutPath`.
    static func decodeLimited(_ output: String, stdoutPath: String = "/dev/null") throws -> (status: Int32, stderr: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = ["-c", "ulimit -f \(limitBlocks) && exec \"$0\" decode \"$1\" --output \"$2\" > \"$3\"",
                             Tool.executable.path, Tool.fixture(source), output, stdoutPath]
        let err = Pipe()
        process.standardError = err
        try process.run()
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, stderr)
    }

    /// The little-endian float32 bytes of the whole decode.
    static func decoded() throws -> Data {
        let buffer = try openDecoder(.file(path: Tool.fixture(source))).decodeAll()
        return buffer.withUnsafeSamples { Data(buffer: $0) }
    }

    @Test func aWAVStopsAtTheLimitWithATrueHeader() throws {
        let path = Self.temporary("out.wav")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (status, stderr) = try Self.decodeLimited(path)
        #expect(status == 1, "exit \(status) (153 is SIGXFSZ): \(stderr)")
        #expect(stderr.contains("the file-size limit (RLIMIT_FSIZE, 65536 bytes) stops the file at"), "\(stderr)")
        let file = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(file.count <= 65_536)
        // The header's data size is what follows it, whole frames; the frames are the decoder's first.
        let header = 58
        let dataBytes = file[file.startIndex + 54..<file.startIndex + 58].enumerated().reduce(0) { $0 | Int($1.element) << (8 * $1.offset) }
        #expect(file.count == header + dataBytes && dataBytes % 8 == 0 && dataBytes > 60_000, "data \(dataBytes) of \(file.count)")
        #expect(file.suffix(from: file.startIndex + header) == (try Self.decoded()).prefix(dataBytes))
        let frames = try openDecoder(.file(path: path)).decodeAll().frameCount
        #expect(frames == dataBytes / 8)
        #expect(stderr.contains("holds the \(frames) frames decoded before it"), "\(stderr)")
    }

    @Test func rawOutputStopsAtTheLimitOnAWholeFrame() throws {
        let path = Self.temporary("out.raw"), piped = Self.temporary("piped.raw")
        defer { for p in [path, piped] { try? FileManager.default.removeItem(atPath: p) } }
        let expected = try Self.decoded()
        for (output, file) in [(path, path), ("-", piped)] {
            let (status, stderr) = try Self.decodeLimited(output, stdoutPath: piped)
            #expect(status == 1, "exit \(status) (153 is SIGXFSZ): \(stderr)")
            #expect(stderr.contains("write failed: File too large"), "\(stderr)")
            let bytes = try Data(contentsOf: URL(fileURLWithPath: file))
            #expect(bytes.count == 65_536 && bytes == expected.prefix(bytes.count), "\(output): \(bytes.count) bytes")
            #expect(stderr.contains("holds the \(bytes.count / 8) frames decoded before it"), "\(stderr)")
        }
    }
}
