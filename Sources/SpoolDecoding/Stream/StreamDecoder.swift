import SpoolCore

/// One codec's packet decoder, driven by `StreamDecoder`.
protocol StreamPacketDecoder: AnyObject {
    /// Appends the packet's decoded frames, Float32 interleaved and untrimmed, to `output`.
    /// - Returns: The frames appended.
    func decode(_ packet: StreamPacket, into output: inout [Float]) throws -> Int
    /// Forgets everything about earlier packets: the next one follows a discontinuity.
    func reset()
    /// Damage decoding found and went past.
    var warnings: [DecodeWarning] { get }
}

/// Decodes the packets of a `StreamParser` to Float32 interleaved PCM, frame-exact.
///
/// The encoder's delay and padding (`StreamPacketTableInfo`) are trimmed, so a whole stream
/// decodes to the same frames as the file decoder gives for the same bytes. After a seek,
/// give `seek(to:)` the parser's seek point before the packets that follow it: the codec
/// forgets the packets before (no stale audio plays) and, where the point is exact, the
/// frames before its `targetFrame` are dropped.
///
/// Codecs: MPEG audio through libmpg123's feed API, Vorbis through libvorbis, Opus through
/// libopus, FLAC through libFLAC's stream decoder, PCM directly. The closest Apple call is
/// `AudioConverterFillComplexBuffer` fed by AudioFileStream's packets.
public final class StreamDecoder {
    /// The PCM this decoder produces.
    public let format: AudioFormat
    /// The frames decoded so far after trimming: the stream frame the next one plays at.
    public private(set) var position = 0

    private let codec: any StreamPacketDecoder
    private var trim: StreamPacketTableInfo
    /// Untrimmed frame index of the next frame the codec produces, when known.
    private var untrimmedFrame = 0
    /// Trimmed frame below which decoded frames are dropped (after an exact seek).
    private var dropBefore = 0

    /// Makes a decoder for packets of `dataFormat`.
    /// - Parameters:
    ///   - dataFormat: The parser's `dataFormat`.
    ///   - magicCookie: The parser's `magicCookie` (Vorbis, Opus and FLAC need it).
    ///   - packetTableInfo: The parser's `packetTableInfo`, or nil for none to trim.
    /// - Throws: `.unsupportedFormat` for a format this decoder does not decode,
    ///   `.corruptData` for a magic cookie the codec refuses.
    public convenience init(dataFormat: StreamDataFormat, magicCookie: [UInt8]?,
                            packetTableInfo: StreamPacketTableInfo? = nil) throws {
        try self.init(dataFormat: dataFormat, magicCookie: magicCookie, packetTableInfo: packetTableInfo, checkedVorbis: nil)
    }

    /// - Parameter checkedVorbis: The Vorbis headers a parser checked, used when the cookie
    ///   is theirs (the cookie is checked otherwise).
    private init(dataFormat: StreamDataFormat, magicCookie: [UInt8]?, packetTableInfo: StreamPacketTableInfo?,
                 checkedVorbis: VorbisStreamHeaders?) throws {
        format = try AudioFormat(sampleRate: dataFormat.sampleRate, channelCount: dataFormat.channelCount)
        codec = try Self.codec(for: dataFormat, magicCookie: magicCookie, checkedVorbis: checkedVorbis)
        trim = packetTableInfo ?? StreamPacketTableInfo(primingFrames: 0, remainderFrames: 0, validFrames: nil)
    }

    /// A decoder over a codec of the caller's (tests drive the trimming with one).
    init(format: AudioFormat, codec: any StreamPacketDecoder, packetTableInfo: StreamPacketTableInfo?) {
        self.format = format
        self.codec = codec
        trim = packetTableInfo ?? StreamPacketTableInfo(primingFrames: 0, remainderFrames: 0, validFrames: nil)
    }

