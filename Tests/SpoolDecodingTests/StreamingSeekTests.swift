import Foundation
import Testing
import SpoolCore
@testable import SpoolDecoding

/// A `StreamingDecoder` over a reader that can seek (as an HTTP source with ranges does):
/// seeks move the reader to the parser's byte, and the frames read from there are the file
/// decoder's frames at the same place.
@Suite("Streaming decoder seeks by bytes")
struct StreamingSeekTests {
    static let fixtures = [
        "mp3-44100-stereo.mp3", "mp3-22050-mono-vbr.mp3", "vorbis-44100-stereo.ogg", "opus/opus-48000-stereo.opus",
        "flac-44100-stereo-s16.flac", "wav-44100-stereo-s16.wav", "aiff-44100-stereo-s16.aiff", "caf-44100-stereo-s16.caf",
    ]

    /// Bytes in memory behind a reader and a seeker, counting the seeks.
    final class MemoryStream {
        let bytes: [UInt8]
        var offset = 0
        var seeks: [Int] = []
        init(_ bytes: [UInt8]) { self.bytes = bytes }

        func read(_ buffer: UnsafeMutableRawBufferPointer) -> Int {
            let count = min(buffer.count, bytes.count - offset, 1000)
            bytes.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[offset..<(offset + count)])) }
            offset += count
            return count
        }

        func seek(_ to: Int) throws {
            guard (0...bytes.count).contains(to) else { throw AudioError(.outOfRange, "byte \(to)") }
            seeks.append(to)
            offset = to
        }

        func decoder(exact: Bool) throws -> StreamingDecoder {
            let decoder = try StreamingDecoder(name: "memory", reader: { [unowned self] in read($0) },
                                               seeker: { [unowned self] in try seek($0) })
            decoder.forwardDecodeSeconds = 0
            decoder.keptFrames = 0
            decoder.seeksExactly = exact
            return decoder
        }
    }

    static func read(_ decoder: StreamingDecoder, frames: Int) throws -> [Float] {
        var out = [Float](repeating: 0, count: frames * decoder.format.channelCount)
        var filled = 0
        while filled < out.count {
            let got = try out.withUnsafeMutableBufferPointer { try decoder.read(into: UnsafeMutableBufferPointer(rebasing: $0[filled...])) }
            if got == 0 { break }
            filled += got * decoder.format.channelCount
        }
        return Array(out[..<filled])
    }

    @Test("seeks ahead, back and to 0 after the end read the file decoder's frames from there, every sample", arguments: fixtures)
    func seeksMatchTheFileDecoder(_ name: String) throws {
        let path = Fixtures.path(name)
        let file = try StreamFeeding.fileDecode(path)
        let channels = file.format.channelCount
        let total = file.samples.count / channels
        let stream = MemoryStream(try StreamFeeding.bytes(path))
        let decoder = try stream.decoder(exact: true)
        // Far ahead, then back before it, then the end, then 0 again.
        let targets = [total * 3 / 4, total / 5, total - 100, 0, total / 2]
        for target in targets {
            try decoder.seek(toFrame: target)
            #expect(decoder.position == target, "\(name): at \(decoder.position) after a seek to \(target)")
            let got = try Self.read(decoder, frames: 2_000)
            let expected = Array(file.samples[(target * channels)..<min(file.samples.count, (target + 2_000) * channels)])
            #expect(got.count == expected.count, "\(name) from \(target)")
            #expect(ChunkStreamTests.firstDifference(got, expected) == nil, "\(name) from \(target): first difference at \(ChunkStreamTests.firstDifference(got, expected) ?? -1)")
            if target == total - 100 { _ = try Self.read(decoder, frames: 1_000) }  // to the end
        }
        #expect(!stream.seeks.isEmpty, "\(name): every seek decoded its way there; none moved the reader")
        #expect(decoder.warnings.isEmpty, "\(name): \(decoder.warnings)")
    }

    @Test("where the parser's point is exact (PCM), a seek moves the reader and lands on the frame",
          arguments: ["wav-44100-stereo-s16.wav", "aiff-44100-stereo-s16.aiff", "caf-44100-stereo-s16.caf"])
    func exactPointsMoveTheReader(_ name: String) throws {
        let path = Fixtures.path(name)
        let file = try StreamFeeding.fileDecode(path)
        let channels = file.format.channelCount
        let stream = MemoryStream(try StreamFeeding.bytes(path))
        let decoder = try stream.decoder(exact: false)
        let target = file.samples.count / channels * 2 / 3
        try decoder.seek(toFrame: target)
        #expect(stream.seeks.count == 1)
        #expect(decoder.position == target)
        let got = try Self.read(decoder, frames: 1_000)
        #expect(ChunkStreamTests.firstDifference(got, Array(file.samples[(target * channels)..<((target + 1_000) * channels)])) == nil)
    }

    @Test("a reader without a seeker still refuses a seek back past what it kept, and a seek past the end is out of range")
    func withoutASeekerAndPastTheEnd() throws {
        let path = Fixtures.path("wav-44100-stereo-s16.wav")
        let stream = MemoryStream(try StreamFeeding.bytes(path))
        let decoder = try stream.decoder(exact: true)
        #expect(throws: AudioError.self) { try decoder.seek(toFrame: 1_000_000) }
        let parser = StreamParser(packets: { _ in })
        try StreamFeeding.bytes(path).withUnsafeBytes { try parser.parse($0) }
        try parser.finish()
        #expect(throws: AudioError.self) { try parser.seek(toFrame: -1) }
        let point = try parser.seek(toFrame: 0)
        #expect(point.byteOffset == parser.dataOffset && !point.isEstimated)
        // A seek opened the finished parser again: bytes from the point parse as after a seek.
        let bytes = try StreamFeeding.bytes(path)
        try bytes.withUnsafeBytes { try parser.parse(UnsafeRawBufferPointer(rebasing: $0[point.byteOffset...]), discontinuity: true) }
    }

    /// The bytes read while the format is learnt hold audio: it decodes before the reader is
    /// asked for more (it once waited for the next bytes, a second on a throttled link).
    @Test("the frames of the first bytes read decode without waiting for more", arguments:
        // The Ogg Vorbis file of one audio page has no whole packet in its first three quarters.
        fixtures.map { $0 == "vorbis-44100-stereo.ogg" ? "vorbis-44100-stereo-chained.ogg" : $0 })
    func theFirstBytesDecodeWithoutMore(_ name: String) throws {
        let path = Fixtures.path(name)
        let bytes = try StreamFeeding.bytes(path)
        let reference = try StreamFeeding.fileDecode(path)
        var reads = 0
        // The first read gets three quarters of the file (past every header); later reads are counted.
        let decoder = try StreamingDecoder(name: name) { buffer in
            reads += 1
            let range = reads == 1 ? 0..<(bytes.count * 3 / 4) : (bytes.count * 3 / 4)..<bytes.count
            let count = reads <= 2 ? min(buffer.count, range.count) : 0
            bytes.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[range.lowerBound..<(range.lowerBound + count)])) }
            return count
        }
        let channels = decoder.format.channelCount
        var out = [Float](repeating: 0, count: 256 * channels)
        let got = try out.withUnsafeMutableBufferPointer { try decoder.read(into: $0) }
        #expect(got == 256)
        #expect(reads == 1, "\(name): the reader was asked for more before the first frames")
        #expect(ChunkStreamTests.firstDifference(out, Array(reference.samples.prefix(256 * channels))) == nil)
    }
}
