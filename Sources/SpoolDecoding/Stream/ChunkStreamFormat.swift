import Foundation
import SpoolCore

/// What a WAV `fmt `, AIFF `COMM` or CAF `desc` chunk says about the audio: its data format
/// and how the data chunk's bytes fall into units (a PCM frame, an IMA ADPCM block).
struct ChunkStreamFormat: Equatable {
    /// The stream's data format, as `StreamParser.dataFormat` reports it.
    var dataFormat: StreamDataFormat
    /// Bytes of one unit: a frame for PCM, A-law and µ-law; a block for IMA ADPCM.
    var unitBytes: Int
    /// Frames one unit decodes to.
    var framesPerUnit: Int

    /// Most channels a chunk may declare: more is taken for a damaged header.
    static let channelLimit = 64

    /// The frames `bytes` of audio data hold, as libsndfile counts them: whole frames of
    /// PCM, and for IMA ADPCM every block begun (a short last block decodes to a whole one).
    func frames(inBytes bytes: Int) -> Int {
        if case .imaADPCM = dataFormat.codec {
            let blocks = bytes / unitBytes + (bytes % unitBytes > 0 ? 1 : 0)
            return blocks.multipliedReportingOverflow(by: framesPerUnit).overflow ? Int.max : blocks * framesPerUnit
        }
        return bytes / unitBytes
    }

    /// Packets (in Apple's terms: PCM frames, ADPCM blocks) that `bytes` hold.
    func packets(inBytes bytes: Int) -> Int {
        if case .imaADPCM = dataFormat.codec { return bytes / unitBytes + (bytes % unitBytes > 0 ? 1 : 0) }
        return bytes / unitBytes
    }

    /// Bits per second of the stored data.
    var bitRate: Int {
        let perSecond = Double(unitBytes) * 8 * dataFormat.sampleRate / Double(framesPerUnit)
        return perSecond < Double(Int.max / 2) ? Int(perSecond.rounded()) : Int.max / 2
    }

    /// Makes a PCM or companded format after checking the channel count and rate.
    private static func make(_ what: String, rate: Double, channels: Int, codec: StreamDataFormat.Codec,
                             unitBytes: Int, framesPerUnit: Int) throws -> ChunkStreamFormat {
        guard (1...channelLimit).contains(channels) else {
            throw AudioError(.corruptData, "the \(what) chunk gives \(channels) channels")
        }
        guard rate.isFinite, rate >= 1, rate <= 10_000_000 else {
            throw AudioError(.corruptData, "the \(what) chunk gives a sample rate of \(rate) Hz")
        }
        guard unitBytes > 0, framesPerUnit > 0 else {
            throw AudioError(.corruptData, "the \(what) chunk gives blocks of \(unitBytes) bytes and \(framesPerUnit) frames")
        }
        let dataFormat = StreamDataFormat(sampleRate: rate, channelCount: channels, codec: codec,
                                          framesPerPacket: framesPerUnit, bytesPerPacket: unitBytes)
        return ChunkStreamFormat(dataFormat: dataFormat, unitBytes: unitBytes, framesPerUnit: framesPerUnit)
    }

    private static func pcm(_ what: String, rate: Double, channels: Int, bits: Int, float: Bool, bigEndian: Bool,
                            signed: Bool) throws -> ChunkStreamFormat {
        let allowed = float ? [32, 64] : [8, 16, 24, 32]
        guard allowed.contains(bits) else {
            throw AudioError(.unsupportedFormat, "the \(what) chunk gives \(bits)-bit \(float ? "float" : "integer") samples, which Spool does not decode")
        }
        let layout = StreamDataFormat.PCMLayout(bitsPerSample: bits, isFloat: float, isBigEndian: bigEndian, isSigned: signed)
        return try make(what, rate: rate, channels: channels, codec: .pcm(layout), unitBytes: channels * bits / 8, framesPerUnit: 1)
    }

    // MARK: - WAV

