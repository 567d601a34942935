import Foundation
import SpoolCore
import SpoolOutput
import Testing

/// The PulseAudio server the real-output tests play to: whether one answers, its streams,
/// private null sinks, and a recorder for a sink's monitor. Shared by every test target that
/// plays to a real sound server.
public enum SoundServer {
    /// Whether a server answers `pactl info`.
    public static let isRunning: Bool = (try? run("pactl", ["info"]).status) == 0

    /// Whether the tests run under a sanitizer (`scripts/sanitize.sh` says so): its slow-down
    /// of every memory access (ThreadSanitizer's, AddressSanitizer's) makes real-time timing on
    /// a sound server meaningless, so the suites that time a real server are left to the plain
    /// run, which CI also makes.
    public static var underSanitizer: Bool { ProcessInfo.processInfo.environment["SPOOL_SANITIZER"].map { !$0.isEmpty } ?? false }

    /// Whether the tests run in CI, where a missing server is a failure rather than a skip.

    public static var isCI: Bool { ProcessInfo.processInfo.environment["CI"].map { !$0.isEmpty } ?? false }

    /// Whether a server answers; when none does (the test runs only in CI then, which must
    /// start one), records the failure. A sound-server test begins with
    /// `guard SoundServer.expectRunning() else { return }`.
    public static func expectRunning(sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        guard isRunning else {
            Issue.record("CI must run a PulseAudio server (scripts/pulseaudio.sh)", sourceLocation: sourceLocation)
            return false
        }
        return true
    }

