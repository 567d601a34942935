import CAllocationCounter
import Foundation
import Testing
import SpoolCore
@testable import SpoolDecoding

/// FLAC through `StreamParser` and `StreamDecoder` (libFLAC), fed whole, a byte at a time
/// and in random pieces, against libsndfile's decode of the same files.
@Suite("FLAC streams")
struct FLACStreamTests {
    static let fixtures = ["flac-44100-stereo-s16.flac", "flac-48000-mono-s24.flac", "flac-22050-mono-s16.flac"]

    @Test("every fixture in every piece size gives libsndfile's format, frames and samples, bit for bit",
          arguments: fixtures, Pieces.all)
    func fixtureMatchesTheFileDecoder(_ name: String, _ pieces: Pieces) throws {
        let path = Fixtures.path(name)
        let bytes = try StreamFeeding.bytes(path)
        let file = try StreamFeeding.fileDecode(path)
        let recording = try StreamFeeding.record(bytes, pieces)
        let parser = recording.parser
        #expect(parser.fileFormat == .flac)
        let dataFormat = try #require(parser.dataFormat)
        #expect(dataFormat.codec == .flac)
        #expect(dataFormat.sampleRate == file.format.sampleRate)
        #expect(dataFormat.channelCount == file.format.channelCount)
        #expect(parser.magicCookie?.count == 38)
        #expect(parser.duration == StreamDuration(frames: file.decoder.frameCount, seconds: file.format.seconds(forFrames: file.decoder.frameCount), basis: .frameCount))
        #expect(parser.tags == file.decoder.info.tags)
        #expect(recording.packetsBeforeReady == 0)
        let ready = try #require(recording.properties.firstIndex(of: .readyToProducePackets))
        let before = Array(recording.properties[..<ready])
        #expect(before == StreamProperty.allCases.filter(before.contains), "reported in the documented order")
        #expect(recording.packets.reduce(0) { $0 + $1.frameCount } == file.decoder.frameCount)
        #expect(parser.audioDataPacketCount == recording.packets.count)

        let decoder = try StreamDecoder(parser: parser)
        let samples = try decoder.decode(recording.packets)
        #expect(samples.count == file.samples.count)
        let difference = ChunkStreamTests.firstDifference(samples, file.samples)
        #expect(difference == nil, "first difference at sample \(difference ?? -1)")
        #expect(decoder.warnings.isEmpty)
    }

    @Test("packets are whole frames, the same however the bytes are cut", arguments: fixtures)
    func packetsDoNotDependOnThePieces(_ name: String) throws {
        let bytes = try StreamFeeding.bytes(Fixtures.path(name))
        let whole = try StreamFeeding.record(bytes, .whole)
        for pieces in Pieces.all.dropFirst() {
            #expect(try StreamFeeding.record(bytes, pieces).packets == whole.packets, "\(pieces)")
        }
        var next = try #require(whole.parser.dataOffset), frame = 0
        for packet in whole.packets {
            #expect(packet.byteOffset == next)
            #expect(packet.startFrame == frame)
            #expect(packet.bytes.prefix(2) == [0xFF, 0xF8])
            next += packet.bytes.count
            frame += packet.frameCount
        }
        #expect(next == bytes.count)
        let live = try StreamFeeding.decodeLive(bytes, .random(seed: 21, maximum: 300))
        #expect(live.samples == (try StreamFeeding.fileDecode(Fixtures.path(name))).samples)
    }

    // MARK: - Seeking

    /// Feeds `prefix` bytes, seeks to `seconds`, then feeds from the point with a discontinuity.
    static func seek(_ bytes: [UInt8], prefix: Int, seconds: Double) throws -> (point: StreamSeekPoint, packets: [StreamPacket], samples: [Float]) {
        final class Box { var packets: [StreamPacket] = [] }
        let box = Box()
        let parser = StreamParser(packets: { box.packets.append(contentsOf: $0) })
        try parser.parse(bytes[..<prefix])
        let point = try parser.seek(toTime: seconds)
        box.packets = []
        for range in Pieces.random(seed: 4, maximum: 500).ranges(bytes.count - point.byteOffset) {
            try parser.parse(bytes[(point.byteOffset + range.lowerBound)..<(point.byteOffset + range.upperBound)],
                             discontinuity: range.lowerBound == 0)
        }
        try parser.finish()
        let decoder = try StreamDecoder(parser: parser)
        decoder.seek(to: point)
        return (point, box.packets, try decoder.decode(box.packets))
    }