    /// Reads a WAV `fmt ` chunk's body: PCM (tag 1, 8-bit unsigned), IEEE float (3), A-law
    /// (6), µ-law (7), IMA ADPCM (0x11) and WAVE_FORMAT_EXTENSIBLE over any of the first four.
    static func wave(_ body: ArraySlice<UInt8>) throws -> ChunkStreamFormat {
        let b = Array(body)
        guard b.count >= 16 else { throw AudioError(.corruptData, "the WAV 'fmt ' chunk has \(b.count) bytes, fewer than 16") }
        var tag = b.le16(0)
        let channels = b.le16(2), rate = Double(b.le32(4)), blockAlign = b.le16(12), bits = b.le16(14)
        if tag == 0xFFFE {
            guard b.count >= 40 else { throw AudioError(.corruptData, "the WAV 'fmt ' chunk is WAVE_FORMAT_EXTENSIBLE but has only \(b.count) bytes") }
            tag = b.le16(24)
        }
        switch tag {
        case 0x0001: return try pcm("WAV 'fmt '", rate: rate, channels: channels, bits: bits, float: false, bigEndian: false, signed: bits > 8)
        case 0x0003: return try pcm("WAV 'fmt '", rate: rate, channels: channels, bits: bits, float: true, bigEndian: false, signed: true)
        case 0x0006: return try make("WAV 'fmt '", rate: rate, channels: channels, codec: .aLaw, unitBytes: channels, framesPerUnit: 1)
        case 0x0007: return try make("WAV 'fmt '", rate: rate, channels: channels, codec: .muLaw, unitBytes: channels, framesPerUnit: 1)
        case 0x0011:
            guard (1...2).contains(channels) else {
                throw AudioError(.unsupportedFormat, "the WAV file's IMA ADPCM has \(channels) channels; Spool decodes 1 or 2")
            }
            let framesPerBlock = b.count >= 20 ? b.le16(18) : 0
            // Each channel's block starts with a 4-byte header (its first sample), then 4-bit codes.
            let expected = blockAlign > 4 * channels ? 2 * (blockAlign - 4 * channels) / channels + 1 : 0
            guard expected > 1, framesPerBlock == expected, (blockAlign - 4 * channels) % (4 * channels) == 0 else {
                throw AudioError(.corruptData, "the WAV file's IMA ADPCM blocks of \(blockAlign) bytes cannot hold \(framesPerBlock) frames")
            }
            return try make("WAV 'fmt '", rate: rate, channels: channels,
                            codec: .imaADPCM(blockBytes: blockAlign, framesPerBlock: framesPerBlock),
                            unitBytes: blockAlign, framesPerUnit: framesPerBlock)
        case 0x0050, 0x0055:
            throw AudioError(.unsupportedFormat, "the WAV stream holds MPEG audio (format tag 0x\(String(tag, radix: 16))), which the stream parser does not unwrap")
        default:
            throw AudioError(.unsupportedFormat, "the WAV stream's format tag 0x\(String(tag, radix: 16)) is not one Spool decodes")
        }
    }

    // MARK: - AIFF

    /// Reads an AIFF or AIFF-C `COMM` chunk's body: big-endian integers, and for AIFF-C
    /// `NONE`/`twos`, `sowt` (little-endian), `raw ` (unsigned 8-bit), `in24`/`in32`,
    /// `fl32`/`FL32`, `fl64`/`FL64`, `ulaw`/`ULAW` and `alaw`/`ALAW`.
    static func aiff(_ body: ArraySlice<UInt8>, isAIFC: Bool) throws -> ChunkStreamFormat {
        let b = Array(body)
        let what = isAIFC ? "AIFF-C 'COMM'" : "AIFF 'COMM'"
        guard b.count >= (isAIFC ? 22 : 18) else { throw AudioError(.corruptData, "the \(what) chunk has only \(b.count) bytes") }
        let channels = b.be16(0), bits = b.be16(6), rate = extended(b[8..<18])
        let compression = isAIFC ? String(decoding: b[18..<22], as: UTF8.self) : "NONE"
        let bytes = (bits + 7) / 8 * 8
        switch compression {
        case "NONE", "twos": return try pcm(what, rate: rate, channels: channels, bits: bytes, float: false, bigEndian: true, signed: true)
        case "sowt": return try pcm(what, rate: rate, channels: channels, bits: bytes, float: false, bigEndian: false, signed: true)
        case "raw ": return try pcm(what, rate: rate, channels: channels, bits: 8, float: false, bigEndian: true, signed: false)
        case "in24": return try pcm(what, rate: rate, channels: channels, bits: 24, float: false, bigEndian: true, signed: true)
        case "in32": return try pcm(what, rate: rate, channels: channels, bits: 32, float: false, bigEndian: true, signed: true)
        case "fl32", "FL32": return try pcm(what, rate: rate, channels: channels, bits: 32, float: true, bigEndian: true, signed: true)
        case "fl64", "FL64": return try pcm(what, rate: rate, channels: channels, bits: 64, float: true, bigEndian: true, signed: true)
        case "ulaw", "ULAW": return try make(what, rate: rate, channels: channels, codec: .muLaw, unitBytes: channels, framesPerUnit: 1)
        case "alaw", "ALAW": return try make(what, rate: rate, channels: channels, codec: .aLaw, unitBytes: channels, framesPerUnit: 1)
        default:
            throw AudioError(.unsupportedFormat, "the AIFF-C compression type '\(compression)' is not one Spool decodes")
        }
    }

