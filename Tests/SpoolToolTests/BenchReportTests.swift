import Foundation
import Testing
import SpoolTestSupport

/// The benchmarks print only what they measured: a figure a back-end cannot give is "—" in
/// the table and `null` in the JSON, never a zero.
@Suite("Benchmark reports")
struct BenchReportTests {
    @Test func latencyBenchLeavesOpenALRefillUnmeasured() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("spool-bench-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let json = dir.appendingPathComponent("latency.json").path
        let result = try Tool.run(["bench", "latency", "--backends", "queue,openal", "--output", "null", "--buffer-frames", "256",
                                   "--buffers", "3", "--starts", "4", "--seconds", "0.3", "--no-reference", "--json", json])
        #expect(result.status == 0, "\(result.stderr)")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: json))) as? [[String: Any]])
        let queue = try #require(rows.first { $0["backend"] as? String == "queue" })
        let openAL = try #require(rows.first { $0["backend"] as? String == "openal" })
        #expect((queue["refillP50Ms"] as? Double).map { $0 > 0 } == true, "the queue's refill turnaround is timed")
        #expect(openAL["refillP50Ms"] is NSNull || openAL["refillP50Ms"] == nil)
        let openALLine = try #require(result.text.split(separator: "\n").first { $0.hasPrefix("openal") })
        #expect(openALLine.contains("—"), "\(openALLine)")
    }

    @Test func decodeBenchTimesBothSidesAsProcesses() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("spool-bench-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let json = dir.appendingPathComponent("decode.json").path
        let result = try Tool.run(["bench", "decode", Tool.fixture("wav-44100-stereo-s16.wav"), "--repeat", "3", "--json", json])
        #expect(result.status == 0, "\(result.stderr)")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: json))) as? [[String: Any]])
        let row = try #require(rows.first)
        #expect(row["peer"] as? String == "sox \(Tool.fixture("wav-44100-stereo-s16.wav")) -t f32 -")
        #expect(row["peerOutput"] as? String == "f32" && row["spoolOutput"] as? String == "f32")
        let spoolMedian = try #require(row["spoolMedianSeconds"] as? Double)
        let peerMedian = try #require(row["peerMedianSeconds"] as? Double)
        // A poll-based wait rounds sox's ~2 ms decode of this 0.5 s fixture up to ~50 ms; a
        // blocking wait does not.
        #expect(peerMedian < 0.04, "peer \(peerMedian) s")
        #expect(abs((row["ratio"] as? Double ?? 0) - peerMedian / spoolMedian) < 1e-9)
        #expect((row["spoolMinSeconds"] as? Double ?? .infinity) <= spoolMedian)
    }
}
