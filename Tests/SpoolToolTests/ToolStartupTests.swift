import Foundation
import Testing
import SpoolTestSupport

/// What `spool` loads to start: decoding a file maps no sound-server library (libpulse-simple
/// and the 16 libraries it needs are loaded only by the acoustic check that records the
/// server) and neither libswresample nor libavutil (loaded with what libavutil needs only when
/// a `fast` or `balanced` converter is made), as the dynamic loader itself reports
/// (`LD_DEBUG=files`, glibc's ld.so).
@Suite("spool start-up")
struct ToolStartupTests {
    /// The shared libraries the dynamic loader maps for `spool arguments…`.
    private func librariesLoaded(_ arguments: [String]) throws -> [String] {
        let process = Process()
        process.executableURL = Tool.executable
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["LD_DEBUG"] = "files"
        process.environment = environment
        let err = Pipe()
        process.standardError = err
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let report = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(report.suffix(500))")
        // Lines like "   1234:     file=libmpg123.so.0 [0];  needed by /…/spool [0]".
        return report.split(separator: "\n").compactMap { line in
            guard let range = line.range(of: "file=") else { return nil }
            return String(line[range.upperBound...].prefix { $0 != " " })
        }
    }

    @Test func decodingLoadsTheDecodersAndNoSoundServerLibrary() throws {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("spool-startup-\(UUID()).raw").path
        defer { try? FileManager.default.removeItem(atPath: out) }
        let loaded = try librariesLoaded(["decode", Tool.fixture("mp3-11025-mono.mp3"), "--output", out])
        #expect(loaded.contains { $0.hasPrefix("libmpg123") }, "the loader's report lists what it maps: \(loaded)")
        #expect(!loaded.contains { $0.hasPrefix("libpulse") }, "\(loaded.filter { $0.hasPrefix("libpulse") })")
        let ffmpeg = loaded.filter { $0.hasPrefix("libswresample") || $0.hasPrefix("libavutil") || $0.hasPrefix("libva") }
        #expect(ffmpeg.isEmpty, "\(ffmpeg)")
    }

    @Test func aConverterOfTheFastLevelLoadsLibswresampleWhenMade() throws {
        // One 44.1 kHz voice mixed at the fast level: its converter is libswresample's.
        let loaded = try librariesLoaded([
            "bench", "mix", "--voices", "1", "--converted", "1", "--seconds", "0.1", "--runs", "1", "--quality", "fast",
            "--backends", "queue",
        ])
        #expect(loaded.contains { $0.hasPrefix("libswresample") } && loaded.contains { $0.hasPrefix("libavutil") }, "\(loaded)")
    }
}
