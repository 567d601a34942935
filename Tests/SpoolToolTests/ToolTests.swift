import Foundation
import Testing
import Spool
import SpoolTestSupport

/// Runs the built `spool` executable.
struct Tool {
    static let fixtures = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures")

    /// The executable sits beside the test bundle in the build products folder.
    static let executable: URL = {
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = dir.appendingPathComponent("spool")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            dir = dir.deletingLastPathComponent()
        }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/debug/spool")
    }()

    struct Result {
        let status: Int32
        let stdout: Data
        let stderr: String
        var text: String { String(decoding: stdout, as: UTF8.self) }
    }

    /// Runs the tool with `arguments`, its environment the tests' own with `environment` set over it.
    static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> Result {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let watchdog = HangWatchdog(processIdentifier: process.processIdentifier)
        // Read before waiting so a large output cannot fill the pipe and stall the child.
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        watchdog.finish()
        return Result(status: process.terminationStatus, stdout: stdout,
                      stderr: String(decoding: stderr, as: UTF8.self) + watchdog.note)
    }

    static func fixture(_ name: String) -> String { fixtures.appendingPathComponent(name).path }
}

@Suite("spool info and spool decode")
struct ToolTests {
    @Test func infoJSONCarriesEveryField() throws {
        let result = try Tool.run(["info", "--json", Tool.fixture("mp3-44100-stereo.mp3"), Tool.fixture("flac-48000-mono-s24.flac")])
        #expect(result.status == 0)
        let reports = try JSONSerialization.jsonObject(with: result.stdout) as! [[String: Any]]
        #expect(reports.count == 2)
        let mp3 = reports[0]
        #expect(mp3["container"] as? String == "MP3")
        #expect(mp3["codec"] as? String == "MPEG-1 Layer III")
        #expect(mp3["sampleRate"] as? Double == 44_100)
        #expect(mp3["channels"] as? Int == 2)
        #expect(mp3["frames"] as? Int == 22_050)
        #expect(mp3["duration"] as? Double == 0.5)
        #expect(mp3["bitRate"] as? Int == 128_000)
        #expect(mp3["isVBR"] as? Bool == false)
        #expect((mp3["tags"] as? [String: String])?["title"] == "Spool Test")
        #expect(reports[1]["container"] as? String == "FLAC")
        #expect(reports[1]["isVBR"] as? Bool == true)
    }

    @Test func infoTextNamesTheFields() throws {
        let result = try Tool.run(["info", Tool.fixture("vorbis-44100-stereo.ogg")])
        #expect(result.status == 0)
        for word in ["Ogg", "Vorbis", "44100 Hz, 2 ch", "frames      22050", "title       Spool Test"] {
            #expect(result.text.contains(word), "\(word)")
        }
    }

    @Test func runtimeErrorIsOneLineAndExitStatus1() throws {
        let path = Tool.fixture("broken/text.mp3")
        let result = try Tool.run(["info", path])
        #expect(result.status == 1)
        #expect(result.stderr.hasPrefix("spool: \(path): "))
        #expect(result.stderr.split(separator: "\n").count == 1)
    }

    @Test func usageErrorsExitWith2() throws {
        #expect(try Tool.run([]).status == 2)
        #expect(try Tool.run(["frobnicate"]).status == 2)
        #expect(try Tool.run(["info"]).status == 2)
        #expect(try Tool.run(["decode", Tool.fixture("mp3-44100-stereo.mp3")]).status == 2)
        #expect(try Tool.run(["decode", Tool.fixture("mp3-44100-stereo.mp3"), "--output", "-", "--start", "x"]).status == 2)
        #expect(try Tool.run(["info", "--bogus", "x"]).status == 2)
    }

    @Test func helpForEachCommand() throws {
        for command in ["info", "decode"] {
            let result = try Tool.run([command, "--help"])
            #expect(result.status == 0)
            #expect(result.text.contains("usage: spool \(command)"))
        }
        #expect(try Tool.run(["bench", "--help"]).text.contains("usage: spool bench"))
    }

