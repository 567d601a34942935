import Foundation
import Spool
import Testing
import SpoolTestSupport

/// What the tool tells a user: one name per option across commands, hints that lead
/// somewhere, every output spelled out, and no false alarm at the end of a sound.
@Suite("spool messages and options")
struct ToolMessageTests {
    @Test func anUnknownCommandPointsToTheTopLevelHelp() throws {
        let result = try Tool.run(["frobnicate"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("unknown command 'frobnicate'"))
        #expect(result.stderr.contains("try 'spool --help'"))
        #expect(!result.stderr.contains("spool frobnicate --help"))
        // A known command's usage error still points to its own help.
        #expect(try Tool.run(["play"]).stderr.contains("try 'spool play --help'"))
    }

    @Test func theTopLevelHelpListsEveryBenchmark() throws {
        let help = try Tool.run(["--help"]).text
        for name in ["decode", "cache", "mix", "latency", "resample"] {
            #expect(help.contains(name), "\(name) missing from spool --help")
        }
    }

    @Test func aBadOutputIsAnsweredWithEveryChoice() throws {
        for backend in ["queue", "openal"] {
            let result = try Tool.run(["play", Tool.fixture("wav-8000-mono-ulaw.wav"), "--backend", backend, "--output", "speakers"])
            #expect(result.status == 2)
            #expect(result.stderr.contains("wav:PATH"), "\(backend): \(result.stderr)")
            #expect(result.stderr.contains("'speakers'"), "\(backend): \(result.stderr)")
        }
    }

    @Test func theLatencyBenchTakesTheDeviceRateByTheNamePlayUses() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("spool-latency-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let json = dir.appendingPathComponent("latency.json").path
        let result = try Tool.run(["bench", "latency", "--backends", "queue", "--buffer-frames", "256", "--buffers", "2",
                                   "--device-rate", "44100", "--starts", "2", "--seconds", "0.1", "--no-reference",
                                   "--json", json])
        #expect(result.status == 0, "\(result.stderr)")
        let rows = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: json))) as? [[String: Any]]
        #expect(rows?.first?["sampleRate"] as? Double == 44_100)
        #expect(try Tool.run(["bench", "--help"]).text.contains("--device-rate HZ"))
    }

    @Test(arguments: ["queue", "openal"])
    func aShortFilePlaysToTheEndWithoutAnUnderrun(_ backend: String) throws {
        // 490 frames, shorter than one refill buffer: its end is no underrun.
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("spool-short-\(UUID()).wav").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let format = try AudioFormat(sampleRate: 44_100, channelCount: 2)
        let writer = try WAVFileWriter(path: path, format: format)
        let samples = (0..<980).map { Float(sin(Double($0) * 0.05)) * 0.25 }
        try samples.withUnsafeBufferPointer { try writer.write($0) }
        try writer.finish()
        let result = try Tool.run(["play", path, "--backend", backend, "--output", "null"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("played 490 frames"), "\(result.stderr)")
        #expect(result.stderr.contains(", 0 underruns"), "\(result.stderr)")
    }
}
