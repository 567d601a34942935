import Foundation
import SpoolCore
@testable import SpoolDecoding
import SpoolTestSupport
import Testing

/// A Layer III frame whose main data begins in frames the stream does not hold (its
/// `main_data_begin` past the bit reservoir) cannot be decoded: libmpg123 plays it as silence.
/// That is damage, and both the file decoder and the stream decoder say so, once per run of
/// such frames; a whole file says nothing.
@Suite("MP3: frames that reach past the bit reservoir")
struct MP3ReservoirTests {
    static let source = "mp3-48000-stereo-notag.mp3"

    /// The source's frames: offset, size and `main_data_begin` (read here bit by bit, apart
    /// from the decoder's reading of it).
    static func frames() throws -> (bytes: [UInt8], frames: [(offset: Int, size: Int, begin: Int)]) {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: Fixtures.path(source))))
        var frames: [(offset: Int, size: Int, begin: Int)] = []
        var offset = 0
        while let header = MPEGAudioHeader(bytes, at: offset), offset + header.frameBytes <= bytes.count {
            let side = offset + 4 + (bytes[offset + 1] & 1 == 0 ? 2 : 0)
            frames.append((offset, header.frameBytes, Int(bytes[side]) * 2 + Int(bytes[side + 1] >> 7)))
            offset += header.frameBytes
        }
        return (bytes, frames)
    }

    static func write(_ bytes: [UInt8], _ name: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("spool-reservoir-\(UUID())-\(name)").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func aLoneFrameThatNeedsTheReservoirIsDamageOnBothDecoders() throws {
        let (bytes, frames) = try Self.frames()
        let starved = try #require(frames.dropFirst(2).first { $0.begin > 0 }, "no frame of \(Self.source) borrows bits")
        let lone = Array(bytes[starved.offset..<starved.offset + starved.size])
        let path = try Self.write(lone, "lone.mp3")
        defer { try? FileManager.default.removeItem(atPath: path) }

        let decoder = try openDecoder(.file(path: path))
        let samples = try decoder.decodeAll().samples
        #expect(samples.count == 1_152 * 2 && samples.allSatisfy { $0 == 0 }, "libmpg123 plays it as silence")
        let expected = LayerIIIReservoir.warning(at: 0, missing: starved.begin)
        #expect(expected.kind == .missingData && expected.byteCount == starved.begin)
        #expect(decoder.warnings == [expected])
        #expect(expected.description.contains("reaches \(starved.begin) bytes further back"), "\(expected)")

        for pieces in [Pieces.whole, .single] {
            let streamed = try StreamFeeding.decode(lone, pieces)
            #expect(streamed.warnings == [expected], "\(pieces)")
            #expect(streamed.samples == samples, "\(pieces)")
        }
    }

    @Test func aRunOfSuchFramesIsToldOnceAndTheFramesAfterItDecode() throws {
        let (bytes, frames) = try Self.frames()
        // From a frame that borrows on: it and maybe the next few lack their bytes; the rest decode.
        let from = try #require(frames.indices.dropFirst(2).first { frames[$0].begin > 0 })
        let cut = Array(bytes[frames[from].offset...])
        let path = try Self.write(cut, "cut.mp3")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let decoder = try openDecoder(.file(path: path))
        let samples = try decoder.decodeAll().samples
        #expect(decoder.warnings.count == 1 && decoder.warnings.first?.kind == .missingData, "\(decoder.warnings)")
        #expect(decoder.warnings.first?.byteOffset == 0)
        #expect(samples.suffix(1_152 * 2 * 4).contains { $0 != 0 }, "the frames after the run decode")
        #expect(try StreamFeeding.decode(cut, .whole).warnings == decoder.warnings)
    }

    @Test func wholeFilesAndSeeksSayNothing() throws {
        for name in [Self.source, "mp3-44100-stereo.mp3", "mp3-22050-mono-vbr.mp3", "mp3-11025-mono.mp3"] {
            let decoder = try openDecoder(.file(path: Fixtures.path(name)))
            _ = try decoder.decodeAll()
            try decoder.seek(toFrame: decoder.frameCount / 2)
            _ = try decoder.decodeAll()
            #expect(decoder.warnings.isEmpty, "\(name): \(decoder.warnings)")
            let streamed = try StreamFeeding.decode(try StreamFeeding.bytes(Fixtures.path(name)), .whole)
            #expect(streamed.warnings.isEmpty, "\(name) streamed: \(streamed.warnings)")
        }
    }
}
