import Foundation

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

/// Records a PulseAudio source (a sink's monitor) as mono Float32 at 48 kHz with `parec`, in the
/// background, and works out when each sample was captured by watching the recording grow.
///
/// `parec` runs in a process of its own, with the 20 ms fragments it always had: a monitor's
/// latency request reaches its sink, and a recorder in the test's own process or with smaller
/// fragments changed how the sink ran the streams under test. Every millisecond or so a thread
/// reads the file's size: a sample counted at host time t was captured no later than t, so
/// t − (samples counted)/rate bounds the host time of sample 0 from above, and the smallest
/// of those bounds (a reading just after `parec` wrote a fragment) is within a few
/// milliseconds of it. Counting back from the end alone was late by whatever `parec` had not
/// written yet when it was stopped: up to 32 ms on a loaded machine.
public final class MonitorRecorder: @unchecked Sendable {
    // Sendable: the watcher thread touches only `watch`, which is locked.
    public let sampleRate = 48_000
    private let path: String
    private let process = Process()
    private let file: FileHandle
    private let watch = NSLock()
    private var watching = true
    /// The smallest bound so far on the host time (ns) of sample 0, and the samples then counted.
    private var origin = Double.infinity
    private let watcherDone = DispatchSemaphore(value: 0)

    /// Starts recording `source`.
    public init(source: String) throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("spool-monitor-\(UUID()).raw").path
        guard FileManager.default.createFile(atPath: path, contents: nil),
              let file = FileHandle(forWritingAtPath: path) else {
            throw CocoaError(.fileWriteUnknown)
        }
        self.file = file
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["parec", "-d", source, "--format=float32le", "--rate=\(sampleRate)", "--channels=1",
                             "--raw", "--latency-msec=20"]
        process.standardOutput = file
        process.standardError = FileHandle.nullDevice
        try process.run()
        let descriptor = file.fileDescriptor
        let thread = Thread { [self] in
            var status = stat()
            while watch.withLock({ watching }) {
                if fstat(descriptor, &status) == 0, status.st_size >= 4 {
                    let now = Double(Self.hostTimeNow())
                    let bound = now - Double(status.st_size / 4) * 1e9 / Double(sampleRate)
                    watch.withLock { origin = min(origin, bound) }
                }
                usleep(1_000)
            }
            watcherDone.signal()
        }
        thread.start()
    }

    deinit {
        stopWatching()
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(atPath: path)
    }

    private func stopWatching() {
        let was = watch.withLock { () -> Bool in
            defer { watching = false }
            return watching
        }
        if was { watcherDone.wait() }
    }

    private static func hostTimeNow() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    /// Stops recording and returns the samples.
    public func stop() throws -> [Float] {
        stopWatching()
        let stoppedAt = Double(Self.hostTimeNow())
        // SIGKILL: a child spawned from a dispatch worker inherits a mask that blocks SIGTERM.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try file.close()
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        // The end is one more bound (everything in the file was written by the stop).
        let end = stoppedAt - Double(data.count / 4) * 1e9 / Double(sampleRate)
        watch.withLock { origin = min(origin, end) }
        return data.withUnsafeBytes { raw in
            (0..<(data.count / 4)).map { Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self))) }
        }
    }

    /// When sample `index` of the stopped recording reached the monitor, in `HostTime`
    /// nanoseconds: late by at most what `parec` takes to write a fragment it has captured,
    /// never early.
    public func hostTime(ofSample index: Int) -> UInt64 {
        let origin = watch.withLock { self.origin }
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
