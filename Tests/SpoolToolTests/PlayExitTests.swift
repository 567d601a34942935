import Foundation
import Testing
import SpoolTestSupport

/// How `spool play` ends: a process that exits with an OpenAL device open exits cleanly.
@Suite("spool play exits cleanly")
struct PlayExitTests {
    /// OpenAL's null device is rendered by a clock thread that holds the device while it
    /// renders a period, and closes it itself when the last other reference went meanwhile;
    /// a process that exits then ran OpenAL Soft's cleanup under it and crashed (SIGSEGV in
    /// `alcCloseDevice`, about one run in fifteen). The library now stops its threads at exit,
    /// before OpenAL Soft's cleanup, and the tool leaves that to it. Thirty-two short runs,
    /// four at a time.
    @Test func shortRunsOnTheOpenALNullDeviceAllExitWithStatus0() async throws {
        let tones = try TestTones()
        let path = try tones.tone("blip.wav", seconds: 0.02, sampleRate: 44_100, channels: 2)
        let results = try await withThrowingTaskGroup(of: [Tool.Result].self) { group in
            for _ in 0..<4 {
                group.addTask {
                    var results: [Tool.Result] = []
                    for _ in 0..<8 { results.append(try Tool.run(["play", path, "--backend", "openal", "--output", "null"])) }
                    return results
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        #expect(results.count == 32)
        let failed = results.filter { $0.status != 0 }
        #expect(failed.isEmpty, "\(failed.count) failed: \(failed.map { "status \($0.status): \($0.stderr.prefix(1500))" })")
    }
}
