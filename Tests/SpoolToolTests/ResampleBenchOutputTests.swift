import Foundation
import Testing
import SpoolTestSupport

/// `spool bench resample` prints one row per resampler, conversion and channel count, and its
/// JSON carries the same figures with the fields the quality levels are chosen by.
@Suite("Resample benchmark output")
struct ResampleBenchOutputTests {
    /// `spool bench resample ARGUMENTS… --json PATH`: what it printed and its JSON rows.
    static func bench(_ arguments: [String]) throws -> (result: Tool.Result, rows: [[String: Any]]) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("spool-bench-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let json = dir.appendingPathComponent("resample.json").path
        let result = try Tool.run(["bench", "resample"] + arguments + ["--json", json])
        #expect(result.status == 0, "\(result.stderr)")
        let rows = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: json))) as? [[String: Any]])
        return (result, rows)
    }

    @Test func everyConversionMonoAndStereoForEachResamplerAsked() throws {
        let (result, rows) = try Self.bench(["--resamplers", "speexQ0,linear", "--seconds", "0.05", "--repeats", "1", "--no-peer"])
        #expect(rows.count == 2 * 5 * 2)
        let conversions: Set<[Double]> = [[44_100, 48_000], [48_000, 44_100], [22_050, 48_000], [32_000, 48_000], [16_000, 48_000]]
        for id in ["speexQ0", "linear"] {
            let mine = rows.filter { $0["id"] as? String == id }
            #expect(mine.count == 10)
            #expect(Set(mine.compactMap { row in (row["from"] as? Double).flatMap { f in (row["to"] as? Double).map { [f, $0] } } }) == conversions)
            #expect(Set(mine.compactMap { $0["channels"] as? Int }) == [1, 2])
            for row in mine {
                #expect((row["framesPerSecond"] as? Double).map { $0 > 0 } == true)
                #expect(row["quality"] as? String == "", "neither lane uses \(id)")
                #expect(row["timing"] as? String == "observed")
                let measure = row["aliasingMeasure"] as? String
                #expect(measure == (row["from"] as? Double == 48_000 && row["to"] as? Double == 44_100 ? "alias" : "image"))
            }
        }
        let speex = try #require(rows.first { $0["id"] as? String == "speexQ0" && $0["from"] as? Double == 44_100 && $0["channels"] as? Int == 2 })
        #expect(speex["resampler"] as? String == "libspeexdsp q0")
        #expect(speex["varispeedFramesPerSecond"] is NSNull || speex["varispeedFramesPerSecond"] == nil, "fixed ratio only")
        #expect((speex["snr1kHzDB"] as? Double).map { $0 > 55 && $0 < 70 } == true, "\(speex)")
        let linear = try #require(rows.first { $0["id"] as? String == "linear" && $0["from"] as? Double == 48_000 && $0["channels"] as? Int == 1 })
        #expect((linear["varispeedFramesPerSecond"] as? Double).map { $0 > 0 } == true)
        #expect((linear["aliasingDB"] as? Double).map { $0 > -12 } == true, "linear interpolation aliases: \(linear)")
        #expect((linear["snrDB"] as? Double) == (linear["snrHighDB"] as? Double), "the high tone is the worse one")

        // The table: a line per row, and the summary names both.
        let lines = result.text.split(separator: "\n")
        #expect(lines.filter { $0.hasPrefix("libspeexdsp q0 ") }.count == 10 + 1)
        #expect(lines.contains { $0.hasPrefix("libsamplerate linear ") && $0.contains("16→48") && $0.contains("image") })
    }

    @Test func openALSoftsResamplersFollowMeasuredTheSameWayQualityOnly() throws {
        let (result, rows) = try Self.bench(["--resamplers", "swrFilter16", "--peers", "linear", "--seconds", "0.05", "--repeats", "1"])
        #expect(rows.count == 2 * 5 * 2)
        let fast = rows.filter { $0["id"] as? String == "swrFilter16" }
        #expect(fast.count == 10 && fast.allSatisfy { $0["quality"] as? String == "fast" && $0["engineUse"] as? String == "rate 1 at fast" })
        let peer = rows.filter { ($0["id"] as? String)?.hasPrefix("openal-soft:Linear") == true }
        #expect(peer.count == 10, "\(rows.compactMap { $0["id"] as? String })")
        for row in peer {
            #expect(row["framesPerSecond"] is NSNull || row["framesPerSecond"] == nil, "quality only")
            #expect(row["engineUse"] as? String == "peer of fast")
            // OpenAL Soft 1.19 steps in 1/4096ths of a frame: 44.1 → 48 kHz plays 53 ppm flat.
            if row["from"] as? Double == 44_100 {
                #expect((row["frequencyErrorPercent"] as? Double).map { $0 < -0.003 && $0 > -0.008 } == true, "\(row)")
                // Fitted at its own frequency, the 1 kHz tone is clean; the 15 kHz one droops.
                #expect((row["snr1kHzDB"] as? Double).map { $0 > 45 } == true, "\(row)")
                #expect((row["snrHighDB"] as? Double).map { $0 < 15 } == true, "\(row)")
            }
        }
        let lines = result.text.split(separator: "\n")
        #expect(lines.filter { $0.hasPrefix("OpenAL Soft Linear (default) ") }.count == 10 + 1)
    }

    @Test func anUnknownResamplerIsAUsageError() throws {
        let result = try Tool.run(["bench", "resample", "--resamplers", "speexQ4"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("speexQ4"))
    }
}
