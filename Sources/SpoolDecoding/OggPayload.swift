/// What an Ogg stream carries, told by its first pages.
///
/// Ogg is only a container (RFC 3533): every logical stream opens with a beginning-of-stream
/// page whose first packet is its codec's identification header, and those pages come first
/// in the file (one per multiplexed stream). Reading them names the codec without decoding
/// anything: `\x01vorbis`, `OpusHead`, `\x7fFLAC`, `Speex   `, `\x80theora`, …
enum OggPayload: Equatable, Sendable, CustomStringConvertible {
    case vorbis, opus, flac, speex, theora, skeleton, celt, pcm, kate, dirac, vp8, daala
    /// A codec this table does not know; the first bytes of its identification packet.
    case unknown([UInt8])

    /// The identification headers that name each known codec (the specifications' magic).
    private static let signatures: [(prefix: [UInt8], payload: OggPayload)] = [
        (Array("\u{01}vorbis".utf8), .vorbis),
        (Array("OpusHead".utf8), .opus),
        (Array("\u{7F}FLAC".utf8), .flac),
        (Array("Speex   ".utf8), .speex),
        ([0x80] + Array("theora".utf8), .theora),
        (Array("fishead\u{0}".utf8), .skeleton),
        (Array("CELT    ".utf8), .celt),
        (Array("PCM     ".utf8), .pcm),
        ([0x80] + Array("kate\u{0}\u{0}\u{0}".utf8), .kate),
        (Array("BBCD\u{0}".utf8), .dirac),
        (Array("OVP80".utf8), .vp8),
        ([0x80] + Array("daala".utf8), .daala),
    ]

    var description: String {
        switch self {
        case .vorbis: "Vorbis"
        case .opus: "Opus"
        case .flac: "FLAC"
        case .speex: "Speex"
        case .theora: "Theora video"
        case .skeleton: "an Ogg Skeleton index"
        case .celt: "CELT"
        case .pcm: "OggPCM"
        case .kate: "Kate text"
        case .dirac: "Dirac video"
        case .vp8: "VP8 video"
        case .daala: "Daala video"
        case .unknown(let bytes):
            "an unknown codec (its first packet begins \(bytes.map { hex($0) }.joined(separator: " ")))"
        }
    }

    /// Whether this is a codec the table knows.
    var isKnown: Bool {
        if case .unknown = self { return false }
        return true
    }

    /// The codec whose identification header `packet` (a stream's first packet) is.
    init(firstPacket packet: some Collection<UInt8>) {
        let head = Array(packet.prefix(8))
        self = Self.signatures.first { head.starts(with: $0.prefix) }?.payload ?? .unknown(head)
    }

    /// Whether `prefix` begins with an Ogg page (its capture pattern and stream structure
    /// version 0), whatever it carries.
    static func isOgg(_ prefix: [UInt8]) -> Bool {
        prefix.count >= 27 && prefix.matches("OggS") && prefix[4] == 0
    }

    /// The codecs of the logical streams whose beginning-of-stream pages open `prefix`, in
    /// the order they come; empty when `prefix` does not begin with one (not Ogg at all, or
    /// a stream picked up part-way, whose codec headers are gone).
    static func streams(in prefix: [UInt8]) -> [OggPayload] {
        var payloads: [OggPayload] = []
        var offset = 0
        // A BOS page carries exactly one packet, the identification header (RFC 3533 §4), so
        // the first packet starts right after the lacing table. Each page header's own sizes
        // bound the walk: it moves forward by at least 27 bytes a page and stops at the first
        // page that is cut off or not a BOS page.
        while offset + 27 <= prefix.count, prefix.matches("OggS", at: offset), prefix[offset + 4] == 0,
              prefix[offset + 5] & 0x02 != 0 {
            let segments = Int(prefix[offset + 26])
            let body = offset + 27 + segments
            guard body <= prefix.count else { break }
            var packetLength = 0
            for lacing in prefix[(offset + 27)..<body] {
                packetLength += Int(lacing)
                if lacing < 255 { break }
            }
            payloads.append(OggPayload(firstPacket: prefix[body..<min(prefix.count, body + min(packetLength, 8))]))
            offset = body + prefix[(offset + 27)..<body].reduce(0) { $0 + Int($1) }
        }
        return payloads
    }

    /// Names what `prefix` holds for a message: "an Ogg stream carrying FLAC", "an Ogg stream
    /// carrying Theora video and Vorbis", or "an Ogg stream without its beginning".
    static func describe(_ prefix: [UInt8]) -> String {
        let payloads = streams(in: prefix)
        guard !payloads.isEmpty else {
            return "an Ogg stream that does not begin with a stream header (cut from the middle of a stream?)"
        }
        let names = payloads.map(\.description)
        let list = names.count == 1 ? names[0] : names.dropLast().joined(separator: ", ") + " and " + names[names.count - 1]
        return "an Ogg stream carrying \(list)"
    }
}

func hex(_ byte: UInt8) -> String {
    let digits = Array("0123456789abcdef")
    return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
}
