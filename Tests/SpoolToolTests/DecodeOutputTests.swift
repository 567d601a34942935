import Foundation
import Testing
import SpoolTestSupport

/// What `spool decode` leaves behind when decoding stops early: a WAV whose header is true to
/// the bytes it holds, and a message that says how much was written.
@Suite("spool decode output")
struct DecodeOutputTests {
    /// (data bytes the header claims, data bytes present, frames in the fact chunk)
    private func waveSizes(_ path: String) throws -> (claimed: Int, present: Int, fact: Int?) {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        func u32(_ at: Int) -> Int { Int(data[at..<(at + 4)].withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }) }
        #expect(u32(4) == data.count - 8, "RIFF size")
        var at = 12, fact: Int?
        while at + 8 <= data.count {
            let id = String(decoding: data[at..<(at + 4)], as: UTF8.self)
            let size = u32(at + 4)
            if id == "fact" { fact = u32(at + 8) }
            if id == "data" { return (size, data.count - at - 8, fact) }
            at += 8 + size
        }
        Issue.record("no data chunk in \(path)")
        return (0, 0, nil)
    }

    @Test func aDecodeThatStopsAtAFormatChangeLeavesATrueHeader() throws {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("spool-stop-\(UUID()).wav").path
        defer { try? FileManager.default.removeItem(atPath: out) }
        let result = try Tool.run(["decode", Tool.fixture("broken/vorbis-chained-mixed.ogg"), "--output", out])
        let sizes = try waveSizes(out)
        #expect(sizes.claimed == sizes.present)
        // The first link: 0.5 s of 44.1 kHz stereo, every frame of it.
        #expect(sizes.present == 22_050 * 2 * 4)
        #expect(sizes.fact == 22_050)
        #expect(result.stderr.contains("22050 Hz, 1 ch"), "the boundary is reported: \(result.stderr)")
        if result.status != 0 {
            #expect(result.stderr.contains("holds the 22050 frames decoded before it"), "\(result.stderr)")
        }
    }
}

@Suite("spool decode diagnostics")
struct DecodeDiagnosticsTests {
    /// libmpg123 prints its own notes ("Note: Illegal Audio-MPEG-Header…") unless told not
    /// to; what Spool says goes through its warnings, one `spool:` line each.
    @Test(arguments: ["hostile/wav-mpeg-layer3-damaged.wav", "broken/corrupt-middle.mp3", "broken/truncated.mp3"])
    func onlySpoolSpeaksOnStandardError(name: String) throws {
        let result = try Tool.run(["decode", Tool.fixture(name), "--output", "/dev/null"])
        let lines = result.stderr.split(separator: "\n")
        #expect(!lines.isEmpty, "the damage is reported")
        #expect(lines.allSatisfy { $0.hasPrefix("spool: ") }, "\(result.stderr)")
    }
}