    /// Makes a decoder for the packets of a parser that is ready to produce them.
    /// - Throws: `.invalidState` before `readyToProducePackets`, or the errors of the other initializer.
    public convenience init(parser: StreamParser) throws {
        guard parser.readyToProducePackets, let dataFormat = parser.dataFormat else {
            throw AudioError(.invalidState, "a stream decoder needs a parser that is ready to produce packets")
        }
        try self.init(dataFormat: dataFormat, magicCookie: parser.magicCookie, packetTableInfo: parser.packetTableInfo,
                      checkedVorbis: parser.checkedVorbisHeaders)
    }

    /// Damage decoding found and went past, as the file decoders report it.
    public var warnings: [DecodeWarning] { codec.warnings }

    /// Takes a newer packet table (a parser learns the padding of an Ogg stream at its end).
    public func updatePacketTableInfo(_ info: StreamPacketTableInfo?) {
        if let info { trim = info }
    }

    /// Decodes packets, appending their trimmed frames to `output`.
    /// - Returns: The frames appended.
    /// - Throws: `AudioError` when a packet cannot be decoded and cannot be skipped.
    @discardableResult
    public func decode(_ packets: [StreamPacket], into output: inout [Float]) throws -> Int {
        var appended = 0
        for packet in packets { appended += try decode(packet, into: &output) }
        return appended
    }

    /// Decodes one packet, appending its trimmed frames to `output`: a packets callback can
    /// decode each as it comes, into one reused buffer.
    /// - Returns: The frames appended.
    /// - Throws: `AudioError` when the packet cannot be decoded and cannot be skipped.
    @discardableResult
    public func decode(_ packet: StreamPacket, into output: inout [Float]) throws -> Int {
        if let start = packet.startFrame { untrimmedFrame = start }
        let before = output.count
        do {
            let frames = try codec.decode(packet, into: &output)
            return keep(frames, decodedFrom: before, in: &output)
        } catch {
            output.removeSubrange(min(before, output.count)...)
            throw error
        }
    }

    /// Decodes packets and returns their trimmed frames.
    public func decode(_ packets: [StreamPacket]) throws -> [Float] {
        var output: [Float] = []
        try decode(packets, into: &output)
        return output
    }

    /// The next packets follow a seek to `point`: the codec starts afresh there.
    public func seek(to point: StreamSeekPoint) {
        codec.reset()
        position = point.frame
        untrimmedFrame = point.frame + trim.primingFrames
        dropBefore = point.isEstimated ? point.frame : point.targetFrame
    }

    /// The next packets do not follow the last ones, and where they start is not known.
    public func discontinuity() {
        codec.reset()
        dropBefore = 0
    }

    /// Cuts the `frames` the codec appended to `output` at `start` down to those that
    /// survive the trims (decoded in place: only a trimmed packet moves samples), and
    /// advances the counters.
    private func keep(_ frames: Int, decodedFrom start: Int, in output: inout [Float]) -> Int {
        let channels = format.channelCount
        let first = untrimmedFrame - trim.primingFrames
        untrimmedFrame += frames
        var lower = max(0, -first, dropBefore - first)
        var upper = frames
        if let valid = trim.validFrames { upper = min(upper, max(0, valid - first)) }
        lower = min(lower, upper)
        guard upper > lower else {
            output.removeSubrange(start...)
            return 0
        }
        if start + upper * channels < output.count { output.removeSubrange((start + upper * channels)...) }
        if lower > 0 { output.removeSubrange(start..<(start + lower * channels)) }
        position = first + upper
        return upper - lower
    }

    private static func codec(for dataFormat: StreamDataFormat, magicCookie: [UInt8]?,
                              checkedVorbis: VorbisStreamHeaders?) throws -> any StreamPacketDecoder {
        switch dataFormat.codec {
        case .mpeg: try MPEGPacketDecoder(dataFormat)
        case .vorbis: try VorbisPacketDecoder(dataFormat, magicCookie: magicCookie, checked: checkedVorbis)
        case .opus: try OpusPacketDecoder(dataFormat, magicCookie: magicCookie)
        case .flac: try FLACPacketDecoder(dataFormat, magicCookie: magicCookie)
        case .pcm, .aLaw, .muLaw, .imaADPCM: try PCMPacketDecoder(dataFormat)
        }
    }
}
