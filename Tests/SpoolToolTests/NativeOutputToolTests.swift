import Foundation
import SoundServerTestSupport
import Spool
import SpoolTestSupport
import Testing

/// `spool effects` and `spool bench latency` on the native PulseAudio output (`--output
/// pulse`), against a sound server of the test's own: what they play is heard on its sink.
@Suite("spool on the native sound-server output", .serialized,
       .disabled(if: SoundServer.underSanitizer, "real-time timing means nothing under a sanitizer's slow-down; the plain run checks it"))
struct NativeOutputToolTests {
    static let enabled = SoundServer.isRunning || SoundServer.isCI

    @Test("spool effects --output pulse plays each sound on the server, as an event stream",
          .enabled(if: enabled, "no PulseAudio server answers `pactl info`; start one with scripts/pulseaudio.sh"))
    func effectsPlayOnTheNativeOutput() throws {
        guard SoundServer.expectRunning() else { return }
        let server = try PrivateSoundServer()
        let directory = server.directory.appendingPathComponent("sounds")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let writer = try WAVFileWriter(path: directory.appendingPathComponent("beep.wav").path, format: stereo48)
        try writer.write(try sine(1_000, frames: 24_000, format: stereo48, amplitude: 0.5))
        try writer.finish()
        // The recorder starts ahead: a new null sink's monitor drops what it gets while idle.
        let recorder = try MonitorRecorder(source: "null.monitor", server: server.address)
        Thread.sleep(forTimeInterval: 1)

        let process = Process()
        process.executableURL = Tool.executable
        process.arguments = ["effects", directory.path, "beep", "--output", "pulse", "--buffer-frames", "256", "--buffers", "2"]
        process.environment = ProcessInfo.processInfo.environment.merging(["PULSE_SERVER": server.address]) { $1 }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // The stream's role, read from the server while the tool plays.
        var roles: [String] = []
        let deadline = Date().addingTimeInterval(5)
        while process.isRunning, roles.isEmpty, Date() < deadline {
            roles = try SinkInput.all(server: server.address).values.compactMap { $0.properties["media.role"] }
            usleep(20_000)
        }
        let stdout = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        Thread.sleep(forTimeInterval: 0.3)
        let samples = try recorder.stop()

        #expect(process.terminationStatus == 0, "\(stderr)")
        #expect(stderr.isEmpty, "no notice: the native output was opened as asked (\(stderr))")
        #expect(stdout.contains("on pulse via queue"), "\(stdout)")
        #expect(stdout.contains("beep.wav: 0.50 s, play() → first frame heard"), "\(stdout)")
        #expect(roles == ["event"], "the stream's media.role on the server: \(roles)")
        let tone = try #require(ToneAnalysis(samples: samples, sampleRate: recorder.sampleRate),
                                "the sink's monitor heard nothing (\(samples.count) frames)")
        #expect(abs(tone.frequency - 1_000) <= 10)
        #expect(abs(tone.durationSeconds - 0.5) <= 0.02, "heard for \(tone.durationSeconds) s")
        #expect(tone.dropouts.isEmpty, "dropouts at \(tone.dropouts.prefix(5)) s")
    }

    @Test("spool bench latency measures the native output beside the null device in one run, with and without rewind",
          .enabled(if: enabled, "no PulseAudio server answers `pactl info`; start one with scripts/pulseaudio.sh"))
    func latencyBenchMeasuresTheNativeOutput() throws {
        guard SoundServer.expectRunning() else { return }
        let server = try PrivateSoundServer()
        let json = server.directory.appendingPathComponent("latency.json").path
        let result = try Tool.run(
            ["bench", "latency", "--backends", "queue,openal", "--output", "pulse,null", "--configs", "256x2", "--starts", "3",
             "--seconds", "0.5", "--no-reference", "--json", json],
            environment: ["PULSE_SERVER": server.address])
        #expect(result.status == 0, "\(result.stderr)")
        let all = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: json))) as? [[String: Any]])
        func rows(_ backend: String, _ output: String) -> [[String: Any]] {
            all.filter { $0["backend"] as? String == backend && $0["output"] as? String == output }
        }
        // The queue on each output, rewinding on both (the native output and the null device
        // rewrite what they hold); OpenAL on the null device only (OpenAL Soft reaches the
        // server through its own driver, by `default`).
        #expect(rows("queue", "pulse").compactMap { $0["rewind"] as? String }.sorted() == ["off", "on"])
        #expect(rows("queue", "null").compactMap { $0["rewind"] as? String }.sorted() == ["off", "on"])
        #expect(rows("openal", "null").count == 1)
        #expect(all.count == 5)
        for row in rows("queue", "pulse") {
            // What the server granted, not the request echoed: minreq is the period asked,
            // tlength at least the two periods.
            let granted = try #require(row["granted"] as? String).split(separator: "/").compactMap { Int($0) }
            #expect(granted.count == 3 && granted[1] == 256 && granted[0] >= 512, "granted \(granted)")
            #expect(row["timing"] as? String == "observed")
            let device = row["deviceLatencyMs"] as? Double ?? 0
            let output = row["outputLatencyMs"] as? Double ?? 0
            #expect(device > 0 && device <= output, "device \(device) ms of \(output) ms")
            #expect((row["startTimeouts"] as? Int) == 0)
        }
        #expect(rows("queue", "null").allSatisfy { $0["granted"] is NSNull || $0["granted"] == nil })
        let usage = try Tool.run(["bench", "latency", "--configs", "256x2", "--buffer-frames", "256"])
        #expect(usage.status != 0 && usage.stderr.contains("--configs"), "\(usage.stderr)")
        let bad = try Tool.run(["bench", "latency", "--configs", "256x1"])
        #expect(bad.status != 0 && bad.stderr.contains("FxP"), "\(bad.stderr)")
    }
}
