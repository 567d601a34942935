import Foundation
import Spool
import Testing
@testable import SpoolBenchmarks

/// `spool bench decode --in-process` times Spool's decoder against the C library it wraps,
/// called directly. The comparison means something only if both do the same work: Spool's
/// decoder must give the library's own samples, frame for frame.
@Suite("spool bench decode --in-process")
struct DecodeLoopBenchTests {
    static let files = [
        "mp3-44100-stereo.mp3", "mp3-22050-mono-vbr.mp3", "mp3/lame-delay-padding-4095.mp3",
        "vorbis-44100-stereo.ogg", "vorbis-22050-mono.ogg", "ogg/opus-48000-stereo.opus",
        "flac-44100-stereo-s16.flac", "wav-48000-5.1-s24-extensible.wav", "aiff-44100-stereo-s16.aiff",
    ]

    @Test(arguments: files)
    func spoolsDecoderGivesTheBareLibrarysSamples(_ name: String) throws {
        let path = Tool.fixture(name)
        let decoder = try DecoderRegistry.shared.open(path: path)
        let channels = decoder.format.channelCount
        let bare = try #require(BareDecoder(info: decoder.info))
        var expected: [Float] = []
        var buffer = [Float](repeating: 0, count: 1_000 * channels)
        let bareFrames = try buffer.withUnsafeMutableBufferPointer { pointer in
            let whole = pointer
            return try bare.decode(path: path, into: whole, channels: channels) { frames in
                expected.append(contentsOf: whole[0..<(frames * channels)])
            }
        }
        var got: [Float] = []
        while case let frames = try buffer.withUnsafeMutableBufferPointer({ try decoder.read(into: $0) }), frames > 0 {
            got.append(contentsOf: buffer[0..<(frames * channels)])
        }
        #expect(bareFrames == decoder.frameCount, "\(name): \(bare.library) \(bareFrames) frames, Spool \(decoder.frameCount)")
        #expect(got.count == expected.count, "\(name): Spool \(got.count / channels) frames, \(bare.library) \(expected.count / channels)")
        let differing = got.indices.first { $0 < expected.count && got[$0] != expected[$0] }
        #expect(differing == nil, "\(name): first differing sample at \(differing ?? 0) (frame \((differing ?? 0) / channels))")
    }

    /// libvorbisfile hands back as many planes as the current link has: a link with fewer
    /// channels than the first is refused, not read past its planes.
    @Test func aChainWhoseChannelsChangeIsRefusedNotMisread() throws {
        let path = Tool.fixture("ogg/chained-fewer-channels-raised-granule.ogg")
        let channels = try DecoderRegistry.shared.open(path: path).format.channelCount
        var buffer = [Float](repeating: 0, count: 1_000 * channels)
        #expect {
            try buffer.withUnsafeMutableBufferPointer { try BareDecoder.vorbisfile.decode(path: path, into: $0, channels: channels) }
        } throws: { error in
            (error as? AudioError)?.code == .formatChanged
        }
    }

    @Test func theRowsSayTheCountsAgreeAndTheRatioIsTheMedians() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("spool-bench-loop-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let json = dir.appendingPathComponent("loop.json").path
        let files = [Tool.fixture("mp3-44100-stereo.mp3"), Tool.fixture("vorbis-44100-stereo.ogg")]
        let result = try Tool.run(["bench", "decode", "--in-process", "--repeat", "3", "--json", json] + files)
        #expect(result.status == 0, "\(result.stderr)")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: json))) as? [[String: Any]])
        #expect(rows.count == 2)
        #expect(rows.map { $0["library"] as? String } == ["libmpg123", "libvorbisfile"])
        for row in rows {
            #expect(row["spoolFrames"] as? Int == 22_050 && row["bareFrames"] as? Int == 22_050, "\(row)")
            #expect(row["kind"] as? String == "observed" && row["repeats"] as? Int == 3)
            let spool = try #require(row["spoolMedianCPUSeconds"] as? Double), bare = try #require(row["bareMedianCPUSeconds"] as? Double)
            #expect(spool > 0 && bare > 0)
            #expect(abs(try #require(row["ratio"] as? Double) - bare / spool) < 1e-9)
        }
    }
}
