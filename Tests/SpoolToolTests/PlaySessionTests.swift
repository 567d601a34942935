import Foundation
import SoundServerTestSupport
import Spool
import SpoolTestSupport
import Testing

/// `spool play` as a program in an audio session: a call in another program interrupts it,
/// it says so, and it resumes by itself when the call ends, on a sound server of the test's own.
@Suite("spool play in an audio session", .serialized,
       .disabled(if: SoundServer.underSanitizer, "real-time timing means nothing under a sanitizer's slow-down; the plain run checks it"))
struct PlaySessionTests {
    static let enabled = SoundServer.isRunning || SoundServer.isCI

    @Test("A call interrupts spool play, which says so and resumes when the call ends",
          .enabled(if: enabled, "no PulseAudio server answers `pactl info`; start one with scripts/pulseaudio.sh"))
    func aCallInterruptsAndTheToolResumes() throws {
        guard SoundServer.expectRunning() else { return }
        let server = try PrivateSoundServer()
        let file = server.directory.appendingPathComponent("tone.wav")
        let writer = try WAVFileWriter(path: file.path, format: stereo48)
        try writer.write(try sine(1_000, frames: 4 * 48_000, format: stereo48, amplitude: 0.3))
        try writer.finish()

        let process = Process()
        process.executableURL = Tool.executable
        process.arguments = ["play", file.path, "--output", "pulse"]
        var environment = ProcessInfo.processInfo.environment
        environment["PULSE_SERVER"] = server.address
        process.environment = environment
        let errors = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errors
        let stderr = Locked(Data())
        errors.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            stderr.withLock { $0.append(data) }
        }
        try process.run()
        func text() -> String { String(decoding: stderr.withLock { $0 }, as: UTF8.self) }
        func waitFor(_ line: String, seconds: Double) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while !text().contains(line), Date() < deadline { usleep(10_000) }
            return text().contains(line)
        }
        // A new server's null sink pulls nothing for a second or two: call once it plays.
        Thread.sleep(forTimeInterval: 2.5)
        let call = try server.playPhoneCall()
        defer { if call.isRunning { PrivateSoundServer.hangUp(call) } }
        #expect(waitFor("spool: interrupted by the sound server", seconds: 3), "\(text())")
        Thread.sleep(forTimeInterval: 0.5)
        PrivateSoundServer.hangUp(call)
        #expect(waitFor("spool: interruption ended: resuming", seconds: 3), "\(text())")
        // Resumed, it plays to the end and exits; left paused, it would not.
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning, Date() < deadline { usleep(20_000) }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        errors.fileHandleForReading.readabilityHandler = nil
        #expect(process.terminationStatus == 0, "\(text())")
    }
}
