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

/// The samples and warnings of `StreamFeeding.decodeLive`.
private func decodeLive(_ bytes: [UInt8], _ pieces: Pieces) throws -> (samples: [Float], warnings: [DecodeWarning]) {
    let decoded = try StreamFeeding.decodeLive(bytes, pieces)
    return (decoded.samples, decoded.warnings)
}

/// What a parser said at `readyToProducePackets`, and everything it reported.
private struct ReadySnapshot {
    var duration: StreamDuration?
    var packetCount: Int?
    var byteCount: Int?
    var bitRate: Int?
    var durations: [StreamDuration] = []
}

/// Feeds `bytes` in `pieces` and notes what the parser knew when it was ready.
private func snapshot(_ bytes: [UInt8], _ pieces: Pieces = .whole) throws -> (ready: ReadySnapshot, parser: StreamParser) {
    final class Box { var snapshot = ReadySnapshot(); var parser: StreamParser? }
    let box = Box()
    let parser = StreamParser(propertyListener: { [weak box] property in
        guard let box, let parser = box.parser else { return }
        if property == .readyToProducePackets {
            box.snapshot.duration = parser.duration
            box.snapshot.packetCount = parser.audioDataPacketCount
            box.snapshot.byteCount = parser.audioDataByteCount
            box.snapshot.bitRate = parser.bitRate
        }
        if property == .duration, let duration = parser.duration { box.snapshot.durations.append(duration) }
    }, packets: { _ in })
    box.parser = parser
    for range in pieces.ranges(bytes.count) { try parser.parse(bytes[range]) }
    try parser.finish()
    return (box.snapshot, parser)
}

/// Writes `bytes` to a temporary file for the file decoder.
private func temporaryFile(_ bytes: [UInt8], _ name: String) throws -> String {
    let path = NSTemporaryDirectory() + "spool-mp3-stream-\(getpid())-\(name).mp3"
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    return path
}

/// Bytes from a seeded generator, with no 0xFF (so no frame header can start in them).
private func garbage(_ count: Int, seed: UInt64) -> [UInt8] {
    var generator = SplitMix(seed: seed)
    return (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next() % 255) }
}

/// The stream decode and the file decode of the same bytes agree: samples, warnings, and
/// (when the file decoder refuses the bytes) both refuse them.
private func expectAgreement(_ bytes: [UInt8], _ label: String, pieces: [Pieces] = Pieces.all) throws {
    let path = try temporaryFile(bytes, label)
    defer { try? FileManager.default.removeItem(atPath: path) }
    let reference: (samples: [Float], warnings: [DecodeWarning])?
    do {
        let decoded = try StreamFeeding.fileDecode(path)
        reference = (decoded.samples, decoded.warnings)
    } catch {
        reference = nil
    }
    for piece in pieces {
        guard let reference else {
            #expect(throws: AudioError.self, "\(label), \(piece): the file decoder refuses these bytes") {
                _ = try StreamFeeding.decode(bytes, piece)
            }
            continue
        }
        let decoded: (format: AudioFormat, samples: [Float], warnings: [DecodeWarning])
        do {
            decoded = try StreamFeeding.decode(bytes, piece)
        } catch {
            Issue.record("\(label), \(piece): \(error), where the file decoder decodes \(reference.samples.count) samples")
            continue
        }
        #expect(decoded.samples == reference.samples, "\(label), \(piece): \(decoded.samples.count) vs \(reference.samples.count) samples")
        #expect(decoded.warnings == reference.warnings, "\(label), \(piece)")
    }
}

