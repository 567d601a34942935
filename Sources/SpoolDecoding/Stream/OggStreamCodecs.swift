import SpoolCore

/// The three Vorbis header packets of one link, as the stream parser and the packet decoder
/// both read them, and the magic cookie that carries them.
///
/// The cookie is the three packets in order, each preceded by its length as a 32-bit
/// little-endian integer: `len₁ id len₂ comment len₃ setup`. (Xiph lacing, as Matroska
/// uses, would do as well; lengths in front are simpler to read and to check.)
struct VorbisStreamHeaders {
    /// The identification header, parsed.
    let identification: VorbisIdentification
    /// Whether each mode of the setup header uses the long block.
    let modeIsLong: [Bool]
    /// Identification, comment and setup packets.
    let packets: [[UInt8]]

    /// Checks the three packets against the Vorbis I specification (the setup header too,
    /// which libvorbis does not check fully).
    init(packets: [[UInt8]]) throws(VorbisHeaderError) {
        guard packets.count == 3 else { throw VorbisHeaderError("a Vorbis stream needs 3 header packets, not \(packets.count)") }
        identification = try VorbisIdentification(packet: packets[0])
        guard packets[1].starts(with: [0x03, 0x76, 0x6F, 0x72, 0x62, 0x69, 0x73]) else {
            throw VorbisHeaderError("the second header is not a comment header")
        }
        try Self.checkComments(packets[1])
        guard packets[2].starts(with: [0x05, 0x76, 0x6F, 0x72, 0x62, 0x69, 0x73]) else {
            throw VorbisHeaderError("the third header is not a setup header")
        }
        do throws(VorbisHeaderError) {
            modeIsLong = try VorbisSetupHeader(packet: packets[2], channels: identification.channels).modeIsLong
        } catch {
            throw VorbisHeaderError("the setup header is invalid: \(error)")
        }
        self.packets = packets
    }

    /// Reads the three packets back from a magic cookie.
    init(cookie: [UInt8]) throws(VorbisHeaderError) {
        var packets: [[UInt8]] = []
        var at = 0
        while packets.count < 3 {
            guard at + 4 <= cookie.count else { throw VorbisHeaderError("the magic cookie ends before its \(packets.count + 1)th packet") }
            let length = Int(cookie[at]) | Int(cookie[at + 1]) << 8 | Int(cookie[at + 2]) << 16 | Int(cookie[at + 3]) << 24
            at += 4
            guard length <= cookie.count - at else {
                throw VorbisHeaderError("the magic cookie's packet \(packets.count + 1) claims \(length) bytes, more than it holds")
            }
            packets.append(Array(cookie[at..<(at + length)]))
            at += length
        }
        try self.init(packets: packets)
    }

    /// Checks the comment header's lengths as libvorbis reads them (`_vorbis_unpack_comment`,
    /// which refuses the whole stream when one is wrong): the vendor string and each comment
    /// within the packet, then the framing bit.
    private static func checkComments(_ packet: [UInt8]) throws(VorbisHeaderError) {
        var at = 7
        func length(_ what: String) throws(VorbisHeaderError) -> Int {
            guard at + 4 <= packet.count else { throw VorbisHeaderError("the comment header ends inside \(what)") }
            defer { at += 4 }
            return Int(packet[at]) | Int(packet[at + 1]) << 8 | Int(packet[at + 2]) << 16 | Int(packet[at + 3]) << 24
        }
        let vendor = try length("the vendor string's length")
        guard vendor <= packet.count - at else {
            throw VorbisHeaderError("the comment header claims a vendor string of \(vendor) bytes, more than its \(packet.count)")
        }
        at += vendor
        let count = try length("the comment count")
        guard count <= (packet.count - at) / 4 else {
            throw VorbisHeaderError("the comment header claims \(count) comments, more than its \(packet.count) bytes hold")
        }
        for number in 0..<count {
            let size = try length("comment \(number + 1)'s length")
            guard size <= packet.count - at else {
                throw VorbisHeaderError("comment \(number + 1) claims \(size) bytes, more than the comment header holds")
            }
            at += size
        }
        guard at < packet.count, packet[at] & 1 == 1 else { throw VorbisHeaderError("the comment header's framing bit is not set") }
    }

    /// The magic cookie: each packet preceded by its 32-bit little-endian length.
    var cookie: [UInt8] {
        var bytes: [UInt8] = []
        for packet in packets {
            let length = UInt32(truncatingIfNeeded: packet.count)
            bytes += [UInt8(truncatingIfNeeded: length), UInt8(truncatingIfNeeded: length >> 8),
                      UInt8(truncatingIfNeeded: length >> 16), UInt8(truncatingIfNeeded: length >> 24)]
            bytes += packet
        }
        return bytes
    }

    /// The block size of an audio packet, from its first bits (the packet type, the mode
    /// number), or nil for a packet libvorbis refuses (not audio, a mode that is not there):
    /// what `vorbis_synthesis` reads first.
    func blockSize(of packet: [UInt8]) -> Int? {
        let modeBits = vorbisILog(modeIsLong.count - 1)
        var bits = VorbisBitReader(packet)
        guard let type = try? bits.read(1, "the packet type"), type == 0,
              let mode = try? bits.read(modeBits, "the mode"), mode < modeIsLong.count else { return nil }
        if modeIsLong[mode] {
            guard (try? bits.read(2, "the window flags")) != nil else { return nil }
            return identification.blockSizes.long
        }
        return identification.blockSizes.short
    }

    /// A comment header with no comments, for a cookie whose comment header was longer than
    /// the parser keeps (libvorbis refuses a comment header cut short).
    static let emptyCommentHeader: [UInt8] = [0x03, 0x76, 0x6F, 0x72, 0x62, 0x69, 0x73, 0, 0, 0, 0, 0, 0, 0, 0, 1]
}

