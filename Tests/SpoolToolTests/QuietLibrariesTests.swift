import Foundation
import Testing
import SpoolTestSupport

/// Where no sound server or card answers, standard error holds Spool's own lines only:
/// libasound's error reports and OpenAL Soft's log go to Spool's diagnostics, which drop them
/// unless a program asks. (Before, the queue printed 8 `ALSA lib …` lines, OpenAL 9.)
@Suite("Quiet libraries: only Spool speaks on standard error")
struct QuietLibrariesTests {
    static func runWithoutASoundServer(_ arguments: [String]) throws -> (status: Int32, stderr: String) {
        let process = Process()
        process.executableURL = Tool.executable
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["PULSE_SERVER"] = "unix:/nonexistent/spool-no-sound-server"
        environment.removeValue(forKey: "ALSOFT_LOGLEVEL")
        environment.removeValue(forKey: "ALSOFT_LOGFILE")
        process.environment = environment
        let err = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = err
        try process.run()
        let data = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    @Test(arguments: ["queue", "openal"])
    func withNoSoundServerStandardErrorHoldsSpoolsLinesOnly(_ backend: String) throws {
        let tones = try TestTones()
        let path = try tones.tone("quiet.wav", seconds: 0.05, sampleRate: 44_100, channels: 2)
        let result = try Self.runWithoutASoundServer(["play", path, "--backend", backend, "--output", "default"])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.contains { $0.contains("playing to the null device") }, "the fallback is told: \(result.stderr)")
        let foreign = lines.filter { !$0.hasPrefix("spool: ") }
        #expect(foreign.isEmpty, "\(backend): lines not Spool's: \(foreign)")
    }
}
