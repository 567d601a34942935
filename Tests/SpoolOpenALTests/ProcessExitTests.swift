import Foundation
import SoundServerTestSupport
import SpoolCore
import SpoolOpenAL
import SpoolOutput
import SpoolTestSupport
import Testing

/// A process that exits while OpenAL devices are open and in use exits cleanly: OpenAL Soft's
/// own cleanup runs at exit (a library destructor) and frees its device list and the lock
/// every ALC call takes; a call after it asserted (`LockLists: Assertion 'ret ==
/// althrd_success' failed`), and devices left open were reported (`alc_cleanup: 1 device not
/// closed`). Each run is a child process: this test bundle again, running the child test below.
@Suite("OpenAL at process exit",
       .disabled(if: SoundServer.underSanitizer,
                 "sixty child processes under a sanitizer starve the suites beside them, and a child that exits with its devices in use is a leak by design; the plain run checks it"))
struct ProcessExitTests {
    /// Set in a child's environment to the device it opens (`null` or `default`).
    static let childVariable = "SPOOL_OPENAL_EXIT_CHILD"
    static let runs = 30

    @Test(arguments: ["null", "default"])
    func processesExitingWithDevicesInUseAllExitCleanly(_ device: String) async throws {
        if device == "default" {
            guard SoundServer.isRunning || SoundServer.isCI else { return }
            guard SoundServer.expectRunning() else { return }
        }
        let results = try await withThrowingTaskGroup(of: [(Int32, String)].self) { group in
            for _ in 0..<3 {
                group.addTask { try (0..<(Self.runs / 3)).map { _ in try Self.runChild(device) } }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        #expect(results.count == Self.runs)
        let marks = ["Assertion", "LockLists", "not closed"]
        let unclean = results.filter { status, stderr in status != 0 || marks.contains { stderr.contains($0) } }
        let shown = unclean.prefix(3).map { status, stderr in
            "status \(status): " + stderr.split(separator: "\n").filter { line in marks.contains { line.contains($0) } }
                .joined(separator: " / ")
        }
        #expect(unclean.isEmpty, "\(device): \(unclean.count) of \(results.count) unclean: \(shown)")
    }

    /// Runs the child test in a new process of this bundle, with OpenAL Soft's warnings on
    /// standard error (`ALSOFT_LOGLEVEL` 2, no log file).
    static func runChild(_ device: String) throws -> (Int32, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = ["--testing-library", "swift-testing", "--filter", "childExitsWhileOpenALIsInUse"]
        var environment = ProcessInfo.processInfo.environment
        environment[childVariable] = device
        environment["ALSOFT_LOGLEVEL"] = "2"
        environment["ALSOFT_LOGFILE"] = nil
        process.environment = environment
        let err = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = err
        try process.run()
        let watchdog = HangWatchdog(processIdentifier: process.processIdentifier)
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        watchdog.finish()
        return (process.terminationStatus, String(decoding: stderr, as: UTF8.self) + watchdog.note)
    }

    /// The child's part, run only in a child process: a device playing a tone, a thread making
    /// voices on it and reading its clock without pause, another opening null devices and
    /// letting go of them at once (so that their pump or clock thread sometimes holds the last
    /// reference), and `exit(0)` in the middle of it all, with the device open.
    @Test(.enabled(if: ProcessInfo.processInfo.environment[childVariable] != nil))
    func childExitsWhileOpenALIsInUse() throws {
        let configuration = OutputConfiguration(sampleRate: 48_000)
        let kind: OpenALDevice.Kind =
            ProcessInfo.processInfo.environment[Self.childVariable] == "default" ? .systemDefault : .null(configuration)
        let device = try OpenALDevice(kind, sourceLimit: 16)
        let backend = OpenALBackend(device: device)
        let format = try AudioFormat(sampleRate: 44_100, channelCount: 2)
        let tone = try PCMBuffer(format: format, samples: (0..<8_820).flatMap { i -> [Float] in
            let s = Float(0.2 * sin(2 * Double.pi * 440 * Double(i) / 44_100))
            return [s, s]
        })
        let voice = try backend.makeVoice(format: format)
        try voice.enqueue(tone)
        try voice.start()
        Thread.detachNewThread {
            while true {
                if let other = try? backend.makeVoice(format: format) {
                    try? other.enqueue(tone)
                    try? other.start()
                    _ = device.isConnected
                    _ = device.deviceLatency
                    other.dispose()
                }
            }
        }
        Thread.detachNewThread {
            while true { _ = try? OpenALDevice(.null(configuration), sourceLimit: 4) }
        }
        Thread.sleep(forTimeInterval: 0.1)
        withExtendedLifetime((device, backend, voice)) { exit(0) }
    }
}