/// Reads the comments of a Vorbis comment header or an `OpusTags` packet (Vorbis I §5,
/// RFC 7845 §5.2) into tags, as far as the packet holds them: each `KEY=value` merged, the
/// first value of a key kept.
/// - Parameters:
///   - packet: The packet, or as much of it as was kept.
///   - skipping: The bytes before the vendor string's length (7 for Vorbis, 8 for Opus).
///   - excludingPictures: Leaves out `METADATA_BLOCK_PICTURE` (cover art, not text), as the
///     Opus file decoder does.
func oggComments(_ packet: [UInt8], skipping: Int, excludingPictures: Bool) -> AudioTags {
    var tags = AudioTags()
    var at = skipping
    func length() -> Int? {
        guard at + 4 <= packet.count else { return nil }
        defer { at += 4 }
        return Int(packet[at]) | Int(packet[at + 1]) << 8 | Int(packet[at + 2]) << 16 | Int(packet[at + 3]) << 24
    }
    guard let vendor = length(), vendor <= packet.count - at else { return tags }
    at += vendor
    guard let count = length() else { return tags }
    var read = 0
    while read < count, let size = length(), size <= packet.count - at {
        let text = String(decoding: packet[at..<(at + size)], as: UTF8.self)
        at += size
        read += 1
        guard let equals = text.firstIndex(of: "=") else { continue }
        let key = String(text[..<equals])
        if excludingPictures, key.caseInsensitiveCompare("METADATA_BLOCK_PICTURE") == .orderedSame { continue }
        tags.merge(key, String(text[text.index(after: equals)...]))
    }
    return tags
}

/// An `OpusHead` packet (RFC 7845 §5.1): what the multistream decoder is made from.
struct OpusHeadInfo: Equatable {
    /// Output channels.
    let channels: Int
    /// Frames at 48 kHz to drop at the start.
    let preSkip: Int
    /// Output gain in Q7.8 dB.
    let outputGain: Int
    /// 0 (mono, stereo), 1 (Vorbis order, up to 8 channels) or 255 (no defined layout).
    let mappingFamily: Int
    /// Opus streams in each packet.
    let streamCount: Int
    /// How many of them are stereo.
    let coupledCount: Int
    /// The decoded channel each output channel takes (255: silence).
    let mapping: [UInt8]

    /// Parses and checks the header as libopusfile does (`opus_head_parse`).
    /// - Throws: `.unsupportedFormat` for a version or mapping family libopusfile does not
    ///   decode, `.corruptData` for a header that contradicts itself.
    init(packet: [UInt8]) throws {
        guard packet.count >= 19, packet.starts(with: Array("OpusHead".utf8)) else {
            throw AudioError(.corruptData, "the OpusHead packet is \(packet.count) bytes, fewer than the 19 it needs")
        }
        let version = Int(packet[8])
        guard version >> 4 == 0 else {
            throw AudioError(.unsupportedFormat, "the OpusHead has version \(version), which no supported specification describes")
        }
        channels = Int(packet[9])
        guard channels > 0 else { throw AudioError(.corruptData, "the OpusHead declares 0 channels") }
        preSkip = Int(packet[10]) | Int(packet[11]) << 8
        outputGain = Int(Int16(bitPattern: UInt16(packet[16]) | UInt16(packet[17]) << 8))
        mappingFamily = Int(packet[18])
        if mappingFamily == 0 {
            guard channels <= 2 else {
                throw AudioError(.corruptData, "the OpusHead declares \(channels) channels with channel mapping family 0, which allows 2")
            }
            streamCount = 1
            coupledCount = channels - 1
            mapping = channels == 1 ? [0] : [0, 1]
            return
        }
        guard mappingFamily == 1 || mappingFamily == 255 else {
            throw AudioError(.unsupportedFormat, "the stream uses channel mapping family \(mappingFamily), which libopusfile does not implement")
        }
        guard mappingFamily != 1 || channels <= 8 else {
            throw AudioError(.corruptData, "the OpusHead declares \(channels) channels with channel mapping family 1, which allows 8")
        }
        guard packet.count >= 21 + channels else {
            throw AudioError(.corruptData, "the OpusHead ends before its channel mapping table")
        }
        streamCount = Int(packet[19])
        coupledCount = Int(packet[20])
        guard streamCount > 0, coupledCount <= streamCount, streamCount + coupledCount <= 255 else {
            throw AudioError(.corruptData, "the OpusHead declares \(streamCount) streams, \(coupledCount) of them coupled")
        }
        mapping = Array(packet[21..<(21 + channels)])
        guard mapping.allSatisfy({ $0 == 255 || Int($0) < streamCount + coupledCount }) else {
            throw AudioError(.corruptData, "the OpusHead's channel mapping names a channel its streams do not have")
        }
    }
}

/// Frames at 48 kHz an Opus packet decodes to, from its TOC byte and frame count (RFC 6716
/// §3.1), or 0 for a packet libopus refuses (empty, or more than 120 ms).
func opusPacketFrames(_ packet: [UInt8]) -> Int {
    guard let toc = packet.first else { return 0 }
    let config = Int(toc >> 3)
    let frameSize: Int
    switch config {
    case 0..<12: frameSize = [480, 960, 1920, 2880][config & 3]
    case 12..<16: frameSize = [480, 960][config & 1]
    default: frameSize = [120, 240, 480, 960][config & 3]
    }
    let frames: Int
    switch toc & 3 {
    case 0: frames = 1
    case 1, 2: frames = 2
    default:
        guard packet.count >= 2 else { return 0 }
        frames = Int(packet[1] & 0x3F)
    }
    let total = frames * frameSize
    return total > 5760 ? 0 : total
}
