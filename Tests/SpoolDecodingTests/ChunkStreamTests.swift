import Foundation
import Testing
import SpoolCore
@testable import SpoolDecoding

/// WAV, AIFF, AIFF-C and CAF through `StreamParser` and `StreamDecoder`, fed whole, a byte
/// at a time and in random pieces, against libsndfile's decode of the same files.
@Suite("Chunk streams (WAV, AIFF, AIFF-C, CAF)")
struct ChunkStreamTests {
    static let fixtures = [
        "wav-44100-stereo-s16.wav", "wav-22050-mono-u8.wav", "wav-48000-stereo-s24.wav", "wav-44100-stereo-s32.wav",
        "wav-48000-stereo-f32.wav", "wav-22050-mono-ima-adpcm.wav", "wav-8000-mono-ulaw.wav", "wav-8000-mono-alaw.wav",
        "wav-48000-5.1-s24-extensible.wav", "aiff-44100-stereo-s16.aiff", "aifc-48000-stereo-f32.aifc",
        "aifc-44100-stereo-sowt.aifc", "caf-44100-stereo-s16.caf",
    ]

    static let expectedFormats: [String: StreamFileFormat] = [
        "wav": .wave, "aiff": .aiff, "aifc": .aifc, "caf": .caf,
    ]

    /// The index of the first sample where `a` and `b` differ, or nil when they are equal.
    static func firstDifference(_ a: [Float], _ b: [Float]) -> Int? {
        if let i = (0..<min(a.count, b.count)).first(where: { a[$0].bitPattern != b[$0].bitPattern }) { return i }
        return a.count == b.count ? nil : min(a.count, b.count)
    }

    @Test("every fixture in every piece size gives libsndfile's format, frames and samples, bit for bit",
          arguments: fixtures, Pieces.all)
    func fixtureMatchesTheFileDecoder(_ name: String, _ pieces: Pieces) throws {
        let path = Fixtures.path(name)
        let bytes = try StreamFeeding.bytes(path)
        let file = try StreamFeeding.fileDecode(path)
        let recording = try StreamFeeding.record(bytes, pieces)
        let parser = recording.parser
        #expect(parser.fileFormat == Self.expectedFormats[String(name.split(separator: ".").last!)])
        let dataFormat = try #require(parser.dataFormat)
        #expect(dataFormat.sampleRate == file.format.sampleRate)
        #expect(dataFormat.channelCount == file.format.channelCount)
        #expect(parser.duration?.basis == .frameCount)
        #expect(parser.duration?.frames == file.decoder.frameCount)
        #expect(parser.tags == file.decoder.info.tags)
        #expect(recording.packetsBeforeReady == 0)
        let ready = try #require(recording.properties.firstIndex(of: .readyToProducePackets))
        let before = Array(recording.properties[..<ready])
        #expect(before == StreamProperty.allCases.filter(before.contains), "reported in the documented order")
        #expect(recording.properties.count == ready + 1, "nothing changes once the packets begin")
        #expect(recording.packets.reduce(0) { $0 + $1.frameCount } == file.decoder.frameCount)

        let decoder = try StreamDecoder(parser: parser)
        let samples = try decoder.decode(recording.packets)
        #expect(samples.count == file.samples.count)
        let difference = Self.firstDifference(samples, file.samples)
        #expect(difference == nil, "first difference at sample \(difference ?? -1)")
        #expect(decoder.warnings.isEmpty)
    }

    @Test("packets are the same however the bytes are cut", arguments: fixtures)
    func packetsDoNotDependOnThePieces(_ name: String) throws {
        let bytes = try StreamFeeding.bytes(Fixtures.path(name))
        let whole = try StreamFeeding.record(bytes, .whole)
        for pieces in Pieces.all.dropFirst() {
            let cut = try StreamFeeding.record(bytes, pieces)
            #expect(cut.packets == whole.packets, "\(pieces)")
        }
        // Runs of whole frames, each starting where the last ended.
        var next = try #require(whole.parser.dataOffset), frame = 0
        for packet in whole.packets {
            #expect(packet.byteOffset == next)
            #expect(packet.startFrame == frame)
            next += packet.bytes.count
            frame += packet.frameCount
        }
        #expect(whole.packets.map(\.bytes.count).max() == whole.parser.maximumPacketSize)
    }