    @Test("seeks through the seek table or the frames parsed are exact and play from the frame asked for", arguments: fixtures)
    func exactSeek(_ name: String) throws {
        let path = Fixtures.path(name)
        let bytes = try StreamFeeding.bytes(path)
        let file = try StreamFeeding.fileDecode(path)
        let whole = try StreamFeeding.record(bytes, .whole)
        let starts = Dictionary(uniqueKeysWithValues: whole.packets.map { ($0.byteOffset, $0.startFrame ?? -1) })
        let channels = file.format.channelCount
        // From the header only (the seek table), and with every frame parsed.
        for prefix in [try #require(whole.parser.dataOffset), bytes.count] {
            for seconds in [0.0, 0.2, 0.41] {
                let (point, _, samples) = try Self.seek(bytes, prefix: prefix, seconds: seconds)
                let target = Int(seconds * file.format.sampleRate)
                #expect(!point.isEstimated)
                #expect(point.targetFrame == target)
                #expect(starts[point.byteOffset] == point.frame, "the point is a frame's start")
                #expect(point.frame <= target)
                #expect(samples == Array(file.samples[(target * channels)...]), "\(name) from \(seconds) s, \(prefix) bytes fed first")
            }
        }
    }

    @Test("a seek past the frames parsed, without a seek table, is an estimate that resynchronises")
    func estimatedSeek() throws {
        let path = Fixtures.path("flac-44100-stereo-s16.flac")
        var bytes = try StreamFeeding.bytes(path)
        let file = try StreamFeeding.fileDecode(path)
        // Turn the SEEKTABLE (if any) into PADDING, which is skipped.
        var at = 4
        while at + 4 <= bytes.count {
            let type = bytes[at] & 0x7F, size = Int(bytes[at + 1]) << 16 | Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
            if type == 3 { bytes[at] = bytes[at] & 0x80 | 1 }
            if bytes[at] & 0x80 != 0 { break }
            at += 4 + size
        }
        let whole = try StreamFeeding.record(bytes, .whole)
        let prefix = try #require(whole.packets.dropFirst(2).first?.byteOffset)
        let (point, packets, samples) = try Self.seek(bytes, prefix: prefix, seconds: 0.4)
        #expect(point.isEstimated)
        let first = try #require(packets.first?.startFrame)
        let from = max(point.frame, first)
        #expect(samples == Array(file.samples[(from * file.format.channelCount)...]))
        #expect(whole.packets.contains { $0.byteOffset == packets.first?.byteOffset }, "resynchronised on a real frame")
    }

    // MARK: - Damage

    @Test("garbage between frames is dropped, reported as skipped data, and every frame still plays")
    func garbageBetweenFrames() throws {
        let path = Fixtures.path("flac-44100-stereo-s16.flac")
        let bytes = try StreamFeeding.bytes(path)
        let file = try StreamFeeding.fileDecode(path)
        let whole = try StreamFeeding.record(bytes, .whole)
        let cut = whole.packets[3].byteOffset
        var generator = SplitMix(seed: 77)
        let garbage = (0..<1_000).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        let damaged = Array(bytes[..<cut]) + garbage + Array(bytes[cut...])
        for pieces in [Pieces.whole, .single, .random(seed: 8, maximum: 64)] {
            let decoded = try StreamFeeding.decode(damaged, pieces)
            #expect(decoded.samples == file.samples, "\(pieces)")
            let skipped = decoded.warnings.filter { $0.kind == .skippedCorruptData }
            #expect(skipped.count == 1)
            #expect(skipped.first?.byteOffset == cut)
            #expect(skipped.first?.byteCount == garbage.count)
        }
    }

