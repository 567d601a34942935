import Foundation

/// The PulseAudio server the real-output tests play to: whether one answers, and a recorder
/// for its null sink's monitor.
enum PulseAudio {
    /// Whether a server answers `pactl info`.
    static let isServerRunning: Bool = {
        guard let result = try? run("pactl", ["info"]) else { return false }
        return result.status == 0
    }()

    /// Whether the tests run in CI, where a missing server is a failure rather than a skip.
    static var isCI: Bool { ProcessInfo.processInfo.environment["CI"].map { !$0.isEmpty } ?? false }

    /// The sink inputs (playback streams) that process `pid` has open on the server.
    static func sinkInputs(ofProcess pid: Int32) throws -> Set<Int> {
        let listing = try run("pactl", ["list", "sink-inputs"]).output
        var inputs = Set<Int>()
        var current: Int?
        for line in listing.split(separator: "\n") {
            if line.hasPrefix("Sink Input #") {
                current = Int(line.dropFirst("Sink Input #".count))
            } else if let input = current,
                      line.trimmingCharacters(in: .whitespaces) == "application.process.id = \"\(pid)\"" {
                inputs.insert(input)
            }
        }
        return inputs
    }

    /// Runs a tool found on `PATH` and waits for it.
    /// - Returns: Its exit status and standard output.
    static func run(_ tool: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
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
}

/// A null sink of the test's own, loaded for as long as the object lives: what the test plays
/// is recorded from its monitor without the sound of anything else using the server at the
/// same time (other tests in the same run play to the default sink too).
final class PrivateNullSink {
    let name: String
    private let module: String

    init(sampleRate: Int = 48_000) throws {
        name = "spool_test_\(getpid())_\(UInt32.random(in: 0...UInt32.max))"
        let result = try PulseAudio.run("pactl", ["load-module", "module-null-sink", "sink_name=\(name)",
                                                  "rate=\(sampleRate)", "channels=2"])
        module = result.output.trimmingCharacters(in: .whitespacesAndNewlines)
        guard result.status == 0, Int(module) != nil else { throw CocoaError(.featureUnsupported) }
    }

    deinit { _ = try? PulseAudio.run("pactl", ["unload-module", module]) }

    /// The source that records what the sink plays.
    var monitor: String { "\(name).monitor" }

    /// Moves a playback stream onto this sink.
    func move(sinkInput: Int) throws {
        let result = try PulseAudio.run("pactl", ["move-sink-input", "\(sinkInput)", name])
        guard result.status == 0 else { throw CocoaError(.featureUnsupported) }
    }
}

/// Records a PulseAudio source (by default `null.monitor`, what the null sink plays) to a raw
/// signed 16-bit file with `parec`, in the background.
final class MonitorRecorder {
    let sampleRate: Int
    let channelCount: Int
    private let path: String
    private let process = Process()
    private let file: FileHandle

    /// Starts recording.
    init(source: String = "null.monitor", sampleRate: Int = 48_000, channelCount: Int = 2) throws {
        self.sampleRate = sampleRate
        self.channelCount = channelCount
        path = FileManager.default.temporaryDirectory.appendingPathComponent("spool-monitor-\(UUID()).raw").path
        guard FileManager.default.createFile(atPath: path, contents: nil),
              let file = FileHandle(forWritingAtPath: path) else {
            throw CocoaError(.fileWriteUnknown)
        }
        self.file = file
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["parec", "--device=\(source)", "--format=s16le", "--rate=\(sampleRate)",
                             "--channels=\(channelCount)", "--raw", "--latency-msec=20"]
        process.standardOutput = file
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Stops recording and returns the first channel as Float samples in −1…1.
    func stop() throws -> [Float] {
        // SIGKILL, not terminate(): a child spawned from a dispatch worker inherits its mask,
        // which blocks SIGTERM and SIGINT, so parec would never see them.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try file.close()
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let frameBytes = 2 * channelCount
        let frames = data.count / frameBytes
        return data.withUnsafeBytes { raw in
            (0..<frames).map { frame in
                Float(Int16(littleEndian: raw.loadUnaligned(fromByteOffset: frame * frameBytes, as: Int16.self))) / 32768
            }
        }
    }
}

/// What a recording of one tone burst shows.
struct ToneAnalysis {
    /// Seconds from the start of the recording to the tone's first loud sample.
    var onsetSeconds: Double
    /// How long the tone lasts, first to last loud sample.
    var durationSeconds: Double
    /// The tone's frequency, from its rising zero crossings.
    var frequency: Double
    /// Start times (seconds into the recording) of 5 ms windows of near-silence inside the tone.
    var dropouts: [Double]

    /// The 5 ms window RMS above which a window counts as tone, below which as silence.
    static let silenceRMS: Float = 0.02

    /// Finds the one tone burst in `samples`; `nil` when nothing rises above silence.
    init?(samples: [Float], sampleRate: Int, loudLevel: Float = 0.1) {
        guard let first = samples.firstIndex(where: { abs($0) > loudLevel }),
              let last = samples.lastIndex(where: { abs($0) > loudLevel }), last > first else { return nil }
        onsetSeconds = Double(first) / Double(sampleRate)
        durationSeconds = Double(last - first) / Double(sampleRate)

        // Rising zero crossings, placed between samples by linear interpolation.
        var crossings: [Double] = []
        for i in (first + 1)...last where samples[i - 1] < 0 && samples[i] >= 0 {
            let fraction = Double(-samples[i - 1]) / Double(samples[i] - samples[i - 1])
            crossings.append(Double(i - 1) + fraction)
        }
        if crossings.count >= 2, let a = crossings.first, let b = crossings.last, b > a {
            frequency = Double(crossings.count - 1) * Double(sampleRate) / (b - a)
        } else {
            frequency = 0
        }

        // Near-silent windows strictly inside the tone.
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
