import Foundation
import Testing
import Spool
import SpoolTestSupport

@Suite("spool info and spool decode with Ogg Opus")
struct OpusToolTests {
    @Test func infoNamesOpusAndItsExactLength() throws {
        let result = try Tool.run(["info", "--json", Tool.fixture("opus/opus-48000-stereo-tags.opus")])
        #expect(result.status == 0, "\(result.stderr)")
        let report = try #require((try JSONSerialization.jsonObject(with: result.stdout) as? [[String: Any]])?.first)
        #expect(report["container"] as? String == "Ogg")
        #expect(report["codec"] as? String == "Opus")
        #expect(report["sampleRate"] as? Double == 48_000)
        #expect(report["channels"] as? Int == 2)
        #expect(report["frames"] as? Int == 24_000)
        #expect(report["isVBR"] as? Bool == true)
        #expect((report["tags"] as? [String: String])?["title"] == "Spool Test")
    }

    @Test func decodeWritesTheSamplesOfTheDecoder() throws {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("spool-opus-\(UUID()).f32").path
        defer { try? FileManager.default.removeItem(atPath: output) }
        let source = Tool.fixture("opus/opus-48000-5.1.opus")
        let result = try Tool.run(["decode", source, "--output", output])
        #expect(result.status == 0, "\(result.stderr)")
        let written = try Data(contentsOf: URL(fileURLWithPath: output)).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        #expect(written == (try DecoderRegistry.shared.open(path: source).decodeAll().samples))
        #expect(written.count == 12_000 * 6)
    }

    @Test func anOggStreamSpoolDoesNotDecodeIsNamed() throws {
        let path = Tool.fixture("opus/ogg/flac.ogg")
        let result = try Tool.run(["info", path])
        #expect(result.status == 1)
        #expect(result.stderr == "spool: \(path): an Ogg stream carrying FLAC, which Spool does not decode\n")
    }
}