    @Test("decoding as the packets arrive gives the same samples", arguments: ["wav-44100-stereo-s16.wav", "caf-44100-stereo-s16.caf"])
    func decodeLive(_ name: String) throws {
        let path = Fixtures.path(name)
        let bytes = try StreamFeeding.bytes(path)
        let file = try StreamFeeding.fileDecode(path)
        for pieces in [Pieces.random(seed: 3, maximum: 999), .random(seed: 5, maximum: 13)] {
            let live = try StreamFeeding.decodeLive(bytes, pieces)
            #expect(live.samples == file.samples)
        }
    }

    // MARK: - Seeking

    /// Feeds up to `prefix` bytes, seeks to `seconds`, feeds from the point with a
    /// discontinuity and decodes what follows the seek.
    static func seekAndDecode(_ bytes: [UInt8], prefix: Int, seconds: Double) throws -> (point: StreamSeekPoint, samples: [Float], parser: StreamParser) {
        final class Box { var packets: [StreamPacket] = [] }
        let box = Box()
        let parser = StreamParser(packets: { box.packets.append(contentsOf: $0) })
        try parser.parse(bytes[..<prefix])
        let point = try parser.seek(toTime: seconds)
        box.packets = []
        for range in Pieces.random(seed: 11, maximum: 777).ranges(bytes.count - point.byteOffset) {
            try parser.parse(bytes[(point.byteOffset + range.lowerBound)..<(point.byteOffset + range.upperBound)],
                             discontinuity: range.lowerBound == 0)
        }
        try parser.finish()
        let decoder = try StreamDecoder(parser: parser)
        decoder.seek(to: point)
        return (point, try decoder.decode(box.packets), parser)
    }

    @Test("a seek gives the exact byte offset, and decoding from it plays from the frame asked for",
          arguments: ["wav-44100-stereo-s16.wav", "wav-48000-5.1-s24-extensible.wav", "aifc-44100-stereo-sowt.aifc",
                      "caf-44100-stereo-s16.caf", "wav-22050-mono-ima-adpcm.wav", "wav-8000-mono-alaw.wav"])
    func seek(_ name: String) throws {
        let path = Fixtures.path(name)
        let bytes = try StreamFeeding.bytes(path)
        let file = try StreamFeeding.fileDecode(path)
        let channels = file.format.channelCount
        for seconds in [0.0, 0.123, 0.25] {
            let (point, samples, parser) = try Self.seekAndDecode(bytes, prefix: min(bytes.count, 8_192), seconds: seconds)
            let format = try #require(parser.dataFormat)
            let target = Int(seconds * format.sampleRate)
            let dataOffset = try #require(parser.dataOffset)
            #expect(!point.isEstimated)
            #expect(point.targetFrame == target)
            #expect(point.frame == target / format.framesPerPacket * format.framesPerPacket)
            #expect(point.byteOffset == dataOffset + point.frame / format.framesPerPacket * format.bytesPerPacket)
            let expected = Array(file.samples[(target * channels)...])
            #expect(samples.count == expected.count)
            #expect(samples == expected, "\(name) from \(seconds) s")
        }
    }

    // MARK: - Damage and bad input

