import Foundation
import SpoolCore
import Testing
@testable import SpoolDecoding

/// Every MP3 (and MP2) file the file decoder decodes: the committed fixtures, the tag and
/// header-frame fixtures, and the damaged ones.
private let mp3Files: [String] = {
    let fm = FileManager.default
    var names = (try? fm.contentsOfDirectory(atPath: Fixtures.path(""))) ?? []
    names = names.filter { $0.hasSuffix(".mp3") || $0.hasSuffix(".mp2") }
    let sub = ((try? fm.contentsOfDirectory(atPath: Fixtures.path("mp3"))) ?? []).filter { $0.hasSuffix(".mp3") }.map { "mp3/\($0)" }
    let broken = ["broken/corrupt-middle.mp3", "broken/truncated.mp3", "broken/huge-xing.mp3"]
    return (names + sub + broken).sorted()
}()

/// Offsets of the audio frames `MPEGStream` finds in a file (the header frame not included).
private func mpegFrames(_ path: String) throws -> (stream: MPEGStream, offsets: [Int]) {
    let reader = try ByteReader(source: .file(path: path))
    let stream = try MPEGStream(reader: reader, name: path)
    let excluded = stream.excluded
    var offsets: [Int] = []
    var offset = stream.audioStart
    while offset < stream.audioEnd {
        if let range = excluded.first(where: { $0.contains(offset) }) {
            offset = range.upperBound
            continue
        }
        guard let h = MPEGAudioHeader(reader.bytes(at: offset, count: 4)), h.continues(stream.header) else { break }
        offsets.append(offset)
        offset += h.frameBytes
    }
    return (stream, offsets)
}

/// `StreamFeeding.decodeLive`, keeping each guarded piece alive while it is parsed (there,
/// the piece can be freed before `parse` reads it).
private func decodeLive(_ bytes: [UInt8], _ pieces: Pieces) throws -> (samples: [Float], warnings: [DecodeWarning]) {
    final class Box { var parser: StreamParser?; var decoder: StreamDecoder?; var samples: [Float] = []; var error: (any Error)? }
    let box = Box()
    let parser = StreamParser(packets: { packets in
        do {
            if box.decoder == nil, let parser = box.parser { box.decoder = try StreamDecoder(parser: parser) }
            box.decoder?.updatePacketTableInfo(box.parser?.packetTableInfo)
            try box.decoder?.decode(packets, into: &box.samples)
        } catch { box.error = error }
    })
    box.parser = parser
    for range in pieces.ranges(bytes.count) {
        let guarded = GuardedBytes(bytes[range])
        try withExtendedLifetime(guarded) { try parser.parse(guarded.buffer) }
    }
    try parser.finish()
    if let error = box.error { throw error }
    guard let decoder = box.decoder else { throw AudioError(.truncated, "no packet") }
    return (box.samples, decoder.warnings)
}

@Suite("MP3 streams")
struct MP3StreamTests {
    @Test("whole streams give the file decoder's packets and samples", arguments: mp3Files)
    func agreesWhole(_ name: String) throws {
        let path = Fixtures.path(name)
        let bytes = try StreamFeeding.bytes(path)
        let reference = try StreamFeeding.fileDecode(path)
        let recording = try StreamFeeding.record(bytes, .whole)
        let (stream, offsets) = try mpegFrames(path)
        #expect(recording.packets.map(\.byteOffset) == offsets)
        #expect(recording.parser.audioDataPacketCount == stream.audioFrames)
        let decoded = try StreamFeeding.decode(bytes, .whole)
        #expect(decoded.samples.count == reference.samples.count)
        #expect(decoded.samples == reference.samples)
        #expect(decoded.warnings == reference.warnings)
        #expect(recording.parser.duration?.frames == Int(reference.decoder.frameCount))
    }

    @Test("streams in any pieces give the same properties, packets and samples", arguments: mp3Files)
    func agreesInPieces(_ name: String) throws {
        let path = Fixtures.path(name)
        let bytes = try StreamFeeding.bytes(path)
        let reference = try StreamFeeding.fileDecode(path)
        let whole = try StreamFeeding.record(bytes, .whole)
        for pieces in Pieces.all.dropFirst() {
            let recording = try StreamFeeding.record(bytes, pieces)
            #expect(recording.packets == whole.packets, "\(pieces)")
            #expect(recording.parser.duration == whole.parser.duration, "\(pieces)")
            #expect(recording.parser.packetTableInfo == whole.parser.packetTableInfo, "\(pieces)")
            #expect(recording.parser.tags == whole.parser.tags, "\(pieces)")
            #expect(recording.parser.bitRate == whole.parser.bitRate, "\(pieces)")
            let decoded = try StreamFeeding.decode(bytes, pieces)
            #expect(decoded.samples == reference.samples, "\(pieces)")
            let live = try decodeLive(bytes, pieces)
            #expect(live.samples == reference.samples, "live, \(pieces)")
            #expect(live.warnings == reference.warnings, "live, \(pieces)")
        }
    }
}
