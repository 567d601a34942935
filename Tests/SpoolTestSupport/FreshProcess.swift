import Foundation

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
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return (process.terminationStatus, output)
}
