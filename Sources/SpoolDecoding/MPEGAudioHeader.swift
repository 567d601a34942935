import SpoolCore

/// A parsed 4-byte MPEG audio frame header (ISO 11172-3 / 13818-3, and the 2.5 extension).
/// Spool reads headers itself to find every frame of a file (and what is not a frame);
/// libmpg123 does the decoding.
struct MPEGAudioHeader: Equatable {
    enum Version { case mpeg1, mpeg2, mpeg25 }
    let version: Version
    let layer: Int
    let bitRate: Int  // bits per second
    let sampleRate: Int
    let channelCount: Int
    let frameBytes: Int
    let samplesPerFrame: Int

    init?(_ b: [UInt8], at offset: Int = 0) {
        guard offset >= 0, b.count - offset >= 4 else { return nil }
        self.init(b[offset], b[offset + 1], b[offset + 2], b[offset + 3])
    }

    /// Kilobits per second for each bit-rate index: MPEG-1 Layers I, II, III, then MPEG-2/2.5
    /// Layer I, then MPEG-2/2.5 Layers II and III.
    private static let bitRates: [[Int]] = [
        [0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448],
        [0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384],
        [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320],
        [0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256],
        [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
    ]

    /// The header made of the four bytes `b0 b1 b2 b3`: every frame of a file is read this
    /// way, so it allocates nothing.
    init?(_ b0: UInt8, _ b1: UInt8, _ b2: UInt8, _ b3: UInt8) {
        guard b0 == 0xFF, b1 & 0xE0 == 0xE0 else { return nil }
        let versionBits = (b1 >> 3) & 3
        let layerBits = (b1 >> 1) & 3
        let bitRateIndex = Int(b2 >> 4)
        let rateIndex = Int((b2 >> 2) & 3)
        let padding = Int((b2 >> 1) & 1)
        guard versionBits != 1, layerBits != 0, bitRateIndex != 0, bitRateIndex != 15, rateIndex != 3 else { return nil }
        version = versionBits == 3 ? .mpeg1 : versionBits == 2 ? .mpeg2 : .mpeg25
        layer = 4 - Int(layerBits)
        let baseRate = rateIndex == 0 ? 44100 : rateIndex == 1 ? 48000 : 32000
        sampleRate = baseRate / (version == .mpeg1 ? 1 : version == .mpeg2 ? 2 : 4)
        let table = version == .mpeg1 ? layer - 1 : layer == 1 ? 3 : 4
        bitRate = Self.bitRates[table][bitRateIndex] * 1000
        channelCount = (b3 >> 6) == 3 ? 1 : 2
        switch layer {
        case 1:
            samplesPerFrame = 384
            frameBytes = (12 * bitRate / sampleRate + padding) * 4
        case 2:
            samplesPerFrame = 1152
            frameBytes = 144 * bitRate / sampleRate + padding
        default:
            samplesPerFrame = version == .mpeg1 ? 1152 : 576
            frameBytes = (version == .mpeg1 ? 144 : 72) * bitRate / sampleRate + padding
        }
    }

    /// Whether a frame with this header belongs to a stream that began with `first`: same
    /// version, layer, rate and channel count (libmpg123 takes any other change of version,
    /// layer or rate for a new stream, and a change of channels changes the output format).
    func continues(_ first: MPEGAudioHeader) -> Bool {
        version == first.version && layer == first.layer && sampleRate == first.sampleRate
            && channelCount == first.channelCount
    }

    var codecName: String {
        let v = switch version { case .mpeg1: "MPEG-1"; case .mpeg2: "MPEG-2"; case .mpeg25: "MPEG-2.5" }
        return "\(v) Layer \(["I", "II", "III"][layer - 1])"
    }

    /// Bytes of side information after the header in a Layer III frame, where a Xing header sits.
    var sideInfoBytes: Int {
        switch (version == .mpeg1, channelCount) {
        case (true, 1): 17
        case (true, _): 32
        case (false, 1): 9
        case (false, _): 17
        }
    }
}

/// The Layer III bit reservoir, followed frame by frame in the order libmpg123 is shown them.
///
/// A Layer III frame's main data may begin in the frames before it: `main_data_begin`, the
/// first field of its side information (9 bits in MPEG-1, 8 in MPEG-2 and 2.5), counts the
/// bytes back from its own main data area. A frame that reaches further back than the main
/// data areas of the frames before it hold cannot be decoded; libmpg123 plays it as silence.
struct LayerIIIReservoir {
    /// Main-data bytes of the frames taken so far (more than any frame can reach back: capped).
    private var held: Int
    private var starving = false

    /// - Parameter full: Whether the frames before the next are unknown but to be taken as
    ///   there (the frames after a seek, decoded to prime the decoder).
    init(full: Bool = false) { held = full ? Self.cap : 0 }

    private static let cap = 1_024

    /// Takes the next frame, whose byte at each index from its start `byte` gives.
    /// - Returns: The bytes it reaches back past what the frames before hold, when it is a
    ///   Layer III frame that does and the frame before did not (a run is told once); nil otherwise.
    mutating func take(_ header: MPEGAudioHeader, byte: (Int) -> UInt8?) -> Int? {
        guard header.layer == 3, let b1 = byte(1) else { return nil }
        let sideInfo = 4 + (b1 & 1 == 0 ? 2 : 0)  // after the CRC of a protected frame
        guard let first = byte(sideInfo) else { return nil }
        var begin = Int(first)
        if header.version == .mpeg1 {
            guard let second = byte(sideInfo + 1) else { return nil }
            begin = begin << 1 | Int(second >> 7)
        }
        let missing = begin - held
        let told = missing > 0 && !starving ? missing : nil
        starving = missing > 0
        held = min(Self.cap, held + max(0, header.frameBytes - sideInfo - header.sideInfoBytes))
        return told
    }