/// A long VBR stream: the audio frames of `lame-44100-stereo-vbr.mp3` repeated `times`
/// times behind a Xing/LAME header frame whose counts and table of contents are made as
/// LAME makes them (the byte of each percent of the duration, in 256ths of the bytes).
private func longVBR(times: Int) throws -> (bytes: [UInt8], offsets: [Int]) {
    let path = Fixtures.path("mp3/lame-44100-stereo-vbr.mp3")
    let source = try StreamFeeding.bytes(path)
    let (stream, frameOffsets) = try mpegFrames(path)
    var header = Array(source[..<stream.audioStart])
    let audio = Array(source[stream.audioStart..<stream.audioEnd])
    var offsets: [Int] = []
    for k in 0..<times { offsets += frameOffsets.map { header.count + k * audio.count + $0 - stream.audioStart } }
    let total = header.count + times * audio.count
    let frames = offsets.count
    let xing = 4 + stream.header.sideInfoBytes
    func put(_ value: Int, at i: Int) { for b in 0..<4 { header[i + b] = UInt8(truncatingIfNeeded: value >> (24 - 8 * b)) } }
    #expect(MP3Tags.bigEndian(header, xing + 4, bytes: 4) & 7 == 7)
    put(frames, at: xing + 8)
    put(total, at: xing + 12)
    for percent in 0..<100 {
        header[xing + 16 + percent] = UInt8(min(255, offsets[percent * frames / 100] * 256 / total))
    }
    return (header + (0..<times).flatMap { _ in audio }, offsets)
}

/// Feeds `bytes[..<fed]`, seeks to `frame`, feeds from the seek point with a discontinuity
/// and decodes what follows through a `StreamDecoder` told the point.
private func seekAndDecode(_ bytes: [UInt8], fed: Int, frame: Int, sampleRate: Double) throws -> (point: StreamSeekPoint, samples: [Float], packets: [StreamPacket]) {
    final class Box { var packets: [StreamPacket] = [] }
    let box = Box()
    let parser = StreamParser(packets: { box.packets += $0 })
    try parser.parse(bytes[..<fed])
    let point = try parser.seek(toTime: (Double(frame) + 0.5) / sampleRate)
    let decoder = try StreamDecoder(parser: parser)
    box.packets = []
    decoder.seek(to: point)
    try parser.parse(bytes[min(bytes.count, point.byteOffset)...], discontinuity: true)
    try parser.finish()
    decoder.updatePacketTableInfo(parser.packetTableInfo)
    return (point, try decoder.decode(box.packets), box.packets)
}