    /// An 80-bit IEEE 754 extended float (AIFF's sample rate) as a Double; 0 for nonsense.
    static func extended(_ bytes: ArraySlice<UInt8>) -> Double {
        let b = Array(bytes)
        guard b.count == 10 else { return 0 }
        let exponent = (Int(b[0] & 0x7F) << 8) | Int(b[1])
        let mantissa = b[2..<10].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        guard exponent != 0x7FFF else { return .nan }
        let value = Double(mantissa) * pow(2, Double(exponent - 16383 - 63))
        return b[0] & 0x80 != 0 ? -value : value
    }

    // MARK: - CAF

    /// Reads a CAF `desc` chunk: `lpcm` (flag 1 float, flag 2 little-endian), `ulaw`, `alaw`.
    static func caf(_ body: ArraySlice<UInt8>) throws -> ChunkStreamFormat {
        let b = Array(body)
        guard b.count >= 32 else { throw AudioError(.corruptData, "the CAF 'desc' chunk has \(b.count) bytes, fewer than 32") }
        let rate = Double(bitPattern: b[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
        let formatID = String(decoding: b[8..<12], as: UTF8.self)
        let flags = b.be32(12), channels = b.be32(24), bits = b.be32(28)
        switch formatID {
        case "lpcm":
            return try pcm("CAF 'desc'", rate: rate, channels: channels, bits: bits, float: flags & 1 != 0,
                           bigEndian: flags & 2 == 0, signed: true)
        case "ulaw": return try make("CAF 'desc'", rate: rate, channels: channels, codec: .muLaw, unitBytes: channels, framesPerUnit: 1)
        case "alaw": return try make("CAF 'desc'", rate: rate, channels: channels, codec: .aLaw, unitBytes: channels, framesPerUnit: 1)
        default:
            throw AudioError(.unsupportedFormat, "the CAF stream's format '\(formatID)' is not one Spool decodes")
        }
    }

    // MARK: - Tags

    /// The text of a WAV `LIST` chunk of type `INFO`, under the names libsndfile gives them.
    static func infoTags(_ body: ArraySlice<UInt8>, into tags: inout AudioTags) {
        let b = Array(body)
        guard b.count >= 4, b[0..<4].elementsEqual("INFO".utf8) else { return }
        let names = ["INAM": "title", "IART": "artist", "IPRD": "album", "ICRD": "date", "IGNR": "genre",
                     "ITRK": "tracknumber", "IPRT": "tracknumber", "ICMT": "comment", "ICOP": "copyright"]
        var at = 4
        while at + 8 <= b.count {
            let id = String(decoding: b[at..<(at + 4)], as: UTF8.self), size = b.le32(at + 4)
            let end = min(b.count, at + 8 + size)
            if let key = names[id] { tags.merge(key, text(b[(at + 8)..<end])) }
            at = at + 8 + size + (size & 1)
        }
    }

    /// The key of an AIFF text chunk (`NAME`, `AUTH`, `(c) `, `ANNO`), or nil.
    static func aiffTagKey(_ id: String) -> String? {
        ["NAME": "title", "AUTH": "artist", "(c) ": "copyright", "ANNO": "comment"][id]
    }

    /// The text of a CAF `info` chunk: a count, then pairs of NUL-terminated key and value.
    static func cafInfoTags(_ body: ArraySlice<UInt8>, into tags: inout AudioTags) {
        let b = Array(body)
        guard b.count >= 4 else { return }
        let names = ["title": "title", "artist": "artist", "album": "album", "year": "date", "recorded date": "date",
                     "genre": "genre", "track number": "tracknumber", "comments": "comment", "copyright": "copyright"]
        let strings = b[4...].split(separator: 0, omittingEmptySubsequences: false).map { text($0) }
        var i = 0
        while i + 1 < strings.count {
            if let key = names[strings[i].lowercased()] { tags.merge(key, strings[i + 1]) }
            i += 2
        }
    }

    /// Text up to its first NUL, as UTF-8 (Latin-1 where it is not valid UTF-8).
    static func text(_ bytes: ArraySlice<UInt8>) -> String {
        let cut = bytes.prefix { $0 != 0 }
        if let utf8 = String(validating: cut, as: UTF8.self) { return utf8 }
        return String(cut.map { Character(Unicode.Scalar($0)) })
    }
}

extension [UInt8] {
    /// The little-endian 16-bit value at `at`.
    fileprivate func le16(_ at: Int) -> Int { Int(self[at]) | Int(self[at + 1]) << 8 }
    /// The little-endian 32-bit value at `at`.
    fileprivate func le32(_ at: Int) -> Int { le16(at) | le16(at + 2) << 16 }
    /// The big-endian 16-bit value at `at`, signed.
    fileprivate func be16(_ at: Int) -> Int { Int(Int16(bitPattern: UInt16(self[at]) << 8 | UInt16(self[at + 1]))) }
    /// The big-endian 32-bit value at `at`.
    fileprivate func be32(_ at: Int) -> Int { (0..<4).reduce(0) { $0 << 8 | Int(self[at + $1]) } }
}