    @Test func decodeToWAVRoundTrips() throws {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("spool-decode-\(UUID()).wav").path
        defer { try? FileManager.default.removeItem(atPath: output) }
        let source = Tool.fixture("flac-44100-stereo-s16.flac")
        let result = try Tool.run(["decode", source, "--output", output])
        #expect(result.status == 0)
        let expected = try DecoderRegistry.shared.open(path: source).decodeAll()
        let written = try DecoderRegistry.shared.open(path: output)
        #expect(written.info.codec == "PCM 32-bit float")
        #expect(try written.decodeAll().samples == expected.samples)
    }

    @Test func decodeRawToStdoutWithStartAndDuration() throws {
        let source = Tool.fixture("wav-48000-stereo-s24.wav")
        let result = try Tool.run(["decode", source, "--output", "-", "--start", "0.1", "--duration", "0.25"])
        #expect(result.status == 0)
        let samples = result.stdout.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        #expect(samples.count == 12_000 * 2)
        let whole = try DecoderRegistry.shared.open(path: source).decodeAll().samples
        #expect(samples[...] == whole[(4_800 * 2)..<(16_800 * 2)])
    }

    @Test func decodeStartPastTheEndIsAnError() throws {
        let result = try Tool.run(["decode", Tool.fixture("wav-8000-mono-ulaw.wav"), "--output", "-", "--start", "5"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("past the end"))
    }

    /// One rule for decode and play: a damaged file writes (or plays) every frame that
    /// decodes, warns, and exits with status 1.
    @Test func decodeWarnsAboutTruncationWritesThePrefixAndExitsWithStatus1() throws {
        let path = Tool.fixture("broken/truncated.wav")
        let result = try Tool.run(["decode", path, "--output", "-"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("warning: data ends early at byte"))
        let decodable = try DecoderRegistry.shared.open(path: path).decodeAll()
        #expect(result.stdout.count == decodable.samples.count * 4, "every frame that decodes")
        let played = try Tool.run(["play", path, "--output", "null", "--quiet"])
        #expect(played.status == result.status, "play and decode agree")
        let clean = try Tool.run(["decode", Tool.fixture("wav-8000-mono-ulaw.wav"), "--output", "-"])
        #expect(clean.status == 0 && clean.stderr.isEmpty, "\(clean.stderr)")
    }
}

@Suite("spool play and spool bench")
struct PlayAndBenchToolTests {
    @Test func playRendersOfflineToWAVSampleForSample() throws {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("spool-play-\(UUID()).wav").path
        defer { try? FileManager.default.removeItem(atPath: output) }
        let source = Tool.fixture("vorbis-44100-stereo.ogg")
        let result = try Tool.run(["play", source, "--output", "wav:\(output)"])
        #expect(result.status == 0, "\(result.stderr)")
        let expected = try DecoderRegistry.shared.open(path: source).decodeAll()
        let written = try DecoderRegistry.shared.open(path: output).decodeAll()
        #expect(written.format == expected.format)
        #expect(written.samples == expected.samples)
        #expect(result.stderr.contains("played 22050 frames"))
    }

    @Test func playConvertsToTheDeviceRateAndLoops() throws {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("spool-play-\(UUID()).wav").path
        defer { try? FileManager.default.removeItem(atPath: output) }
        let result = try Tool.run(["play", Tool.fixture("wav-44100-stereo-s16.wav"), "--output", "wav:\(output)",
                                   "--device-rate", "48000", "--loops", "1", "--volume", "0.5"])
        #expect(result.status == 0, "\(result.stderr)")
        let written = try DecoderRegistry.shared.open(path: output)
        #expect(written.format.sampleRate == 48_000)
        #expect(written.frameCount == 48_000)  // two passes of 0.5 s
        // What was written is the file, converted and at half volume: the same level (RMS ×
        // 2), and each channel's own tones (440 + 1000 Hz left, 550 + 1250 Hz right) at their
        // frequencies, where a wrong rate would move them and a swap would trade them.
        let samples = try written.decodeAll().samples
        let source = try DecoderRegistry.shared.open(path: Tool.fixture("wav-44100-stereo-s16.wav")).decodeAll().samples
        func rms(_ x: [Float], channel: Int, skip: Int) -> Double {
            let values = stride(from: skip * 2 + channel, to: x.count, by: 2).map { Double(x[$0]) }
            return (values.reduce(0) { $0 + $1 * $1 } / Double(values.count)).squareRoot()
        }
        func power(_ x: [Float], channel: Int, frequency: Double, rate: Double) -> Double {
            let w = 2 * Double.pi * frequency / rate
            var re = 0.0, im = 0.0
            for (n, i) in stride(from: channel, to: x.count, by: 2).enumerated() {
                re += Double(x[i]) * cos(w * Double(n))
                im -= Double(x[i]) * sin(w * Double(n))
            }
            return (re * re + im * im) / Double(x.count / 2)
        }
        for channel in 0..<2 {
            let ratio = 2 * rms(samples, channel: channel, skip: 2_400) / rms(source, channel: channel, skip: 2_205)
            #expect(abs(ratio - 1) < 0.01, "channel \(channel): level ratio \(ratio)")
        }
        let (own, other) = ([[440.0, 1000], [550, 1250]], [[550.0, 1250], [440, 1000]])
        for channel in 0..<2 {
            for (mine, theirs) in zip(own[channel], other[channel]) {
                let p = power(samples, channel: channel, frequency: mine, rate: 48_000)
                let q = power(samples, channel: channel, frequency: theirs, rate: 48_000)
                #expect(p > 1000 * q, "channel \(channel): \(mine) Hz against \(theirs) Hz")
                let off = power(samples, channel: channel, frequency: mine * 44_100 / 48_000, rate: 48_000)
                #expect(p > 100 * off, "channel \(channel): \(mine) Hz sits where a wrong rate would not put it")
            }
        }
    }

    @Test func playToTheNullDeviceTakesRealTime() throws {
        let start = Date()
        let result = try Tool.run(["play", Tool.fixture("wav-8000-mono-ulaw.wav"), "--output", "null", "--buffer-frames", "256"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(Date().timeIntervalSince(start) >= 0.45)  // 0.5 s of audio, paced by the clock
        #expect(result.stderr.contains("0 underruns"))
    }

    @Test func playRejectsBadArguments() throws {
        #expect(try Tool.run(["play"]).status == 2)
        #expect(try Tool.run(["play", Tool.fixture("wav-8000-mono-ulaw.wav"), "--backend", "coreaudio"]).status == 2)
        #expect(try Tool.run(["play", Tool.fixture("wav-8000-mono-ulaw.wav"), "--volume", "3"]).status == 2)
        #expect(try Tool.run(["play", Tool.fixture("wav-8000-mono-ulaw.wav"), "--output", "wav:"]).status == 2)
        let missing = try Tool.run(["play", "/nonexistent.mp3", "--output", "null"])
        #expect(missing.status == 1)
        #expect(missing.stderr.hasPrefix("spool: /nonexistent.mp3: "))
    }

    @Test func latencyBenchWritesJSONAndAChart() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("spool-latency-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let json = dir.appendingPathComponent("latency.json").path, chart = dir.appendingPathComponent("latency.svg").path
        let result = try Tool.run(["bench", "latency", "--backends", "queue", "--buffer-frames", "256", "--buffers", "2",
                                   "--starts", "8", "--seconds", "0.3", "--no-reference", "--json", json, "--chart", chart])
        #expect(result.status == 0, "\(result.stderr)")
        let rows = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: json))) as! [[String: Any]]
        // One row with starts below the floor, one without; on the null device, which always
        // rewinds, the first starts within a period and the second waits behind the buffer.
        #expect(rows.map { $0["rewind"] as? String } == ["on", "off"])
        try #require(rows.count == 2)
        let row = rows[0]
        #expect(row["periodFrames"] as? Int == 256 && row["periods"] as? Int == 2)
        let belowFloor = row["startP50Ms"] as? Double ?? .nan, atFloor = rows[1]["startP50Ms"] as? Double ?? .nan
        #expect(belowFloor <= 256 / 48.0 + 2, "p50 \(belowFloor) ms with rewind")
        #expect(atFloor >= 256 / 48.0 - 0.5, "p50 \(atFloor) ms without rewind")
        #expect((row["starts"] as? Int ?? 0) + (row["startTimeouts"] as? Int ?? 0) == 8)
        // The null device's timestamps are its own clock's model, and the row says so.
        #expect(row["timing"] as? String == "modelled")
        #expect(result.text.contains("modelled"))
        let svg = try String(contentsOfFile: chart, encoding: .utf8)
        #expect(svg.hasPrefix("<svg") && svg.contains("<circle"))
        #expect(svg.contains("fill=\"white\""), "a modelled row is drawn hollow")
    }
}
