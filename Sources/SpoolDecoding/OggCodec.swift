/// The codec of an Ogg logical stream, told by the first packet of its first page (each
/// codec's Ogg mapping begins with a signature there).
enum OggCodec: Equatable, CustomStringConvertible {
    case vorbis, opus, flac, speex, theora, skeleton, kate, pcm, celt, dirac, vp8, cmml
    case unknown

    init(firstPacket packet: some Collection<UInt8>) {
        let head = Array(packet.prefix(8))
        func starts(_ signature: [UInt8]) -> Bool { head.starts(with: signature) }
        let ascii = { (text: String) in Array(text.utf8) }
        if starts([0x01] + ascii("vorbis")) { self = .vorbis }
        else if starts(ascii("OpusHead")) { self = .opus }
        else if starts([0x7F] + ascii("FLAC")) || starts(ascii("fLaC")) { self = .flac }
        else if starts(ascii("Speex   ")) { self = .speex }
        else if starts([0x80] + ascii("theora")) { self = .theora }
        else if starts(ascii("fishead")) || starts(ascii("fisbone")) { self = .skeleton }
        else if starts([0x80] + ascii("kate")) { self = .kate }
        else if starts(ascii("PCM     ")) { self = .pcm }
        else if starts(ascii("CELT    ")) { self = .celt }
        else if starts(ascii("BBCD")) { self = .dirac }
        else if starts(ascii("OVP80")) { self = .vp8 }
        else if starts(ascii("CMML")) { self = .cmml }
        else { self = .unknown }
    }

    var description: String {
        switch self {
        case .vorbis: "Vorbis"
        case .opus: "Opus"
        case .flac: "FLAC"
        case .speex: "Speex"
        case .theora: "Theora video"
        case .skeleton: "Ogg Skeleton metadata"
        case .kate: "Kate text"
        case .pcm: "PCM"
        case .celt: "CELT"
        case .dirac: "Dirac video"
        case .vp8: "VP8 video"
        case .cmml: "CMML text"
        case .unknown: "an unknown codec"
        }
    }
}