    /// Plays a tone of `seconds` at 440 Hz with `media.role=phone` (`paplay`), in the
    /// background, on the shared server's `sink` or on the server at `server`: a call in
    /// another program, which `module-role-cork` answers by corking the `music` streams on its sink.
    public static func playPhoneCall(on sink: String? = nil, server: String? = nil,
                                     directory: URL = FileManager.default.temporaryDirectory, seconds: Double) throws -> Process {
        let file = directory.appendingPathComponent("call-\(UUID().uuidString).wav")
        let format = try AudioFormat(sampleRate: 48_000, channelCount: 1)
        let frames = Int(seconds * 48_000)
        let tone = try PCMBuffer(format: format, samples: (0..<frames).map { Float(0.3 * sin(2 * Double.pi * 440 * Double($0) / 48_000)) })
        let writer = try WAVFileWriter(path: file.path, format: format)
        try writer.write(tone)
        try writer.finish()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["paplay"] + (server.map { ["--server=\($0)"] } ?? []) + (sink.map { ["--device=\($0)"] } ?? [])
            + ["--property=media.role=phone", file.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// The level of a sine of `frequency` in mono `samples`, in windows of 10 ms (Hann-windowed
    /// DFT at that frequency alone, as amplitude): a tone told apart from another one playing
    /// at the same time.
    public static func toneLevels(_ samples: [Float], frequency: Double, sampleRate: Int) -> [Double] {
        let size = sampleRate / 100
        let window = (0..<size).map { 0.5 - 0.5 * cos(2 * Double.pi * Double($0) / Double(size)) }
        let gain = window.reduce(0, +) / 2
        let step = 2 * Double.pi * frequency / Double(sampleRate)
        return stride(from: 0, to: samples.count - size + 1, by: size).map { start in
            var re = 0.0, im = 0.0
            for i in 0..<size {
                let x = Double(samples[start + i]) * window[i]
                re += x * cos(step * Double(start + i))
                im -= x * sin(step * Double(start + i))
            }
            return (re * re + im * im).squareRoot() / gain
        }
    }

    /// Runs a tool found on `PATH` and waits for it.
    /// - Returns: Its exit status and standard output.
    public static func run(_ tool: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [tool] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// The sink inputs (playback streams) that process `pid` has open on the server, only
    /// those whose `application.name` contains `application` when given (the ALSA plug-in
    /// names its streams "ALSA plug-in [program]"; OpenAL Soft's are "OpenAL Soft").
    public static func sinkInputs(ofProcess pid: Int32, application: String? = nil) throws -> Set<Int> {
        let listing = try run("pactl", ["list", "sink-inputs"]).output
        var inputs = Set<Int>()
        var current: Int?
        var matchesProcess = false, matchesApplication = application == nil
        func close() {
            if let input = current, matchesProcess, matchesApplication { inputs.insert(input) }
        }
        for line in listing.split(separator: "\n") {
            let text = line.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("Sink Input #") {
                close()
                current = Int(line.dropFirst("Sink Input #".count))
                matchesProcess = false
                matchesApplication = application == nil
            } else if text == "application.process.id = \"\(pid)\"" {
                matchesProcess = true
            } else if let application, text.hasPrefix("application.name = "), text.contains(application) {
                matchesApplication = true
            }
        }
        close()
        return inputs
    }
}

/// A null sink of the test's own, loaded while the object lives, with a description OpenAL
/// Soft lists as a device name: what the test plays is recorded from its monitor without the
/// sound of other tests playing to the server's default sink at the same time.
public final class PrivateNullSink {
    /// The sink's name, also its description (OpenAL Soft's device name for it).
    public let name: String
    private let module: String
    private var unloaded = false

    public init(sampleRate: Int = 48_000) throws {
        name = "spool_test_\(getpid())_\(UInt32.random(in: 0...UInt32.max))"
        let result = try SoundServer.run("pactl", ["load-module", "module-null-sink", "sink_name=\(name)",
                                                   "sink_properties=device.description=\(name)",
                                                   "rate=\(sampleRate)", "channels=2"])
        module = result.output.trimmingCharacters(in: .whitespacesAndNewlines)
        guard result.status == 0, Int(module) != nil else { throw CocoaError(.featureUnsupported) }
    }

    deinit { unload() }

    /// The source that records what the sink plays.
    public var monitor: String { "\(name).monitor" }

    /// Moves a playback stream onto this sink.
    public func move(sinkInput: Int) throws {
        let result = try SoundServer.run("pactl", ["move-sink-input", "\(sinkInput)", name])
        guard result.status == 0 else { throw CocoaError(.featureUnsupported) }
    }

    /// Unloads the sink; a stream playing to it fails (the server has nowhere to move it).
    public func unload() {
        guard !unloaded else { return }
        unloaded = true
        _ = try? SoundServer.run("pactl", ["unload-module", module])
    }
}

/// Records a PulseAudio source (a sink's monitor) as mono Float32 at 48 kHz through Spool's
/// own recorder (`MonitorClock`), in the background, with 20 ms fragments as `parec` asks for:
/// a monitor's fragment is a latency request that reaches its sink, and smaller ones changed
/// how the sink ran the streams under test. When each sample was captured comes from the reads
/// alone (`MonitorClock.Recording.originBoundHostTime`): late by at most the server's hand-over
/// of a fragment, never early.
public final class MonitorRecorder: Sendable {
    public let sampleRate = 48_000
    private let clock: MonitorClock
    private let origin = Locked(Double.infinity)

    /// Starts recording `source`, on `server` when given (a `PrivateSoundServer.address`).
    public init(source: String, server: String? = nil) throws {
        clock = try MonitorClock(source: source, channels: 1, fragmentMilliseconds: 20, server: server)
    }

    /// Stops recording and returns the samples.
    public func stop() throws -> [Float] {
        let recording = try clock.stopRecording()
        origin.withLock { $0 = recording.originBoundHostTime }
        return recording.samples
    }

    /// When sample `index` of the stopped recording reached the monitor, in `HostTime`
    /// nanoseconds: late by at most the server's hand-over of a fragment, never early.
    public func hostTime(ofSample index: Int) -> UInt64 {
        let origin = origin.withLock { $0 }
        return UInt64((origin + Double(index) * 1e9 / Double(sampleRate)).rounded())
    }
}

/// What a recording of one tone burst shows.
public struct ToneAnalysis {
    /// Seconds from the start of the recording to the tone's first loud sample.
    public var onsetSeconds: Double
    /// How long the tone lasts, first to last loud sample.
    public var durationSeconds: Double
    /// The tone's frequency, from its rising zero crossings.
    public var frequency: Double
    /// Start times (seconds into the recording) of 5 ms windows of near-silence inside the tone.
    public var dropouts: [Double]

    /// The 5 ms window RMS below which a window counts as silence.
    public static let silenceRMS: Float = 0.02

    /// Finds the one tone burst in `samples`; `nil` when nothing rises above `loudLevel`.
    public init?(samples: [Float], sampleRate: Int, loudLevel: Float = 0.1) {
        guard let first = samples.firstIndex(where: { abs($0) > loudLevel }),
              let last = samples.lastIndex(where: { abs($0) > loudLevel }), last > first else { return nil }
        onsetSeconds = Double(first) / Double(sampleRate)
        durationSeconds = Double(last - first) / Double(sampleRate)
        var crossings: [Double] = []
        for i in (first + 1)...last where samples[i - 1] < 0 && samples[i] >= 0 {
            crossings.append(Double(i - 1) + Double(-samples[i - 1]) / Double(samples[i] - samples[i - 1]))
        }
        if crossings.count >= 2, let a = crossings.first, let b = crossings.last, b > a {
            frequency = Double(crossings.count - 1) * Double(sampleRate) / (b - a)
        } else {
            frequency = 0
        }
        let window = sampleRate / 200
        dropouts = []
        var start = first
        while start + window <= last {
            let slice = samples[start..<(start + window)]
            let rms = (slice.reduce(0) { $0 + $1 * $1 } / Float(window)).squareRoot()
            if rms < Self.silenceRMS { dropouts.append(Double(start) / Double(sampleRate)) }
            start += window
        }
    }
}
