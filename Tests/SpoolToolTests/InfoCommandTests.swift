import Foundation
import Testing
import SpoolTestSupport

@Suite("spool info: whole tag names, and failures in the JSON")
struct InfoCommandTests {
    /// Two tags whose names share their first 11 characters are both shown whole.
    @Test func longTagNamesArePrintedWhole() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("spool-info-\(UUID()).ogg").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try FileManager.default.copyItem(atPath: Tool.fixture("vorbis-44100-stereo.ogg"), toPath: path)
        let tagged = try ExternalTool.run("vorbiscomment", ["-a", "-t", "REPLAYGAIN_TRACK_GAIN=-3.10",
                                                                   "-t", "REPLAYGAIN_TRACK_PEAK=0.95", path])
        try #require(tagged == 0, "vorbiscomment (vorbis-tools) tags the copy")
        let result = try Tool.run(["info", path])
        #expect(result.status == 0)
        #expect(result.text.contains("replaygain_track_gain -3.10"), "\(result.text)")
        #expect(result.text.contains("replaygain_track_peak 0.95"), "\(result.text)")
        #expect(result.text.contains("title       Spool Test"), "short names keep their column")
    }

    /// `--json` lists a file that cannot be read with its error, in order, and the exit
    /// status still says something failed.
    @Test func jsonHasAnEntryForAFileThatFails() throws {
        let missing = "/nonexistent/spool-\(UUID()).mp3"
        let result = try Tool.run(["info", "--json", Tool.fixture("mp3-44100-stereo.mp3"), missing,
                                   Tool.fixture("broken/text.mp3")])
        #expect(result.status == 1)
        let entries = try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [[String: Any]])
        #expect(entries.count == 3)
        #expect(entries[0]["codec"] as? String == "MPEG-1 Layer III")
        #expect(entries[1]["file"] as? String == missing)
        let error = try #require(entries[1]["error"] as? [String: String])
        #expect(error["code"] == "fileNotFound")
        #expect(error["message"]?.contains(missing) == true)
        #expect((entries[2]["error"] as? [String: String])?["code"] == "unsupportedFormat")
        #expect(entries[1]["frames"] == nil, "a failure carries no facts")
    }
}

/// Runs a tool found on `PATH`.
enum ExternalTool {
    static func run(_ tool: String, _ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [tool] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }
}