    /// libsndfile gives up at such a frame ("flac decoder lost sync"), so the reference is
    /// the undamaged file: every other frame decodes as before, and the damaged one is
    /// reported and plays as silence of its length.
    @Test("a frame damaged inside is reported, and every other frame decodes as before")
    func damagedFrame() throws {
        let path = Fixtures.path("flac-44100-stereo-s16.flac")
        var bytes = try StreamFeeding.bytes(path)
        let original = try StreamFeeding.fileDecode(path).samples
        let whole = try StreamFeeding.record(bytes, .whole)
        let victim = whole.packets[2]
        for i in 0..<100 { bytes[victim.byteOffset + 40 + i] ^= 0x5A }
        let channels = 2
        let before = try #require(victim.startFrame) * channels, after = before + victim.frameCount * channels
        for pieces in [Pieces.whole, .random(seed: 9, maximum: 2_000)] {
            let decoded = try StreamFeeding.decode(bytes, pieces)
            #expect(decoded.warnings.contains { $0.kind == .skippedCorruptData && $0.byteOffset == victim.byteOffset })
            #expect(Array(decoded.samples.prefix(before)) == Array(original.prefix(before)))
            let tail = original.count - after
            #expect(Array(decoded.samples.suffix(tail)) == Array(original.suffix(tail)))
            let middle = decoded.samples.dropFirst(before).dropLast(tail)
            #expect(middle.count == after - before && middle.allSatisfy { $0 == 0 }, "the damaged frame gave \(middle.count) samples")
            #expect(decoded.samples.count == original.count)
        }
    }

    @Test("a stream cut short plays what arrived and corrects its duration at the end", arguments: [Pieces.whole, .single])
    func truncated(_ pieces: Pieces) throws {
        let path = Fixtures.path("broken/truncated.flac")
        let bytes = try StreamFeeding.bytes(path)
        let file = try StreamFeeding.fileDecode(path)
        let recording = try StreamFeeding.record(bytes, pieces)
        #expect(recording.parser.duration?.frames == file.decoder.frameCount)
        #expect(recording.properties.last == .duration)
        let decoded = try StreamFeeding.decode(bytes, pieces)
        #expect(decoded.samples == file.samples)
    }

    /// `fLaC`, the fixture's STREAMINFO, and blocks of `type` each claiming `size` bytes, then `fill` bytes.
    static func streamWithHugeBlocks(type: UInt8, size: Int, count: Int, fill: Int) throws -> [UInt8] {
        let fixture = try StreamFeeding.bytes(Fixtures.path("flac-22050-mono-s16.flac"))
        var bytes = Array("fLaC".utf8) + [0x00, 0, 0, 34] + Array(fixture[8..<42])
        for _ in 0..<count { bytes += [type, UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)] + [UInt8](repeating: 0, count: size) }
        return bytes + [UInt8](repeating: 0x33, count: fill)
    }

    @Test("a PICTURE or PADDING block claiming 16 MiB is skipped as it arrives, not held", arguments: [UInt8(6), 1, 2])
    func hugeBlocksAreSkipped(_ type: UInt8) throws {
        let bytes = try Self.streamWithHugeBlocks(type: type, size: (1 << 24) - 1, count: 2, fill: 0)
        let parser = StreamParser(packets: { _ in })
        spool_allocation_counting_begin()
        try bytes.withUnsafeBytes { raw in
            var at = 0
            while at < raw.count {
                let end = min(raw.count, at + (1 << 18))
                try parser.parse(UnsafeRawBufferPointer(rebasing: raw[at..<end]))
                at = end
            }
        }
        let allocated = spool_allocation_counting_bytes()
        _ = spool_allocation_counting_end()
        #expect(allocated < 4 << 20, "\(allocated) bytes allocated for \(bytes.count) bytes fed")
        #expect(parser.fileFormat == .flac)
        #expect(!parser.readyToProducePackets)
    }

    @Test func badInput() throws {
        let notStreamInfo = Array("fLaC".utf8) + [0x84, 0, 0, 4, 0, 0, 0, 0]
        #expect { _ = try StreamFeeding.record(notStreamInfo, .single) } throws: { ($0 as? AudioError)?.code == .corruptData }
        #expect { _ = try StreamFeeding.record(Array("fLaC".utf8), .whole) } throws: { ($0 as? AudioError)?.code == .truncated }
        let bytes = try StreamFeeding.bytes(Fixtures.path("flac-22050-mono-s16.flac"))
        #expect { _ = try StreamFeeding.record(Array(bytes.prefix(30)), .single) } throws: { ($0 as? AudioError)?.code == .truncated }
        // A STREAMINFO of the wrong size.
        var wrong = bytes
        wrong[7] = 33
        #expect { _ = try StreamFeeding.record(wrong, .whole) } throws: { ($0 as? AudioError)?.code == .corruptData }
        // One claiming 16 MiB is refused from its header, before any of it is held.
        wrong[5] = 0xFF
        wrong[6] = 0xFF
        wrong[7] = 0xFF
        #expect { _ = try StreamFeeding.record(Array(wrong.prefix(8)), .whole) } throws: { ($0 as? AudioError)?.code == .corruptData }
    }
}
