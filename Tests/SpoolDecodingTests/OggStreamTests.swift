import Foundation
import Testing
import SpoolCore
@testable import SpoolDecoding

/// The Ogg stream parser and the Vorbis and Opus packet decoders against the file decoders:
/// the same properties, packets and samples however the bytes are cut, and damage, seeks
/// and bad input handled as the file decoders handle them.
@Suite("Ogg stream parsing")
struct OggStreamTests {
    /// Every Ogg Vorbis and Ogg Opus file the file decoders decode, clean or damaged.
    static let files = [
        "vorbis-22050-mono.ogg", "vorbis-44100-stereo.ogg", "vorbis-48000-5.1.ogg", "vorbis-48000-7.1.ogg",
        "vorbis-44100-stereo-chained.ogg",
        "broken/vorbis-chained-mixed.ogg", "broken/vorbis-chained-short-links.ogg", "broken/truncated.ogg",
        "broken/corrupt-middle.ogg",
        "ogg/chained-fewer-channels-raised-granule.ogg", "ogg/flags-all-set.ogg", "ogg/flags-continued-last.ogg",
        "ogg/granule-last-raised.ogg", "ogg/granule-max-hole-bad-checksum.ogg", "ogg/granule-max.ogg",
        "ogg/granule-raised.ogg", "ogg/page-missing.ogg",
        "ogg/opus-48000-stereo.opus",
        "opus/opus-44100-stereo.opus", "opus/opus-48000-5.1.opus", "opus/opus-48000-mono-long.opus",
        "opus/opus-48000-mono.opus", "opus/opus-48000-stereo-chained.opus", "opus/opus-48000-stereo-tags.opus",
        "opus/opus-48000-stereo.opus",
    ]

    /// The file decoder's PCM and facts for bytes in memory.
    static func fileDecode(_ bytes: [UInt8], typeHint: String) throws -> (format: AudioFormat, samples: [Float], warnings: [DecodeWarning], decoder: any AudioDecoder) {
        let decoder = try openDecoder(.memory(Data(bytes), name: "bytes", typeHint: typeHint))
        let buffer = try decoder.decodeAll()
        return (decoder.format, buffer.samples, decoder.warnings, decoder)
    }

    /// The largest difference between two sample arrays of the same length.
    static func maximumDifference(_ a: some Collection<Float>, _ b: some Collection<Float>) -> Float {
        zip(a, b).reduce(0) { max($0, abs($1.0 - $1.1)) }
    }

    /// Checks a stream fed in `pieces` against the file decoder's decode of the same bytes.
    static func expectAgreement(_ bytes: [UInt8], _ pieces: Pieces, with reference: (format: AudioFormat, samples: [Float], warnings: [DecodeWarning], decoder: any AudioDecoder),
                                _ label: String) throws {
        let recording = try StreamFeeding.record(bytes, pieces)
        let parser = recording.parser
        let dataFormat = try #require(parser.dataFormat, "\(label)")
        #expect(dataFormat.sampleRate == reference.format.sampleRate, "\(label)")
        #expect(dataFormat.channelCount == reference.format.channelCount, "\(label)")
        #expect(parser.tags == reference.decoder.info.tags, "\(label)")
        #expect(recording.packetsBeforeReady == 0, "\(label)")
        // Every packet is audio but a chained link's headers (a Vorbis header's first bit is set;
        // an Opus header begins "Opus", which no audio packet can: its TOC would claim 960 ms).
        let headers = recording.packets.filter {
            dataFormat.codec == .vorbis ? ($0.bytes.first ?? 0) & 1 == 1 : $0.bytes.starts(with: Array("Opus".utf8))
        }
        #expect(parser.audioDataPacketCount == recording.packets.count - headers.count, "\(label)")
        #expect(headers.allSatisfy { $0.frameCount == 0 }, "\(label)")
        #expect(parser.maximumPacketSize == recording.packets.filter { !headers.contains($0) }.map(\.bytes.count).max(), "\(label)")
        #expect(parser.dataOffset.map { $0 > 0 && $0 < bytes.count } == true, "\(label)")
        let frames = reference.samples.count / reference.format.channelCount
        #expect(parser.duration == StreamDuration(frames: frames, seconds: Double(frames) / reference.format.sampleRate, basis: .frameCount),
                "\(label)")
        #expect(parser.packetTableInfo?.validFrames == frames, "\(label)")

        // Properties before packets, in the documented order.
        let ready = try #require(recording.properties.firstIndex(of: .readyToProducePackets), "\(label)")
        let early = recording.properties[..<ready].compactMap { StreamProperty.allCases.firstIndex(of: $0) }
        #expect(early == early.sorted() && Set(early).count == early.count, "\(label): \(recording.properties)")
        #expect(Array(recording.properties.prefix(2)) == [.fileFormat, .dataFormat], "\(label)")