    @Test("a data chunk cut short plays what arrived and corrects the counts at the end",
          arguments: ["broken/truncated.wav", "broken/huge-header.wav", "hostile/rf64-huge-ds64.wav"], [Pieces.whole, .random(seed: 7, maximum: 4_096)])
    func truncatedData(_ name: String, _ pieces: Pieces) throws {
        let path = Fixtures.path(name)
        let bytes = try StreamFeeding.bytes(path)
        let file = try StreamFeeding.fileDecode(path)
        let recording = try StreamFeeding.record(bytes, pieces)
        let parser = recording.parser
        let present = file.decoder.frameCount
        #expect(parser.duration?.frames == present)
        #expect(parser.duration?.basis == .frameCount)
        #expect(recording.properties.last == .duration, "the corrected duration is reported again at the end")
        #expect(recording.packets.reduce(0) { $0 + $1.frameCount } == present)
        let decoded = try StreamFeeding.decode(bytes, pieces)
        #expect(decoded.samples == file.samples)
        if let facts = Fixtures.broken(String(name.dropFirst("broken/".count))), let frames = facts.framesPresent {
            #expect(present == frames)
        }
    }

    @Test("a CAF data chunk of size -1 runs to the stream's end, which makes its counts exact")
    func cafDataToTheEnd() throws {
        let path = Fixtures.path("caf-44100-stereo-s16.caf")
        var bytes = try StreamFeeding.bytes(path)
        let file = try StreamFeeding.fileDecode(path)
        let data = try #require((0..<(bytes.count - 4)).first { bytes[$0..<($0 + 4)].elementsEqual("data".utf8) })
        for i in 4..<12 { bytes[data + i] = 0xFF }
        for pieces in [Pieces.whole, .random(seed: 2, maximum: 5_000)] {
            let recording = try StreamFeeding.record(bytes, pieces)
            let ready = try #require(recording.properties.firstIndex(of: .readyToProducePackets))
            #expect(!recording.properties[..<ready].contains(.duration), "unknown until the end")
            #expect(recording.parser.duration?.frames == file.decoder.frameCount)
            #expect(recording.parser.audioDataByteCount == file.decoder.frameCount * 4)
            let decoder = try StreamDecoder(parser: recording.parser)
            #expect(try decoder.decode(recording.packets) == file.samples)
        }
    }

    @Test("a LIST chunk after the data is read, and its tags reported then")
    func tagsAfterTheData() throws {
        let bytes = try StreamFeeding.bytes(Fixtures.path("wav-44100-stereo-s16.wav"))
        // Move the LIST chunk (bytes 36..<100) behind the data chunk.
        let moved = Array(bytes[..<36]) + Array(bytes[100...]) + Array(bytes[36..<100])
        let recording = try StreamFeeding.record(moved, .random(seed: 6, maximum: 3_000))
        #expect(recording.parser.tags.title == "Spool Test")
        #expect(recording.properties.last == .tags)
        #expect(recording.packets.reduce(0) { $0 + $1.frameCount } == 22_050)
    }

    @Test("an IMA ADPCM stream cut inside a block counts that block whole, as libsndfile does")
    func adpcmCutInsideABlock() throws {
        let bytes = try StreamFeeding.bytes(Fixtures.path("wav-22050-mono-ima-adpcm.wav"))
        // The data starts at byte 60; cut 100 bytes into its 11th block of 256.
        let cut = Array(bytes.prefix(60 + 10 * 256 + 100))
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("spool-ima-cut-\(UUID().uuidString).wav")
        try Data(cut).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let file = try StreamFeeding.fileDecode(url.path)
        let decoded = try StreamFeeding.decode(cut, .random(seed: 12, maximum: 100))
        #expect(file.decoder.frameCount == 11 * 505)
        #expect(decoded.samples.count == file.samples.count)
        // The whole blocks agree exactly; libsndfile decodes the rest of the cut block from
        // stale bytes of the block before, Spool from zeros, so only its first codes agree.
        let exact = 10 * 505 + 1 + 2 * (100 - 4)
        #expect(Array(decoded.samples.prefix(exact)) == Array(file.samples.prefix(exact)))
    }

