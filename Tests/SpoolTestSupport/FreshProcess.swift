import Foundation
import Synchronization

/// Runs the tests matching `filter` again in a process of their own: for what a process does
/// once (OpenAL Soft reads its configuration and driver list once; libpulse and ALSA's pulse
/// plug-in read `PULSE_SERVER` from the environment), with `environment` set over the tests'
/// own and the variables named in `removing` cleared. The child tells itself apart by a
/// variable the caller sets.
/// - Returns: The child's exit status and standard output.
public func runInFreshProcess(filter: String, environment extra: [String: String], removing: [String] = [])
    throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    process.arguments = ["--testing-library", "swift-testing", "--filter", filter]
    var environment = ProcessInfo.processInfo.environment
    for name in removing { environment[name] = nil }
    environment.merge(extra) { _, new in new }
    process.environment = environment
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = FileHandle.nullDevice
    try process.run()
    let watchdog = HangWatchdog(processIdentifier: process.processIdentifier)
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    watchdog.finish()
    return (process.terminationStatus, output + watchdog.note)
}

/// Kills a child process that has not ended after `seconds` (SIGKILL; 10 min by default, beyond
/// what a benchmark run by a test takes under a sanitizer), so that a child that
/// hangs fails its test in bounded time instead of holding the whole run: start it right after
/// `Process.run()`, call `finish()` once `waitUntilExit()` returns, and add `note` to what the
/// test reports.
public final class HangWatchdog: Sendable {
    private let ended = Atomic<Bool>(false)
    private let killed = Atomic<Bool>(false)
    private let seconds: Double

    public init(processIdentifier: Int32, seconds: Double = 600) {
        self.seconds = seconds
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { [self] in
            guard !ended.load(ordering: .acquiring) else { return }
            killed.store(true, ordering: .releasing)
            kill(processIdentifier, SIGKILL)
        }
    }

    /// The child has ended: the watchdog does nothing more.
    public func finish() { ended.store(true, ordering: .releasing) }

    /// Whether the child was killed for hanging.
    public var killedTheChild: Bool { killed.load(ordering: .acquiring) }

    /// A line saying the child hung, or nothing.
    public var note: String {
        killedTheChild ? "\n[the child process was killed after \(Int(seconds)) s: it hung]\n" : ""
    }
}
