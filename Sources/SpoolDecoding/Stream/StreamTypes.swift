import SpoolCore

/// The container a `StreamParser` found in the bytes (AudioFileStream's file type).
public enum StreamFileFormat: String, Sendable, Equatable, CaseIterable {
    case mp3 = "MP3"
    case oggVorbis = "Ogg Vorbis"
    case oggOpus = "Ogg Opus"
    case wave = "WAV"
    case aiff = "AIFF"
    case aifc = "AIFF-C"
    case caf = "CAF"
    case flac = "FLAC"
}

/// The encoded stream's format, as `AudioStreamBasicDescription` tells it.
public struct StreamDataFormat: Sendable, Equatable {
    /// How the samples are encoded.
    public enum Codec: Sendable, Equatable {
        /// MPEG audio layer 1, 2 or 3 (MPEG-1, 2 or 2.5).
        case mpeg(layer: Int)
        case vorbis
        case opus
        case flac
        /// Uncompressed samples; each packet is one frame.
        case pcm(PCMLayout)
        /// G.711 A-law: one byte per sample; each packet is one frame.
        case aLaw
        /// G.711 µ-law: one byte per sample; each packet is one frame.
        case muLaw
        /// IMA (DVI) ADPCM as WAV stores it: each packet is one block of `blockBytes`
        /// decoding to `framesPerBlock` frames.
        case imaADPCM(blockBytes: Int, framesPerBlock: Int)
    }

    /// How uncompressed samples lie in the bytes.
    public struct PCMLayout: Sendable, Equatable {
        /// Bits of each sample as stored (8, 16, 24, 32 or 64).
        public var bitsPerSample: Int
        /// IEEE floating point rather than integer.
        public var isFloat: Bool
        /// Most significant byte first.
        public var isBigEndian: Bool
        /// Signed integers (8-bit WAV is unsigned).
        public var isSigned: Bool

        /// Makes a layout.
        public init(bitsPerSample: Int, isFloat: Bool, isBigEndian: Bool, isSigned: Bool) {
            self.bitsPerSample = bitsPerSample
            self.isFloat = isFloat
            self.isBigEndian = isBigEndian
            self.isSigned = isSigned
        }

        /// Bytes of one sample.
        public var bytesPerSample: Int { bitsPerSample / 8 }
    }

    /// Frames per second of the decoded audio.
    public var sampleRate: Double
    /// Channels of the decoded audio.
    public var channelCount: Int
    /// The encoding.
    public var codec: Codec
    /// Frames in every packet, or 0 when packets differ (Vorbis, Opus, FLAC).
    public var framesPerPacket: Int
    /// Bytes in every packet, or 0 when packets differ (MP3 with padding, every compressed format).
    public var bytesPerPacket: Int

    /// Makes a data format.
    public init(sampleRate: Double, channelCount: Int, codec: Codec, framesPerPacket: Int, bytesPerPacket: Int) {
        self.sampleRate = sampleRate
        self.channelCount = channelCount
        self.codec = codec
        self.framesPerPacket = framesPerPacket
        self.bytesPerPacket = bytesPerPacket
    }
}

/// One packet: the smallest piece of the stream that decodes on its own (an MPEG frame, an
/// Ogg packet, a FLAC frame, a PCM frame or a block of them).
public struct StreamPacket: Sendable, Equatable {
    /// Where its first byte lies in the stream, counted from the stream's first byte.
    public var byteOffset: Int
    /// The packet's bytes.
    public var bytes: [UInt8]
    /// Frames it decodes to before gapless trimming.
    public var frameCount: Int
    /// The stream frame of its first decoded frame, before trimming, when the parser knows it
    /// (always, but after a seek to an estimated position, until a granule or frame number says).
    public var startFrame: Int?
    /// Damage the parser skipped on the way to this packet (or, on the last packet, after
    /// it: bytes that are no packet, a stream cut short), which a decoder reports as the
    /// file decoder does.
    public var damage: [DecodeWarning]

    /// Makes a packet.
    public init(byteOffset: Int, bytes: [UInt8], frameCount: Int, startFrame: Int?, damage: [DecodeWarning] = []) {
        self.byteOffset = byteOffset
        self.bytes = bytes
        self.frameCount = frameCount
        self.startFrame = startFrame
        self.damage = damage
    }
}

/// The frames an encoder added before and after the audio (`AudioFilePacketTableInfo`).
public struct StreamPacketTableInfo: Sendable, Equatable {
    /// Frames of encoder delay to drop at the start.
    public var primingFrames: Int
    /// Frames of padding to drop at the end.
    public var remainderFrames: Int
    /// Frames that remain, when the stream says (a LAME tag, a granule, STREAMINFO).
    public var validFrames: Int?

    /// Makes packet table info.
    public init(primingFrames: Int, remainderFrames: Int, validFrames: Int?) {
        self.primingFrames = primingFrames
        self.remainderFrames = remainderFrames
        self.validFrames = validFrames
    }
}

/// How long the stream plays, and how the parser knows.
public struct StreamDuration: Sendable, Equatable {
    /// Where the figure comes from.
    public enum Basis: String, Sendable, Equatable {
        /// A frame count the stream states: a Xing/LAME/VBRI frame count, FLAC's STREAMINFO,
        /// an Ogg stream's last granule position, a PCM data chunk's size, a CAF packet table.
        case frameCount = "frame count"
        /// The audio byte count at a constant bit rate (CBR MP3 without a header frame).
        case byteCountAndBitRate = "byte count and constant bit rate"
        /// An estimate: the byte count (or bytes so far) at the average bit rate of the
        /// packets seen so far, refined as packets arrive. Never exact.
        case estimate = "estimate"
    }

    /// The frames after gapless trimming, when the basis gives them.
    public var frames: Int?
    /// The duration in seconds.
    public var seconds: Double
    /// Where the figure comes from.
    public var basis: Basis

    /// Whether the figure is an estimate.
    public var isEstimated: Bool { basis == .estimate }
}

/// Where to feed from to play on from a time (`AudioFileStreamSeek`).
public struct StreamSeekPoint: Sendable, Equatable {
    /// The stream byte to read from next, fed with `discontinuity: true`.
    public var byteOffset: Int
    /// The frame the packet at `byteOffset` starts at (after trimming), or the estimate of it.
    public var frame: Int
    /// The frame asked for; a decoder drops the frames from `frame` up to it when exact.
    public var targetFrame: Int
    /// Whether `byteOffset` is an estimate (a VBR MP3's table of contents or bit rate).
    public var isEstimated: Bool
}

/// What a `StreamParser` learnt: `AudioFileStreamPropertyID`, one case per property.
///
/// The parser reports them in this order, each once it is known and again when it changes:
/// `fileFormat`, `dataFormat`, `magicCookie`, `tags`, `dataOffset`, `audioDataByteCount`,
/// `audioDataPacketCount`, `packetTableInfo`, `bitRate`, `maximumPacketSize`, `duration`,
/// then `readyToProducePackets`, before the first packet. After that, `bitRate`,
/// `maximumPacketSize` and an estimated `duration` are reported again as packets refine them,
/// and `audioDataPacketCount` and `duration` when the stream's end makes them exact.
public enum StreamProperty: String, Sendable, Equatable, CaseIterable {
    case fileFormat, dataFormat, magicCookie, tags, dataOffset, audioDataByteCount
    case audioDataPacketCount, packetTableInfo, bitRate, maximumPacketSize, duration
    case readyToProducePackets
}
