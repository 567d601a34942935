import SpoolCore

/// Decides the container from the first bytes of a stream, skipping the ID3v2 tags an MP3
/// (or, rarely, a FLAC) stream may begin with, and makes that container's parser.
struct StreamSniffer {
    /// Bytes looked through for a first MPEG frame or Ogg page when the stream does not
    /// begin with one; past them, the stream is not one Spool parses.
    static let searchLimit = 64 << 10
    /// At most this many tags in front.
    private static let tagLimit = 64

    /// The container the caller expects, used only where the bytes could be either.
    let hint: StreamFileFormat?
    /// Text of the ID3v2 tags skipped so far.
    private(set) var leadingTags = AudioTags()
    private var tagsSkipped = 0

    init(hint: String?) { self.hint = hint.flatMap(Self.format(hint:)) }

    /// The parser for the container `input` begins with, or nil until enough bytes are held.
    /// - Throws: `.emptyInput` for a stream that ended with no byte, `.unsupportedFormat`
    ///   for bytes that are no container Spool parses (naming an Ogg codec it does not).
    mutating func parser(for input: inout StreamInput) throws -> (any StreamFormatParser)? {
        while tagsSkipped < Self.tagLimit, let head = input.peek(10).map(Array.init), let size = ID3v2Tag.size(header: head) {
            let text = min(size, MP3Tags.textBytesLimit)
            guard let tag = input.peek(text) else {
                if input.isFinished { break }
                return nil
            }
            ID3v2Tag.read(Array(tag), into: &leadingTags)
            input.skip(size)
            tagsSkipped += 1
        }
        if input.count < 12 && !input.isFinished { return nil }
        let start = Array(input.peek(min(input.count, 12)) ?? [])
        if start.isEmpty { throw AudioError(.emptyInput, "the stream ended before its first byte") }
        let headers = [("RIFF", 12), ("RF64", 12), ("BW64", 12), ("FORM", 12), ("caff", 4), ("fLaC", 4)]
        if headers.contains(where: { start.count < $0.1 && start.starts(with: $0.0.utf8.prefix(start.count)) }) {
            // A chunk container's or FLAC's header cut short (the file decoder calls it truncated too).
            throw AudioError(.truncated, "the stream ended after \(start.count) bytes, inside its container's header")
        }
        switch true {
        case start.matches("RIFF") || start.matches("RF64") || start.matches("BW64"):
            guard start.count >= 12, start[8..<12].elementsEqual("WAVE".utf8) else { break }
            return try Self.make(.wave, tags: leadingTags)
        case start.matches("FORM"):
            guard start.count >= 12 else { break }
            if start[8..<12].elementsEqual("AIFF".utf8) { return try Self.make(.aiff, tags: leadingTags) }
            if start[8..<12].elementsEqual("AIFC".utf8) { return try Self.make(.aifc, tags: leadingTags) }
        case start.matches("caff"): return try Self.make(.caf, tags: leadingTags)
        case start.matches("fLaC"): return try Self.make(.flac, tags: leadingTags)
        case start.matches("OggS"): return try oggParser(input)
        default: break
        }
        return try search(&input)
    }

    /// An Ogg stream's parser, once its first page's first packet names the codec.
    private func oggParser(_ input: StreamInput) throws -> (any StreamFormatParser)? {
        guard let header = input.peek(27) else { return try ended(input) }
        let segments = Int(header[header.startIndex + 26])
        guard let table = input.peek(segments, from: 27) else { return try ended(input) }
        let first = table.prefix { $0 == 255 }.count
        let packetBytes = min(8, first * 255 + (first < segments ? Int(table[table.startIndex + first]) : 0))
        guard let packet = input.peek(packetBytes, from: 27 + segments) else { return try ended(input) }
        switch OggPayload(firstPacket: packet) {
        case .vorbis: return try Self.make(.oggVorbis, tags: leadingTags)
        case .opus: return try Self.make(.oggOpus, tags: leadingTags)
        case let other: throw AudioError(.unsupportedFormat, "the Ogg stream carries \(other), not Vorbis or Opus")
        }
    }

    /// A stream that does not begin with a container's signature: MP3 when a run of MPEG
    /// frames (or an Ogg page) starts within `searchLimit` bytes.
    private func search(_ input: inout StreamInput) throws -> (any StreamFormatParser)? {
        let held = Array(input.peek(min(input.count, Self.searchLimit + 8)) ?? [])
        var i = 0
        while i < min(held.count, Self.searchLimit) {
            if held[i] == 0xFF, i + 4 <= held.count, let header = MPEGAudioHeader(held, at: i), header.frameBytes > 0 {
                let next = i + header.frameBytes
                if next + 4 <= held.count {
                    if MPEGAudioHeader(held, at: next)?.continues(header) == true { return try Self.make(.mp3, tags: leadingTags) }
                } else if input.isFinished, i == 0 || hint == .mp3 {
                    return try Self.make(.mp3, tags: leadingTags)  // one frame, all there is
                } else if !input.isFinished {
                    return nil
                }
            }
            if held[i] == 0x4F, held[i...].starts(with: "OggS".utf8), hint != .mp3 {
                // Bytes before the first page are passed over, as libvorbisfile and
                // libopusfile pass over them in a file.
                input.consume(i)
                return try oggParser(input)
            }
            i += 1
        }
        if held.count < Self.searchLimit && !input.isFinished { return nil }
        let what = held.prefix(8).map { hex($0) }.joined(separator: " ")
        throw AudioError(.unsupportedFormat, "the stream is no MP3, Ogg Vorbis, Ogg Opus, WAV, AIFF, CAF or FLAC (it begins \(what))")
    }

    private func ended(_ input: StreamInput) throws -> (any StreamFormatParser)? {
        guard input.isFinished else { return nil }
        throw AudioError(.truncated, "the stream ends inside its first Ogg page")
    }

    /// The container a file extension or MIME type names.
    static func format(hint: String) -> StreamFileFormat? {
        let lowered = hint.lowercased()
        let name = lowered.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? lowered
        switch name.split(separator: ".").last.map(String.init) ?? name {
        case "mp3", "mp2", "mp1", "mpga", "audio/mpeg", "audio/mp3", "audio/mpa": return .mp3
        case "ogg", "oga", "audio/ogg", "audio/vorbis", "application/ogg": return .oggVorbis
        case "opus", "audio/opus": return .oggOpus
        case "wav", "wave", "audio/wav", "audio/wave", "audio/x-wav", "audio/vnd.wave": return .wave
        case "aif", "aiff", "audio/aiff", "audio/x-aiff": return .aiff
        case "aifc": return .aifc
        case "caf", "audio/x-caf": return .caf
        case "flac", "audio/flac", "audio/x-flac": return .flac
        default: return nil
        }
    }

    /// The parser of one container.
    static func make(_ format: StreamFileFormat, tags: AudioTags) throws -> any StreamFormatParser {
        switch format {
        case .mp3: try MP3StreamParser(leadingTags: tags)
        case .oggVorbis, .oggOpus: try OggStreamParser(format: format)
        case .wave, .aiff, .aifc, .caf: try ChunkStreamParser(format: format)
        case .flac: try FLACStreamParser(leadingTags: tags)
        }
    }
}