        let decoder = try StreamDecoder(parser: parser)
        let samples = try decoder.decode(recording.packets)
        #expect(samples.count == reference.samples.count, "\(label)")
        #expect(samples == reference.samples, "\(label): differs by up to \(maximumDifference(samples, reference.samples))")
        #expect(decoder.warnings.map(\.formatChange) == reference.warnings.compactMap(\.formatChange).map { Optional($0) }, "\(label)")

        let live = try StreamFeeding.decodeLive(bytes, pieces)
        #expect(live.samples == reference.samples, "\(label), decoded as the packets arrive")
    }

    @Test("Properties, packets and samples agree with the file decoder in every chunking", arguments: files)
    func agreement(_ file: String) throws {
        let bytes = try StreamFeeding.bytes(Fixtures.path(file))
        let reference = try StreamFeeding.fileDecode(Fixtures.path(file))
        var packetsByPieces: [[StreamPacket]] = []
        for pieces in Pieces.all {
            try Self.expectAgreement(bytes, pieces, with: reference, "\(file), \(pieces)")
            packetsByPieces.append(try StreamFeeding.record(bytes, pieces).packets)
        }
        #expect(packetsByPieces.allSatisfy { $0 == packetsByPieces[0] }, "\(file): the packets depend on how the bytes are cut")
    }

    @Test("Packet frame counts and start frames add up to the stream")
    func packetTiming() throws {
        for file in ["vorbis-44100-stereo.ogg", "vorbis-44100-stereo-chained.ogg", "opus/opus-48000-stereo-chained.opus"] {
            let recording = try StreamFeeding.record(try StreamFeeding.bytes(Fixtures.path(file)), .whole)
            var next = 0
            for packet in recording.packets {
                #expect(packet.startFrame == next, "\(file) at byte \(packet.byteOffset)")
                next += packet.frameCount
            }
            let info = try #require(recording.parser.packetTableInfo)
            #expect(next == info.primingFrames + (info.validFrames ?? -1), "\(file)")
            #expect(recording.parser.audioDataPacketCount ?? 0 > 0)
        }
    }

    @Test("The Vorbis magic cookie holds the three headers, each after its length; the Opus cookie is OpusHead")
    func magicCookies() throws {
        let vorbis = try StreamFeeding.record(try StreamFeeding.bytes(Fixtures.path("vorbis-44100-stereo.ogg")), .whole).parser
        let cookie = try #require(vorbis.magicCookie)
        let headers = try VorbisStreamHeaders(cookie: cookie)
        #expect(headers.packets.map { $0.first } == [0x01, 0x03, 0x05])
        #expect(headers.cookie == cookie)
        let opus = try StreamFeeding.record(try StreamFeeding.bytes(Fixtures.path("opus/opus-48000-stereo.opus")), .whole).parser
        #expect(opus.magicCookie.map { Array($0.prefix(8)) } == Array("OpusHead".utf8))
        #expect(opus.packetTableInfo?.primingFrames == 312)
        #expect(opus.dataFormat?.codec == .opus && opus.dataFormat?.sampleRate == 48_000)
        #expect(vorbis.dataFormat?.codec == .vorbis && vorbis.fileFormat == .oggVorbis && opus.fileFormat == .oggOpus)
    }

    @Test("The duration is an estimate until the stream ends, then the exact frame count")
    func durationRule() throws {
        for file in ["vorbis-44100-stereo-chained.ogg", "opus/opus-48000-mono-long.opus"] {
            let bytes = try StreamFeeding.bytes(Fixtures.path(file))
            let parser = StreamParser(packets: { _ in })
            try parser.parse(bytes)
            let before = try #require(parser.duration)
            #expect(before.isEstimated && before.frames == nil, "\(file)")
            #expect(parser.audioDataPacketCount == nil)
            try parser.finish()
            let reference = try StreamFeeding.fileDecode(Fixtures.path(file))
            #expect(parser.duration?.basis == .frameCount)
            #expect(parser.duration?.frames == reference.decoder.frameCount, "\(file)")
        }
    }

    // MARK: - Seeking

    /// Parses `bytes` (all of them, or the first `parsed`), seeks to `seconds`, feeds from the
    /// point with a discontinuity and decodes what follows as a player does.
    static func seekAndDecode(_ bytes: [UInt8], parsed: Int? = nil, to seconds: Double) throws -> (point: StreamSeekPoint, samples: [Float], firstFrame: Int?) {
        final class Box { var packets: [StreamPacket] = [] }
        let box = Box()
        let parser = StreamParser(packets: { box.packets += $0 })
        try parser.parse(bytes.prefix(parsed ?? bytes.count))
        let decoder = try StreamDecoder(parser: parser)
        let point = try parser.seek(toTime: seconds)
        box.packets = []
        for range in Pieces.random(seed: 3, maximum: 700).ranges(bytes.count - point.byteOffset) {
            try parser.parse(bytes[(point.byteOffset + range.lowerBound)..<(point.byteOffset + range.upperBound)],
                             discontinuity: range.lowerBound == 0)
        }
        try parser.finish()
        decoder.updatePacketTableInfo(parser.packetTableInfo)
        decoder.seek(to: point)
        let priming = parser.packetTableInfo?.primingFrames ?? 0
        let first = box.packets.first { $0.frameCount > 0 }?.startFrame.map { $0 - priming }
        return (point, try decoder.decode(box.packets), first)
    }

    @Test("A seek within the parsed bytes is exact and plays on from the frame asked for", arguments: [
        "vorbis-44100-stereo.ogg", "vorbis-44100-stereo-chained.ogg", "vorbis-48000-5.1.ogg",
        "opus/opus-48000-mono-long.opus", "opus/opus-48000-stereo-chained.opus",
    ])
    func exactSeek(_ file: String) throws {
        let bytes = try StreamFeeding.bytes(Fixtures.path(file))
        let reference = try StreamFeeding.fileDecode(Fixtures.path(file))
        let channels = reference.format.channelCount
        let total = reference.samples.count / channels
        for fraction in [0.0, 0.1, 0.37, 0.5, 0.81, 0.99] {
            let target = Int(Double(total) * fraction)
            let seconds = Double(target) / reference.format.sampleRate
            let (point, samples, _) = try Self.seekAndDecode(bytes, to: seconds)
            #expect(!point.isEstimated, "\(file) at \(seconds) s")
            #expect(point.targetFrame == Int((seconds * reference.format.sampleRate).rounded(.down)))
            #expect(point.frame <= point.targetFrame)
            let expected = reference.samples[(point.targetFrame * channels)...]
            #expect(samples.count == expected.count, "\(file) at \(seconds) s")
            if file.hasSuffix(".ogg") {
                #expect(samples.elementsEqual(expected), "\(file) at \(seconds) s: up to \(Self.maximumDifference(samples, expected)) off")
            } else {
                // Opus decoding carries state: after its 0.5 s of pre-roll, float rounding.
                let quality = snr(samples[...], expected)
                #expect(quality > 100, "\(file) at \(seconds) s: \(quality) dB")
            }
        }
    }

    @Test("Seeks back and forth across chained links on one parser each play from the frame asked for", arguments: [
        "vorbis-44100-stereo-chained.ogg", "opus/opus-48000-stereo-chained.opus",
    ])
    func seeksAcrossLinks(_ file: String) throws {
        final class Box { var packets: [StreamPacket] = [] }
        let box = Box()
        let bytes = try StreamFeeding.bytes(Fixtures.path(file))
        let reference = try StreamFeeding.fileDecode(Fixtures.path(file))
        let rate = reference.format.sampleRate
        let parser = StreamParser(packets: { box.packets += $0 })
        try parser.parse(bytes)
        let decoder = try StreamDecoder(parser: parser)
        for seconds in [0.7, 0.05, 0.6, 0.3, 0.0, 0.75] {
            let point = try parser.seek(toTime: seconds)
            box.packets = []
            // To the end, but from 0 s only partway: into the second link's headers, not through them.
            #expect(!point.isEstimated, "\(file) at \(seconds) s")
            let from = min(bytes.count, point.byteOffset)
            try parser.parse(bytes[from..<min(bytes.count, from + (seconds == 0.0 ? 6000 : bytes.count))], discontinuity: true)
            decoder.seek(to: point)
            let samples = try decoder.decode(box.packets)
            let expected = reference.samples[(point.targetFrame * 2)...].prefix(samples.count)
            #expect(!samples.isEmpty, "\(file) at \(seconds) s")
            if file.hasSuffix(".ogg") {
                #expect(samples.elementsEqual(expected), "\(file) at \(seconds) s: up to \(Self.maximumDifference(samples, expected)) off")
            } else {
                let quality = snr(samples[...], expected)
                #expect(quality > 100, "\(file) at \(seconds) s: \(quality) dB")
            }
            #expect(point.targetFrame == Int((seconds * rate).rounded(.down)))
        }
    }

    @Test("A seek beyond the parsed bytes is an estimate from the bit rate, and the granule positions place the packets")
    func estimatedSeek() throws {
        let file = "opus/opus-48000-mono-long.opus"
        let bytes = try StreamFeeding.bytes(Fixtures.path(file))
        let reference = try StreamFeeding.fileDecode(Fixtures.path(file))
        let (point, samples, first) = try Self.seekAndDecode(bytes, parsed: 4000, to: 1.2)
        #expect(point.isEstimated)
        #expect(point.byteOffset > 4000 && point.byteOffset < bytes.count)
        let start = try #require(first, "the packets after an estimated seek have no start frame")
        // What is decoded runs from where the granule positions place it to the end.
        #expect(samples.count == reference.samples.count - max(start, point.frame))
        print("Estimated seek to 1.2 s of \(file): byte \(point.byteOffset), packets from frame \(start), \(samples.count) frames after")
    }

    // MARK: - Damage and bad input

    /// The first `count` pages' end offset of an Ogg file.
    static func pageEnds(_ bytes: [UInt8]) -> [Int] {
        var ends: [Int] = []
        var at = 0
        while at + 27 <= bytes.count, bytes[at..<(at + 4)].elementsEqual("OggS".utf8) {
            let segments = Int(bytes[at + 26])
            at += 27 + segments + bytes[(at + 27)..<(at + 27 + segments)].reduce(0) { $0 + Int($1) }
            ends.append(at)
        }
        return ends
    }

    @Test("Garbage between pages and after the last is skipped: the same samples as the clean stream")
    func garbageInsideAndAfter() throws {
        for file in ["vorbis-44100-stereo-chained.ogg", "opus/opus-48000-stereo.opus"] {
            let clean = try StreamFeeding.bytes(Fixtures.path(file))
            let ends = Self.pageEnds(clean)
            var bytes = clean
            bytes.insert(contentsOf: SplitMix.bytes(777, seed: 5) + Array("OggS".utf8) + SplitMix.bytes(40, seed: 6), at: ends[4])
            bytes += SplitMix.bytes(3000, seed: 9)
            let reference = try StreamFeeding.fileDecode(Fixtures.path(file))
            for pieces in Pieces.all {
                let streamed = try StreamFeeding.decode(bytes, pieces)
                #expect(streamed.samples.count == reference.samples.count, "\(file), \(pieces)")
                #expect(streamed.samples == reference.samples,
                        "\(file), \(pieces): up to \(Self.maximumDifference(streamed.samples, reference.samples)) off")
            }
        }
    }

    @Test("Damage in the fixtures is reported as the file decoder reports it", arguments: [
        "broken/truncated.ogg", "broken/corrupt-middle.ogg", "ogg/granule-max-hole-bad-checksum.ogg", "ogg/page-missing.ogg",
        "vorbis-44100-stereo.ogg",
    ])
    func damageWarnings(_ file: String) throws {
        let reference = try StreamFeeding.fileDecode(Fixtures.path(file))
        for pieces in Pieces.all {
            let parser = try StreamFeeding.record(try StreamFeeding.bytes(Fixtures.path(file)), pieces).parser
            let mine = Set(parser.warnings.map { "\($0.kind) at \($0.byteOffset), \($0.byteCount) bytes" })
            let theirs = Set(reference.warnings.filter { $0.kind != .formatChanged }.map { "\($0.kind) at \($0.byteOffset), \($0.byteCount) bytes" })
            #expect(mine == theirs, "\(file), \(pieces)")
            if case .whole = pieces { print("Damage in \(file), \(pieces): stream \(parser.warnings.map(\.description)); file \(reference.warnings.map(\.description))") }
        }
    }

    @Test("Garbage before the first page is passed over, as the file decoder passes over it", arguments: ["vorbis-44100-stereo.ogg", "opus/opus-48000-stereo.opus"])
    func garbageBefore(_ file: String) throws {
        let path = Fixtures.path(file)
        let garbage = SplitMix.bytes(100, seed: 1).map { $0 == 0xFF ? 0 : $0 }
        let bytes = garbage + (try StreamFeeding.bytes(path))
        let reference = try StreamFeeding.fileDecode(path)
        for pieces in [Pieces.whole, .random(seed: 5, maximum: 40)] {
            let recording = try StreamFeeding.record(bytes, pieces)
            #expect(recording.parser.dataOffset.map { $0 >= 100 } == true, "\(file) \(pieces)")
            let decoded = try StreamFeeding.decode(bytes, pieces)
            #expect(decoded.samples == reference.samples, "\(file) \(pieces)")
        }
        // The file decoder plays the same bytes with the garbage in front as it plays the file.
        // A folder of this case's own: the cases run side by side, and each removes its folder.
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("spool-ogg-garbage-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let garbled = folder.appendingPathComponent(URL(fileURLWithPath: file).lastPathComponent)
        try Data(bytes).write(to: garbled)
        #expect(try StreamFeeding.fileDecode(garbled.path).samples == reference.samples)
    }

    @Test("A missing page, a bad checksum and a stream cut short decode as the file decoder decodes them")
    func damage() throws {
        for file in ["vorbis-44100-stereo-chained.ogg", "opus/opus-48000-mono-long.opus"] {
            let clean = try StreamFeeding.bytes(Fixtures.path(file))
            let ends = Self.pageEnds(clean)
            let hint = file.hasSuffix(".ogg") ? "ogg" : "opus"
            var missing = clean
            missing.removeSubrange(ends[3]..<ends[4])
            var badChecksum = clean
            badChecksum[ends[4] + 40] ^= 0x5A
            let cut = Array(clean.prefix(ends[5] + 100))
            let cutInHeaders = Array(clean.prefix(ends[1] - 10))
            // The page before a link's last page lost: the last page follows a hole.
            let last = try #require(ends.indices.first { clean[$0 == 0 ? 5 : ends[$0 - 1] + 5] & 4 != 0 })
            var missingBeforeLast = clean
            missingBeforeLast.removeSubrange(ends[last - 2]..<ends[last - 1])
            for (name, bytes) in [("a missing page", missing), ("a bad checksum", badChecksum), ("cut short", cut),
                                  ("the page before the last missing", missingBeforeLast)] {
                let reference = try Self.fileDecode(bytes, typeHint: hint)
                for pieces in [Pieces.whole, .single, .random(seed: 11, maximum: 300)] {
                    let recording = try StreamFeeding.record(bytes, pieces)
                    let samples = try StreamDecoder(parser: recording.parser).decode(recording.packets)
                    #expect(samples.count == reference.samples.count, "\(file), \(name), \(pieces)")
                    #expect(samples == reference.samples,
                            "\(file), \(name), \(pieces): up to \(Self.maximumDifference(samples, reference.samples)) off")
                    #expect(recording.parser.duration?.frames == reference.samples.count / reference.format.channelCount,
                            "\(file), \(name), \(pieces)")
                    if case .random = pieces {
                        #expect(try StreamFeeding.decodeLive(bytes, pieces).samples == reference.samples, "\(file), \(name), live")
                    }
                    if hint == "ogg" {
                        #expect(Set(recording.parser.warnings.map(\.kind)) == Set(reference.warnings.map(\.kind)),
                                "\(file), \(name), \(pieces): \(recording.parser.warnings) against \(reference.warnings)")
                    } else {
                        #expect(!recording.parser.warnings.isEmpty, "\(file), \(name), \(pieces)")
                    }
                }
            }
            #expect { try StreamFeeding.record(cutInHeaders, .single) } throws: { ($0 as? AudioError)?.code == .truncated }
        }
    }

    /// An Ogg page of `packets` for stream `serial`: segment table, checksum and all.
    static func page(_ body: [UInt8], lacing: [UInt8], serial: UInt32, sequence: UInt32, granule: Int64, type: UInt8) -> [UInt8] {
        var page = Array("OggS".utf8) + [0, type]
        for k in 0..<8 { page.append(UInt8(truncatingIfNeeded: granule >> (8 * k))) }
        for k in 0..<4 { page.append(UInt8(truncatingIfNeeded: serial >> (8 * k))) }
        for k in 0..<4 { page.append(UInt8(truncatingIfNeeded: sequence >> (8 * k))) }
        page += [0, 0, 0, 0, UInt8(lacing.count)] + lacing + body
        let crc = OggPageWalker.checksum(page[...])
        for k in 0..<4 { page[22 + k] = UInt8(truncatingIfNeeded: crc >> (8 * k)) }
        return page
    }

    /// Pages carrying one packet of `packet`'s bytes from sequence number `sequence` on.
    static func pages(carrying packet: [UInt8], serial: UInt32, sequence: UInt32) -> [UInt8] {
        var bytes: [UInt8] = []
        var rest = packet[...]
        var number = sequence
        var continued = false
        repeat {
            let body = Array(rest.prefix(255 * 255))
            rest = rest.dropFirst(body.count)
            var lacing = [UInt8](repeating: 255, count: body.count / 255)
            if rest.isEmpty { lacing.append(UInt8(body.count % 255)) }
            bytes += page(body, lacing: lacing, serial: serial, sequence: number, granule: rest.isEmpty ? 0 : -1, type: continued ? 1 : 0)
            number += 1
            continued = true
        } while !rest.isEmpty
        return bytes
    }

    @Test("A comment header of megabytes is not held: its text is read as far as kept, and the stream decodes")
    func hugeCommentHeader() throws {
        let clean = try StreamFeeding.bytes(Fixtures.path("vorbis-44100-stereo.ogg"))
        let packets = try oggPackets(clean)
        let serial = UInt32(clean[14]) | UInt32(clean[15]) << 8 | UInt32(clean[16]) << 16 | UInt32(clean[17]) << 24
        // A comment header: vendor, TITLE, then 3 MB of picture.
        func field(_ text: [UInt8]) -> [UInt8] {
            let n = UInt32(text.count)
            return [UInt8(n & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n >> 16 & 0xFF), UInt8(n >> 24)] + text
        }
        let comment = [0x03] + Array("vorbis".utf8) + field(Array("spool".utf8)) + [2, 0, 0, 0]
            + field(Array("TITLE=Big".utf8)) + field(Array("METADATA_BLOCK_PICTURE=".utf8) + [UInt8](repeating: 0x41, count: 3 << 20)) + [1]
        let ends = Self.pageEnds(clean)
        var bytes = Array(clean[..<ends[0]])
        bytes += Self.pages(carrying: comment, serial: serial, sequence: 1)
        let setupPages = Self.pages(carrying: packets[2].packet, serial: serial, sequence: 100)
        bytes += setupPages
        // The audio pages, renumbered after the headers' pages.
        var audio = Array(clean[ends[1]...])
        let pageCount = Self.pageEnds(bytes).count
        audio[18] = UInt8(pageCount)
        audio.replaceSubrange(22..<26, with: [0, 0, 0, 0])
        let crc = OggPageWalker.checksum(audio[...])
        for k in 0..<4 { audio[22 + k] = UInt8(truncatingIfNeeded: crc >> (8 * k)) }
        bytes += audio
        var held = 0
        let parser = StreamParser(packets: { _ in })
        for range in Pieces.random(seed: 4, maximum: 65_536).ranges(bytes.count) {
            try parser.parse(bytes[range])
            held = max(held, 0)
        }
        try parser.finish()
        #expect(parser.tags.title == "Big")
        #expect(parser.tags["METADATA_BLOCK_PICTURE"] == nil)
        let cookie = try #require(parser.magicCookie)
        #expect(cookie.count < 1 << 16, "the cookie holds \(cookie.count) bytes")
        let recording = try StreamFeeding.record(bytes, .random(seed: 5, maximum: 100_000))
        let samples = try StreamDecoder(parser: recording.parser).decode(recording.packets)
        let reference = try StreamFeeding.fileDecode(Fixtures.path("vorbis-44100-stereo.ogg"))
        #expect(samples == reference.samples)
    }

    /// The Vorbis fixture with its comment header replaced by `comment` (pages renumbered).
    static func withCommentHeader(_ comment: [UInt8]) throws -> [UInt8] {
        let clean = try StreamFeeding.bytes(Fixtures.path("vorbis-44100-stereo.ogg"))
        let packets = try oggPackets(clean)
        let serial = UInt32(clean[14]) | UInt32(clean[15]) << 8 | UInt32(clean[16]) << 16 | UInt32(clean[17]) << 24
        let ends = Self.pageEnds(clean)
        var bytes = Array(clean[..<ends[0]])
        bytes += Self.pages(carrying: comment, serial: serial, sequence: 1)
        bytes += Self.pages(carrying: packets[2].packet, serial: serial, sequence: UInt32(Self.pageEnds(bytes).count))
        var audio = Array(clean[ends[1]...])
        audio[18] = UInt8(Self.pageEnds(bytes).count)
        audio.replaceSubrange(22..<26, with: [0, 0, 0, 0])
        let crc = OggPageWalker.checksum(audio[...])
        for k in 0..<4 { audio[22 + k] = UInt8(truncatingIfNeeded: crc >> (8 * k)) }
        return bytes + audio
    }

    @Test("A comment header claiming absurd lengths is refused, naming it, as libvorbis refuses it")
    func absurdCommentLengths() throws {
        let vendorTooLong = [0x03] + Array("vorbis".utf8) + [0xFF, 0xFF, 0xFF, 0xFF] + Array("spool".utf8) + [1]
        let countTooLarge = [0x03] + Array("vorbis".utf8) + [0, 0, 0, 0] + [0xFF, 0xFF, 0xFF, 0x7F] + [1]
        for comment in [vendorTooLong, countTooLarge] {
            let bytes = try Self.withCommentHeader(comment)
            #expect(throws: AudioError.self) { try Self.fileDecode(bytes, typeHint: "ogg") }
            for pieces in [Pieces.whole, .single] {
                #expect { try StreamFeeding.record(bytes, pieces) } throws: { error in
                    guard let error = error as? AudioError else { return false }
                    return error.code == .corruptData && error.message.contains("comment header")
                }
            }
        }
    }

    @Test("A packet that never ends is not held beyond its bound, and the stream goes on after it")
    func endlessPacket() throws {
        // Six megabytes of one packet's continuation pages, of the stream's own serial number,
        // spliced in before the last audio page: the packet is dropped, nothing grows past it.
        let clean = try StreamFeeding.bytes(Fixtures.path("opus/opus-48000-stereo.opus"))
        let ends = Self.pageEnds(clean)
        let serial = UInt32(clean[14]) | UInt32(clean[15]) << 8 | UInt32(clean[16]) << 16 | UInt32(clean[17]) << 24
        var endless: [UInt8] = []
        let body = [UInt8](repeating: 0x55, count: 255 * 255)
        for k in 0..<96 {
            endless += Self.page(body, lacing: [UInt8](repeating: 255, count: 255), serial: serial, sequence: UInt32(1000 + k),
                                 granule: -1, type: k == 0 ? 0 : 1)
        }
        let bytes = Array(clean[..<ends[4]]) + endless + Array(clean[ends[4]...])
        let recording = try StreamFeeding.record(bytes, .random(seed: 12, maximum: 100_000))
        #expect(recording.packets.allSatisfy { $0.bytes.count < 1 << 20 })
        #expect(recording.parser.duration?.basis == .frameCount)
        #expect(!recording.parser.warnings.isEmpty, "the lost pages around the spliced ones are reported")
        let samples = try StreamDecoder(parser: recording.parser).decode(recording.packets)
        #expect(!samples.isEmpty)
    }

    @Test("A multiplexed stream's pages are passed over: only the first logical stream plays")
    func multiplexed() throws {
        let file = "vorbis-44100-stereo-chained.ogg"
        let clean = try StreamFeeding.bytes(Fixtures.path(file))
        let ends = Self.pageEnds(clean)
        let video: UInt32 = 0xBEEF
        let head = Self.page([0x80] + Array("theora".utf8) + [UInt8](repeating: 7, count: 35), lacing: [42], serial: video, sequence: 0,
                             granule: 0, type: 2)
        func frame(_ k: UInt32) -> [UInt8] {
            Self.page([UInt8](repeating: UInt8(k), count: 300), lacing: [255, 45], serial: video, sequence: k, granule: Int64(k), type: 0)
        }
        // The video's first page among the audio's first pages, its other pages between audio pages.
        var bytes = Array(clean[..<ends[0]]) + head + Array(clean[ends[0]..<ends[2]]) + frame(1)
        bytes += Array(clean[ends[2]..<ends[4]]) + frame(2) + Array(clean[ends[4]...])
        let reference = try StreamFeeding.fileDecode(Fixtures.path(file))
        for pieces in Pieces.all {
            let recording = try StreamFeeding.record(bytes, pieces)
            #expect(recording.parser.warnings.isEmpty, "\(pieces)")
            let samples = try StreamDecoder(parser: recording.parser).decode(recording.packets)
            #expect(samples == reference.samples, "\(pieces)")
        }
    }

    @Test("A gap in the bytes without a seek: the parser finds the next page, and its granule position places the packets")
    func discontinuityWithoutSeek() throws {
        let file = "vorbis-44100-stereo-chained.ogg"
        let bytes = try StreamFeeding.bytes(Fixtures.path(file))
        let reference = try StreamFeeding.fileDecode(Fixtures.path(file))
        final class Box { var packets: [StreamPacket] = [] }
        let box = Box()
        let parser = StreamParser(packets: { box.packets += $0 })
        try parser.parse(bytes[..<4700])
        let decoder = try StreamDecoder(parser: parser)
        _ = try decoder.decode(box.packets)
        box.packets = []
        // The bytes go on from the middle of a page: the rest of it is no use.
        try parser.parse(bytes[5300...], discontinuity: true)
        try parser.finish()
        decoder.discontinuity()
        let first = try #require(box.packets.first?.startFrame)
        #expect(box.packets.allSatisfy { $0.startFrame != nil })
        // Offsets after a gap count on from the last byte before it (the parser cannot know
        // how many were lost): the first whole page, at 5656, is at 4700 + 356.
        #expect(box.packets.first?.byteOffset ?? 0 > 4700 + 356, "the first packet after the gap begins on the first whole page")
        let samples = try decoder.decode(box.packets)
        let expected = reference.samples[(first * 2)...]
        #expect(samples.count == expected.count)
        #expect(samples.elementsEqual(expected), "up to \(Self.maximumDifference(samples, expected)) off")
    }

    @Test("An OpusHead's output gain is applied as libopusfile applies it")
    func opusOutputGain() throws {
        var bytes = try StreamFeeding.bytes(Fixtures.path("opus/opus-48000-stereo.opus"))
        let head = 27 + Int(bytes[26])  // the OpusHead packet, alone on the first page
        #expect(bytes[head..<(head + 8)].elementsEqual("OpusHead".utf8))
        let gain = Int16(-1536)  // −6 dB in Q7.8
        bytes[head + 16] = UInt8(truncatingIfNeeded: UInt16(bitPattern: gain))
        bytes[head + 17] = UInt8(truncatingIfNeeded: UInt16(bitPattern: gain) >> 8)
        recomputeChecksums(&bytes, around: [head + 16])
        let reference = try Self.fileDecode(bytes, typeHint: "opus")
        let streamed = try StreamFeeding.decode(bytes, .random(seed: 21, maximum: 500))
        #expect(streamed.samples == reference.samples)
        let plain = try StreamFeeding.fileDecode(Fixtures.path("opus/opus-48000-stereo.opus"))
        let ratio = streamed.samples.map { abs($0) }.max().map { Double($0) } ?? 0
        let plainPeak = plain.samples.map { abs($0) }.max().map { Double($0) } ?? 1
        #expect(abs(20 * log10(ratio / plainPeak) + 6) < 0.1, "the gain is \(20 * log10(ratio / plainPeak)) dB")
    }

    @Test("Pages whose contents are damaged but whose checksums match never crash the parser or the decoders", arguments: [
        "vorbis-44100-stereo-chained.ogg", "vorbis-48000-5.1.ogg", "opus/opus-48000-stereo-chained.opus", "opus/opus-48000-5.1.opus",
    ])
    func damagedContents(_ file: String) throws {
        let clean = try StreamFeeding.bytes(Fixtures.path(file))
        var refused = 0, decoded = 0
        for seed in UInt64(1)...60 {
            var generator = SplitMix(seed: seed)
            var bytes = clean
            var changed: Set<Int> = []
            for _ in 0..<(1 + Int(generator.next() % 12)) {
                let at = Int(generator.next() % UInt64(bytes.count))
                bytes[at] = UInt8(truncatingIfNeeded: generator.next())
                changed.insert(at)
            }
            recomputeChecksums(&bytes, around: changed)
            do {
                let recording = try StreamFeeding.record(bytes, .random(seed: seed, maximum: 2000))
                let decoder = try StreamDecoder(parser: recording.parser)
                _ = try decoder.decode(recording.packets)
                decoded += 1
            } catch is AudioError {
                refused += 1
            }
        }
        print("Damaged contents of \(file): \(decoded) decoded, \(refused) refused with an AudioError")
        #expect(decoded + refused == 60)
    }

    @Test("An Ogg FLAC stream is refused as FLAC, an empty stream as empty, a bad setup header as corrupt")
    func refusals() throws {
        let flac = try StreamFeeding.bytes(Fixtures.path("ogg/flac-48000-stereo.oga"))
        #expect { try StreamFeeding.record(flac, .single) } throws: { error in
            guard let error = error as? AudioError else { return false }
            return error.code == .unsupportedFormat && error.message.contains("FLAC")
        }
        #expect { try StreamFeeding.record([], .whole) } throws: { ($0 as? AudioError)?.code == .emptyInput }
        for file in ["ogg/setup-classbook-no-dimensions.ogg", "ogg/setup-huffman-overspecified.ogg",
                     "ogg/setup-huffman-underspecified.ogg", "ogg/setup-partition-size.ogg"] {
            let bytes = try StreamFeeding.bytes(Fixtures.path(file))
            #expect(throws: AudioError.self, "\(file): the file decoder refuses it") { try StreamFeeding.fileDecode(Fixtures.path(file)) }
            #expect { try StreamFeeding.record(bytes, .random(seed: 2, maximum: 64)) } throws: { error in
                guard let error = error as? AudioError else { return false }
                return error.code == .corruptData && error.message.contains("setup header")
            }
        }
        for file in ["ogg/random-after-capture-pattern.ogg", "ogg/random-packet.ogg", "opus/ogg/speex.ogg", "opus/ogg/theora.ogg"] {
            let bytes = try StreamFeeding.bytes(Fixtures.path(file))
            #expect(throws: AudioError.self, "\(file)") { try StreamFeeding.record(bytes, .whole) }
        }
    }

    @Test("A chained link that changes format ends the stream with the file decoder's warning")
    func formatChange() throws {
        for file in ["broken/vorbis-chained-mixed.ogg", "ogg/chained-fewer-channels-raised-granule.ogg"] {
            let reference = try StreamFeeding.fileDecode(Fixtures.path(file))
            let expected = try #require(reference.warnings.first { $0.kind == .formatChanged }?.formatChange)
            for pieces in Pieces.all {
                let streamed = try StreamFeeding.decode(try StreamFeeding.bytes(Fixtures.path(file)), pieces)
                #expect(streamed.warnings.compactMap(\.formatChange) == [expected], "\(file), \(pieces)")
            }
        }
        // Opus: a link with another channel count; the file decoder stops there with .formatChanged.
        let file = "opus/opus-48000-chained-channels.opus"
        let decoder = try openDecoder(.file(path: Fixtures.path(file)))
        let streamed = try StreamFeeding.decode(try StreamFeeding.bytes(Fixtures.path(file)), .random(seed: 8, maximum: 999))
        #expect(streamed.samples.count == decoder.frameCount * 2)
        var expected = [Float](repeating: 0, count: decoder.frameCount * 2)
        let got = try expected.withUnsafeMutableBufferPointer { try decoder.read(into: $0) }
        #expect(got == decoder.frameCount)
        #expect(streamed.samples == expected)
        #expect(streamed.warnings.first?.formatChange?.toChannelCount == 1 || streamed.warnings.first?.kind == .formatChanged)
    }
}
