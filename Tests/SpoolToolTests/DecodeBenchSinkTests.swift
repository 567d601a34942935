import Foundation
import Testing
#if canImport(Glibc)
import Glibc
import SpoolTestSupport
#endif

/// `spool bench decode` sends both sides' output to the same discarding device and says which.
@Suite("spool bench decode sink")
struct DecodeBenchSinkTests {
    @Test func bothSidesWriteToTheDeviceTheRowNames() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("spool-bench-sink-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let json = dir.appendingPathComponent("decode.json").path
        let file = Tool.fixture("mp3-11025-mono.mp3")
        let result = try Tool.run(["bench", "decode", file, "--repeat", "2", "--json", json])
        #expect(result.status == 0, "\(result.stderr)")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: json))) as? [[String: Any]])
        let row = try #require(rows.first)
        let sink = try #require(row["sink"] as? String)
        var info = stat()
        let isDevice = stat(sink, &info) == 0 && info.st_mode & S_IFMT == S_IFCHR
        if isDevice {
            #expect(["/dev/null", "/dev/zero"].contains(sink))
            #expect(!result.stderr.contains("not a character device"))
        } else {
            #expect(result.stderr.contains("/dev/null is not a character device"), "\(result.stderr)")
        }
        #expect(result.text.contains("writing PCM to \(sink)"))
        #expect(row["kind"] as? String == "observed")
        #expect(row["repeats"] as? Int == 2)
        let ratio = try #require(row["ratio"] as? Double)
        let spool = try #require(row["spoolMedianSeconds"] as? Double), peer = try #require(row["peerMedianSeconds"] as? Double)
        #expect(abs(ratio - peer / spool) < 1e-9)
    }
}