/// The file decoder's samples from `frame` on.
private func fileSamples(_ path: String, from frame: Int) throws -> [Float] {
    let decoder = try openDecoder(.file(path: path))
    try decoder.seek(toFrame: frame)
    return try decoder.decodeAll().samples
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

    @Test("a seek where the packets were seen is exact and decodes the file decoder's samples from the frame",
          arguments: ["mp3/base-44100-stereo-cbr.mp3", "mp3/lame-44100-stereo-vbr.mp3", "mp3/lame-16000-mono-vbr.mp3",
                      "mp3-22050-mono-vbr.mp3", "mp2-48000-stereo.mp2", "mp3/tags-between-frames.mp3", "broken/corrupt-middle.mp3"])
    func seekSeen(_ name: String) throws {
        let path = Fixtures.path(name)
        let bytes = try StreamFeeding.bytes(path)
        let file = try openDecoder(.file(path: path))
        let total = Int(file.frameCount)
        let spf = (try StreamFeeding.record(bytes, .whole)).parser.dataFormat?.framesPerPacket ?? 1152
        var worstFromWhole: Float = 0
        for frame in Set([0, 1, spf - 1, spf, 3 * spf + 17, total / 2, total - 1]) where frame < total {
            let (point, samples, _) = try seekAndDecode(bytes, fed: bytes.count, frame: frame, sampleRate: file.format.sampleRate)
            #expect(!point.isEstimated)
            #expect(point.targetFrame == frame)
            let reference = try fileSamples(path, from: frame)
            // How far both seeks are from the whole decode (libmpg123 restarted 12 frames
            // back is not always bit-exact with decoding from the start).
            let whole = try StreamFeeding.fileDecode(path).samples.dropFirst(frame * file.format.channelCount)
            worstFromWhole = max(worstFromWhole, zip(samples, whole).map { abs($0 - $1) }.max() ?? 0)
            #expect(samples.count == reference.count, "\(name) at \(frame)")
            let difference = zip(samples, reference).map { abs($0 - $1) }.max() ?? 0
            #expect(difference == 0, "\(name) at \(frame): largest difference \(difference)")
        }
        print("MP3 stream seek \(name): samples equal the file decoder's seek; largest difference from the whole decode \(worstFromWhole)")
    }

    @Test("properties come before packets, in the documented order, and agree with the file", arguments: mp3Files)
    func properties(_ name: String) throws {
        let path = Fixtures.path(name)
        let bytes = try StreamFeeding.bytes(path)
        let recording = try StreamFeeding.record(bytes, .random(seed: 3, maximum: 300))
        let parser = recording.parser
        #expect(recording.packetsBeforeReady == 0)
        let ready = try #require(recording.properties.firstIndex(of: .readyToProducePackets))
        let before = Array(recording.properties[..<ready])
        #expect(before == StreamProperty.allCases.filter(before.contains), "\(before)")
        #expect(before.first == .fileFormat)
        #expect(recording.properties.filter { $0 == .readyToProducePackets }.count == 1)
        let (stream, offsets) = try mpegFrames(path)
        let file = try StreamFeeding.fileDecode(path).decoder
        #expect(parser.fileFormat == .mp3)
        #expect(parser.dataFormat == StreamDataFormat(sampleRate: Double(stream.header.sampleRate), channelCount: stream.header.channelCount,
                                                      codec: .mpeg(layer: stream.header.layer),
                                                      framesPerPacket: stream.header.samplesPerFrame, bytesPerPacket: 0))
        #expect(parser.magicCookie == nil)
        #expect(parser.dataOffset == offsets.first)
        #expect(parser.audioDataByteCount == stream.audioBytes)
        #expect(parser.audioDataPacketCount == stream.audioFrames)
        #expect(parser.bitRate == file.info.bitRate)
        #expect(parser.tags == file.info.tags)
        #expect(parser.maximumPacketSize == recording.packets.map(\.bytes.count).max())
        #expect(parser.duration?.basis == .frameCount)
        #expect(parser.duration?.frames == Int(file.frameCount))
        #expect(recording.packets.map(\.startFrame) == recording.packets.indices.map { $0 * stream.header.samplesPerFrame })
        if let info = stream.infoFrame {
            #expect(parser.packetTableInfo?.primingFrames == min(stream.audioFrames * stream.header.samplesPerFrame, info.startTrim))
            #expect(parser.packetTableInfo?.validFrames == Int(file.frameCount))
        } else {
            #expect(parser.packetTableInfo == nil)
        }
    }

    @Test("duration: exact from a header frame's count, from bytes at a constant rate, otherwise an estimate until the end")
    func durationRules() throws {
        // Xing/LAME frame count: exact from the start.
        let lame = try snapshot(try StreamFeeding.bytes(Fixtures.path("mp3/lame-44100-stereo-vbr.mp3")), .single)
        #expect(lame.ready.duration == StreamDuration(frames: 8820, seconds: 0.2, basis: .frameCount))
        #expect(lame.ready.packetCount == 9)
        // VBRI frame count.
        let vbri = try snapshot(try StreamFeeding.bytes(Fixtures.path("mp3/vbri-vbr-id3v1.mp3")))
        #expect(vbri.ready.duration?.basis == .frameCount)
        #expect(vbri.ready.duration?.frames == 10368)
        // CBR without a header frame: an estimate, refined, exact at the end.
        let cbr = try snapshot(try StreamFeeding.bytes(Fixtures.path("mp3/base-44100-stereo-cbr.mp3")), .random(seed: 5, maximum: 600))
        #expect(cbr.ready.duration?.basis == .estimate)
        #expect(cbr.ready.packetCount == nil)
        #expect(cbr.ready.durations.count > 2)
        // Refined as packets arrive, not byte by byte.
        let single = try snapshot(try StreamFeeding.bytes(Fixtures.path("mp3/base-44100-stereo-cbr.mp3")), .single)
        #expect(single.ready.durations.count <= 9 + 2)
        #expect(single.ready.durations.map(\.seconds) == single.ready.durations.map(\.seconds).sorted())
        #expect(cbr.ready.durations.dropLast().allSatisfy { $0.isEstimated })
        #expect(cbr.parser.duration == StreamDuration(frames: 10368, seconds: 10368 / 44100, basis: .frameCount))
        // A header frame with the byte count alone: CBR gives byte count and bit rate.
        var info = try StreamFeeding.bytes(Fixtures.path("mp3/ffmpeg-16000-mono.mp3"))
        let header = try #require(MPEGAudioHeader(info))
        let xing = 4 + header.sideInfoBytes
        #expect(info.matches("Info", at: xing))
        let total = info.count
        info.replaceSubrange((xing + 4)..<(xing + 12), with: [0, 0, 0, 2] + (0..<4).map { UInt8(truncatingIfNeeded: total >> (24 - 8 * $0)) })
        for i in (xing + 12)..<header.frameBytes { info[i] = 0 }
        let bytesOnly = try snapshot(info)
        let audioBytes = total - header.frameBytes
        #expect(bytesOnly.ready.duration?.basis == .byteCountAndBitRate)
        #expect(bytesOnly.ready.byteCount == audioBytes)
        let audioRate = try #require(MPEGAudioHeader(info, at: header.frameBytes)).bitRate
        let expected = Double(audioBytes) * 8 / Double(audioRate)
        #expect(abs((bytesOnly.ready.duration?.seconds ?? 0) - expected) < 1e-9)
        #expect(bytesOnly.parser.duration?.basis == .frameCount)
        try expectAgreement(info, "info-bytes-only", pieces: [.whole, .single])
        // The same as Xing (a VBR header): an estimate.
        info.replaceSubrange(xing..<(xing + 4), with: Array("Xing".utf8))
        let vbrBytesOnly = try snapshot(info)
        #expect(vbrBytesOnly.ready.duration?.basis == .estimate)
        #expect(vbrBytesOnly.parser.duration?.basis == .frameCount)
    }

    @Test("garbage before, inside and after the frames is skipped and reported as the file decoder reports it")
    func garbageAnywhere() throws {
        let path = Fixtures.path("mp3/lame-44100-stereo-vbr.mp3")
        let bytes = try StreamFeeding.bytes(path)
        let offsets = try mpegFrames(path).offsets
        let noise = garbage(333, seed: 11)
        let cases: [(String, [UInt8])] = [
            ("before", noise + bytes),
            ("between", Array(bytes[..<offsets[4]]) + noise + Array(bytes[offsets[4]...])),
            ("over-a-frame", Array(bytes[..<(offsets[3] + 40)]) + noise + Array(bytes[(offsets[3] + 40 + noise.count)...])),
            ("after", bytes + noise),
            ("zeros-after", bytes + [UInt8](repeating: 0, count: 500)),
            ("zeros-between", Array(bytes[..<offsets[6]]) + [UInt8](repeating: 0, count: 50) + Array(bytes[offsets[6]...])),
            ("after-then-id3v1", bytes + noise + Array("TAG".utf8) + [UInt8](repeating: 0x41, count: 125)),
            ("between-then-tag", Array(bytes[..<offsets[5]]) + noise + Array("TAG".utf8) + [UInt8](repeating: 0x42, count: 125)
                + Array(bytes[offsets[5]...])),
            ("three-bytes-after", bytes + [1, 2, 3]),
            ("header-cut-after", bytes + [0xFF, 0xFB]),
            ("after-a-tag", bytes + Array("TAG".utf8) + [UInt8](repeating: 0x43, count: 125) + noise),
            ("cut-then-tag", Array(bytes.dropLast(100)) + Array("TAG".utf8) + [UInt8](repeating: 0x44, count: 125)),
        ]
        for (label, damaged) in cases {
            try expectAgreement(damaged, label)
        }
        // Damage in the middle is reported where it is.
        let decoded = try StreamFeeding.decode(cases[1].1, .random(seed: 8, maximum: 64))
        #expect(decoded.warnings.map(\.kind) == [.skippedCorruptData])
    }

    @Test("streams cut anywhere decode as the file decoder decodes the same bytes, or fail as it does")
    func truncatedAnywhere() throws {
        for name in ["mp3/lame-44100-stereo-vbr.mp3", "mp3/base-16000-mono-vbr.mp3", "mp2-48000-stereo.mp2", "mp3/vbri-mpeg2.mp3"] {
            let bytes = try StreamFeeding.bytes(Fixtures.path(name))
            let offsets = try mpegFrames(Fixtures.path(name)).offsets
            for cut in stride(from: 1, to: bytes.count, by: 97) {
                let label = "\(name.replacingOccurrences(of: "/", with: "-"))-\(cut)"
                try expectAgreement(Array(bytes[..<cut]), label, pieces: [.whole, .random(seed: UInt64(cut), maximum: 200)])
                // Cut, then tagged: an ID3v1 tag after the cut. (Not where the cut leaves fewer
                // than four frames: the frame cut short then runs into the tag and breaks the
                // chain of frames the stream is first recognised by, where `MPEGStream` takes
                // the tag off the end of the file before it looks for frames.)
                guard offsets.filter({ $0 < cut }).count >= 5 else { continue }
                let id3v1 = Array("TAG".utf8) + Array("Cut".utf8) + [UInt8](repeating: 0, count: 122)
                try expectAgreement(Array(bytes[..<cut]) + id3v1, label + "-id3v1", pieces: [.whole, .single])
            }
        }
    }

    @Test("a header frame claiming absurd counts is believed only as far as the frames go")
    func absurdHeaderFrame() throws {
        let path = Fixtures.path("broken/huge-xing.mp3")
        let bytes = try StreamFeeding.bytes(path)
        let (ready, parser) = try snapshot(bytes, .random(seed: 1, maximum: 100))
        let file = try StreamFeeding.fileDecode(path)
        #expect((ready.packetCount ?? 0) > 1_000_000)
        #expect(ready.duration?.basis == .frameCount)
        #expect(parser.audioDataPacketCount == (try mpegFrames(path)).stream.audioFrames)
        #expect(parser.duration?.frames == Int(file.decoder.frameCount))
        let decoded = try StreamFeeding.decode(bytes, .single)
        #expect(decoded.samples == file.samples)
        #expect(decoded.warnings == file.warnings)
        #expect(decoded.warnings.map(\.kind) == [.truncated])
        // Seeking into the claimed hours before the end: an estimate, no trap.
        let early = StreamParser(packets: { _ in })
        try early.parse(bytes.prefix(3000))
        let point = try early.seek(toTime: 3600)
        #expect(point.isEstimated)
        #expect(point.byteOffset >= 0)
    }

    @Test("empty, foreign and header-only input gets a clear error")
    func badInput() throws {
        #expect(throws: AudioError.self) { try StreamParser(packets: { _ in }).finish() }
        do {
            try StreamParser(packets: { _ in }).finish()
        } catch let error as AudioError {
            #expect(error.code == .emptyInput)
        }
        for name in ["broken/empty.mp3", "broken/text.mp3", "broken/random.bin"] {
            let bytes = try StreamFeeding.bytes(Fixtures.path(name))
            #expect(throws: AudioError.self, "\(name)") { _ = try StreamFeeding.record(bytes, .whole, typeHint: "mp3") }
        }
        // The header frame and nothing after it.
        let lame = try StreamFeeding.bytes(Fixtures.path("mp3/lame-44100-stereo-vbr.mp3"))
        let header = try #require(MPEGAudioHeader(lame))
        do {
            _ = try StreamFeeding.record(Array(lame.prefix(header.frameBytes)), .single)
            Issue.record("a header frame alone was accepted")
        } catch let error as AudioError {
            #expect(error.code == .corruptData)
            #expect(error.message.contains("header frame"))
        }
        // A frame header and a few bytes of its frame.
        #expect(throws: AudioError.self) { _ = try StreamFeeding.record(Array(lame[417..<430]), .whole) }
    }

    @Test("a CBR seek past the packets seen is exact where frames have one size, an estimate where padding varies")
    func seekUnseenCBR() throws {
        for name in ["mp3-48000-stereo-notag.mp3", "mp2-48000-stereo.mp2"] {
            let path = Fixtures.path(name)
            let bytes = try StreamFeeding.bytes(path)
            let file = try openDecoder(.file(path: path))
            let total = Int(file.frameCount)
            let fed = try mpegFrames(path).offsets[4] + 4
            for frame in [total / 2, total * 3 / 4, total - 1] {
                let (point, samples, _) = try seekAndDecode(bytes, fed: fed, frame: frame, sampleRate: file.format.sampleRate)
                #expect(!point.isEstimated, "\(name) at \(frame)")
                #expect(samples == (try fileSamples(path, from: frame)), "\(name) at \(frame)")
            }
        }
        // 128 kbit/s at 44.1 kHz pads some frames: past what was seen, the offset is estimated.
        let path = Fixtures.path("mp3/base-44100-stereo-cbr.mp3")
        let bytes = try StreamFeeding.bytes(path)
        let (point, samples, packets) = try seekAndDecode(bytes, fed: 1800, frame: 8000, sampleRate: 44100)
        #expect(point.isEstimated)
        let offsets = try mpegFrames(path).offsets
        let landed = try #require(offsets.firstIndex { $0 >= point.byteOffset })
        #expect(abs(landed * 1152 - 8000) <= 1152, "landed on frame \(landed)")
        #expect(packets.first?.byteOffset == offsets[landed])
        #expect(!samples.isEmpty)
    }

    @Test("a VBR seek through the Xing table of contents lands within 1 % of the duration")
    func seekThroughTOC() throws {
        let (bytes, offsets) = try longVBR(times: 40)
        let path = try temporaryFile(bytes, "long-vbr")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let file = try openDecoder(.file(path: path))
        #expect(try StreamFeeding.decode(bytes, .random(seed: 2, maximum: 4096)).samples == file.decodeAll().samples)
        let total = Int(file.frameCount)
        var worst = 0.0
        for fraction in [0.1, 0.25, 0.333, 0.5, 0.77, 0.95] {
            let frame = Int(Double(total) * fraction)
            let (point, samples, packets) = try seekAndDecode(bytes, fed: 2000, frame: frame, sampleRate: 44100)
            #expect(point.isEstimated)
            let landed = try #require(offsets.firstIndex { $0 >= point.byteOffset })
            #expect(packets.first?.byteOffset == offsets[landed])
            let error = Double(abs(landed * 1152 - 1105 - frame)) / Double(total)
            worst = max(worst, error)
            #expect(error <= 0.01, "at \(fraction): landed on frame \(landed), \(error * 100) % off")
            #expect(abs(samples.count / 2 - (total - frame)) <= total / 100 + 1152)
        }
        print("MP3 stream TOC seek: worst landing \(worst * 100) % of the duration off (\(total) frames)")
        // The fixtures' own tables: Xing (9 frames) and VBRI.
        for name in ["mp3/lame-44100-stereo-vbr.mp3", "mp3/vbri-vbr-id3v1.mp3", "mp3/vbri-mpeg2.mp3"] {
            let path = Fixtures.path(name)
            let bytes = try StreamFeeding.bytes(path)
            let offsets = try mpegFrames(path).offsets
            let parser = StreamParser(packets: { _ in })
            try parser.parse(bytes.prefix(offsets[3]))
            let spf = parser.dataFormat?.framesPerPacket ?? 1152
            let priming = parser.packetTableInfo?.primingFrames ?? 0
            var errors: [Int] = []
            for index in [offsets.count / 2, offsets.count - 1] {
                let point = try parser.seek(toTime: Double(index * spf - priming + 1) / (parser.dataFormat?.sampleRate ?? 1))
                #expect(point.isEstimated, "\(name)")
                let landed = offsets.firstIndex { $0 >= point.byteOffset } ?? offsets.count
                errors.append(landed - index)
            }
            #expect(errors.allSatisfy { abs($0) <= 1 }, "\(name): landed \(errors) frames off")
            print("MP3 stream table seek \(name): landed \(errors) frames off")
        }
    }

    @Test("megabytes of damage, an unterminated Lyrics3 tag and a tag claiming 200 MB, fed a byte at a time")
    func hostileInOneBytePieces() throws {
        let lame = try StreamFeeding.bytes(Fixtures.path("mp3/lame-44100-stereo-vbr.mp3"))
        let offsets = try mpegFrames(Fixtures.path("mp3/lame-44100-stereo-vbr.mp3")).offsets
        let front = Array(lame[..<offsets[5]]), back = Array(lame[offsets[5]...])
        let lyrics = Array("LYRICSBEGIN".utf8) + [UInt8](repeating: 0x20, count: 1_010_000)
        let bigTag: [UInt8] = Array("ID3".utf8) + [4, 0, 0, 0x60, 0, 0, 0]  // 200 MB, synchsafe
        let cases: [(String, [UInt8])] = [
            ("damage", front + garbage(1_100_000, seed: 4) + back),
            ("lyrics", front + lyrics + back),
            ("big-tag", front + bigTag + back),
        ]
        for (label, bytes) in cases {
            final class Count { var packets = 0 }
            let count = Count()
            let parser = StreamParser(packets: { count.packets += $0.count })
            let start = ContinuousClock.now
            try bytes.withUnsafeBytes { raw in
                for i in 0..<raw.count { try parser.parse(UnsafeRawBufferPointer(rebasing: raw[i..<(i + 1)])) }
            }
            try parser.finish()
            print("MP3 stream \(label): \(bytes.count) bytes a byte at a time in \(ContinuousClock.now - start), \(count.packets) packets")
            #expect(count.packets >= 4, "\(label)")
            try expectAgreement(bytes, label, pieces: [.whole, .random(seed: 9, maximum: 5000)])
        }
    }

    @Test("a discontinuity without a seek: the frames after the gap are found again, not numbered")
    func discontinuityWithoutSeek() throws {
        for name in ["mp3/lame-44100-stereo-vbr.mp3", "mp3/base-44100-stereo-cbr.mp3", "mp3/vbri-mpeg2.mp3"] {
            let path = Fixtures.path(name)
            let bytes = try StreamFeeding.bytes(path)
            let offsets = try mpegFrames(path).offsets
            final class Box { var packets: [StreamPacket] = [] }
            let box = Box()
            let parser = StreamParser(packets: { box.packets += $0 })
            let cut = offsets.count / 2
            try parser.parse(bytes[..<offsets[cut]])
            box.packets = []
            // The stream goes on from the middle of a later frame.
            let resume = offsets[cut + 1] + 7
            try parser.parse(bytes[resume...], discontinuity: true)
            try parser.finish()
            let after = offsets.filter { $0 > resume }
            #expect(box.packets.count == after.count, "\(name)")
            #expect(box.packets.allSatisfy { $0.startFrame == nil }, "\(name)")
            for (packet, offset) in zip(box.packets, after) {
                #expect(packet.bytes.elementsEqual(bytes[offset..<(offset + packet.bytes.count)]), "\(name)")
            }
        }
    }
}