    @Test("impossible headers are refused with the file decoder's error code", arguments: [
        ("hostile/rf64-negative-ds64.wav", AudioError.Code.corruptData, "ds64"),
        ("hostile/wav-huge-fmt.wav", .corruptData, "'fmt ' chunk"),
        ("hostile/wav-zero-channels.wav", .corruptData, "0 channels"),
        ("hostile/wav-list-claims-4gib.wav", .corruptData, "channels"),
        ("hostile/wav-mpeg-layer3.wav", .unsupportedFormat, "MPEG"),
    ])
    func impossibleHeaders(_ name: String, _ code: AudioError.Code, _ words: String) throws {
        let bytes = try StreamFeeding.bytes(Fixtures.path(name))
        for pieces in [Pieces.whole, .random(seed: 1, maximum: 9)] {
            do {
                _ = try StreamFeeding.record(bytes, pieces)
                Issue.record("\(name) parsed")
            } catch let error as AudioError {
                #expect(error.code == code, "\(error)")
                #expect(error.message.contains(words), "\(error.message)")
            }
        }
    }

    /// A WAV stream whose header, before the data, has chunks claiming gigabytes.
    static func streamWithHugeChunks(_ ids: [String], fill: Int) -> [UInt8] {
        func le32(_ v: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
        var bytes = Array("RIFF".utf8) + le32(0xFFFF_FFFF) + Array("WAVE".utf8)
        bytes += Array("fmt ".utf8) + le32(16) + [1, 0, 2, 0] + le32(44_100) + le32(176_400) + [4, 0, 16, 0]
        for id in ids { bytes += Array(id.utf8) + le32(0xFFFF_FFF0) }
        return bytes + [UInt8](repeating: 0xAB, count: fill)
    }

    @Test("chunks that are not needed are skipped as they arrive, whatever size they claim",
          arguments: ["junk", "LIST", "bext"])
    func hugeChunksAreSkippedNotHeld(_ id: String) throws {
        // 20 MiB of the chunk's body: more than StreamInput.limit, so holding it would throw.
        let bytes = Self.streamWithHugeChunks([id], fill: 20 << 20)
        let parser = StreamParser(packets: { _ in })
        var at = 0
        while at < bytes.count {
            let end = min(bytes.count, at + 1 << 20)
            try parser.parse(bytes[at..<end])
            at = end
        }
        #expect(parser.fileFormat == .wave)
        #expect(!parser.readyToProducePackets)
        #expect(throws: AudioError.self) { try parser.finish() }
    }

    @Test func emptyAndWrongInput() throws {
        let empty = StreamParser(packets: { _ in })
        #expect { try empty.finish() } throws: { ($0 as? AudioError)?.code == .emptyInput }
        let random = try StreamFeeding.bytes(Fixtures.path("broken/random.bin"))
        #expect { _ = try StreamFeeding.record(random, .whole) } throws: { ($0 as? AudioError)?.code == .unsupportedFormat }
        // Three bytes of "RIF": a header cut short, as the file decoder says.
        let tiny = try StreamFeeding.bytes(Fixtures.path("broken/tiny.wav"))
        #expect { _ = try StreamFeeding.record(tiny, .single) } throws: { ($0 as? AudioError)?.code == .truncated }
        #expect { _ = try StreamFeeding.record(Array("RIFF\u{0}\u{0}WA".utf8), .whole) } throws: { ($0 as? AudioError)?.code == .truncated }
        // A header that stops before its data chunk.
        let wav = try StreamFeeding.bytes(Fixtures.path("wav-44100-stereo-s16.wav"))
        #expect { _ = try StreamFeeding.record(Array(wav.prefix(60)), .single) } throws: { ($0 as? AudioError)?.code == .truncated }
        // Data before any format chunk.
        var noFormat = Array("RIFF".utf8) + [0, 0, 0, 0] + Array("WAVE".utf8) + Array("data".utf8) + [4, 0, 0, 0, 1, 2, 3, 4]
        noFormat[4] = UInt8(noFormat.count - 8)
        #expect { _ = try StreamFeeding.record(noFormat, .whole) } throws: { ($0 as? AudioError)?.code == .corruptData }
    }
}