    /// The damage a frame at `offset` that reaches `missing` bytes past the reservoir is.
    static func warning(at offset: Int, missing: Int) -> DecodeWarning {
        DecodeWarning(kind: .missingData, byteOffset: offset, byteCount: missing,
                      detail: "the MPEG frame there reaches \(missing) bytes further back than the frames before it hold "
                          + "(its bit reservoir), so it cannot be decoded and plays as silence")
    }
}

/// The header frame an encoder may put before the audio: Xing/Info (LAME writes `Info` for
/// CBR, `Xing` otherwise, then its own extension with the gapless delay and padding) or
/// Fraunhofer's VBRI. It is not audio: Spool keeps it out of libmpg123's sight.
struct MPEGInfoFrame {
    enum Kind { case xing, info, vbri }
    let kind: Kind
    /// Audio frames the header counts (the header frame itself not included).
    var frames: Int?
    /// Stream bytes the header counts.
    var bytes: Int?
    /// LAME's encoder delay and padding, in samples.
    var lame: (delay: Int, padding: Int)?
    /// Xing's table of contents: for each percent of the duration, the byte at which it
    /// starts, in 256ths of `bytes` counted from the header frame's first byte.
    var toc: [Int]?
    /// VBRI's table: the bytes of each run of `framesPerEntry` frames, from the header frame.
    var vbriTable: (framesPerEntry: Int, bytes: [Int])?

    /// The decoder's own delay that libmpg123 (like LAME's decoder) trims with any Xing
    /// header: its synthesis filter outputs the first input sample 529 samples late.
    static let decoderDelay = 529

    /// Parses the first frame, `frame` (its bytes, perhaps fewer than the header claims).
    init?(frame b: [UInt8], header: MPEGAudioHeader) {
        guard header.layer == 3 else { return nil }
        let xing = 4 + header.sideInfoBytes
        if b.matches("Xing", at: xing) || b.matches("Info", at: xing) {
            guard b.count - xing >= 8 else { return nil }
            kind = b.matches("Xing", at: xing) ? .xing : .info
            let flags = MP3Tags.bigEndian(b, xing + 4, bytes: 4)
            var cursor = xing + 8
            if flags & 1 != 0 { frames = b.count - cursor >= 4 ? MP3Tags.bigEndian(b, cursor, bytes: 4) : nil; cursor += 4 }
            if flags & 2 != 0 { bytes = b.count - cursor >= 4 ? MP3Tags.bigEndian(b, cursor, bytes: 4) : nil; cursor += 4 }
            if flags & 4 != 0 {  // seek table
                if b.count - cursor >= 100 { toc = b[cursor..<(cursor + 100)].map(Int.init) }
                cursor += 100
            }
            if flags & 8 != 0 { cursor += 4 }  // quality
            // LAME's extension (written by LAME and by ffmpeg): encoder string (9), revision
            // and method, lowpass, replay gain (8), flags, ABR rate, then the delay and the
            // padding, 12 bits each. libmpg123 takes them whenever the first byte is not zero,
            // and so does Spool. (Its CRC-16 is no test: ffmpeg's MPEG-2 tags fail it.)
            if cursor < b.count, b[cursor] != 0, b.count - cursor >= 24 {
                lame = (Int(b[cursor + 21]) << 4 | Int(b[cursor + 22]) >> 4, Int(b[cursor + 22] & 0x0F) << 8 | Int(b[cursor + 23]))
            }
        } else if b.matches("VBRI", at: 36) {
            // VBRI sits 32 bytes after the header whatever the version and channels: 'VBRI',
            // version, delay, quality (2 bytes each), then stream bytes and frames (4 each).
            guard b.count >= 36 + 18 else { return nil }
            kind = .vbri
            bytes = MP3Tags.bigEndian(b, 36 + 10, bytes: 4)
            frames = MP3Tags.bigEndian(b, 36 + 14, bytes: 4)
            // Then the table: entries, scale, bytes per entry, frames per entry (2 bytes
            // each), and the entries, each a run's bytes divided by the scale.
            let entries = MP3Tags.bigEndian(b, 36 + 18, bytes: 2), scale = MP3Tags.bigEndian(b, 36 + 20, bytes: 2)
            let entryBytes = MP3Tags.bigEndian(b, 36 + 22, bytes: 2), perEntry = MP3Tags.bigEndian(b, 36 + 24, bytes: 2)
            let table = 36 + 26
            if (1...4).contains(entryBytes), perEntry > 0, entries > 0, b.count - table >= entries * entryBytes {
                let sizes = (0..<entries).map { MP3Tags.bigEndian(b, table + $0 * entryBytes, bytes: entryBytes) * scale }
                vbriTable = (perEntry, sizes)
            }
        } else {
            return nil
        }
    }

    /// Frames decoded before the first sample of the encoder's input: LAME's delay plus the
    /// decoder's; the decoder's alone for a Xing header without LAME's; none for VBRI (its
    /// delay field is read by no decoder, libmpg123 and ffmpeg included).
    var startTrim: Int {
        kind == .vbri ? 0 : (lame?.delay ?? 0) + Self.decoderDelay
    }

    /// Frames decoded after the encoder's last input sample (LAME's padding, less the
    /// decoder's delay that shifted it), when the stream ends where the header says.
    var endTrim: Int {
        max(0, (lame?.padding ?? 0) - Self.decoderDelay)
    }
}
