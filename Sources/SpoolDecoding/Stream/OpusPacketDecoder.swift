import SpoolCore
internal import COpusFile

/// Decodes the Opus packets of an `OggStreamParser` through libopus's multistream decoder,
/// as libopusfile does for the file decoder: 48 kHz float, the `OpusHead`'s output gain set
/// on the decoder (`OPUS_SET_GAIN`), channel mapping families 0, 1 and 255, and channels put
/// in Spool's order (the WAV one) for families 0 and 1.
///
/// A packet that counts fewer frames than it decodes to (a link's end, cut by its granule
/// position) keeps its first `frameCount`. A chained link's `OpusHead` (a packet of frame
/// count 0) makes the decoder anew for that link, whose pre-skip the decoder drops itself
/// (the packet table describes the first link); a link with another channel count or codec
/// ends decoding with a `.formatChanged` warning.
final class OpusPacketDecoder: StreamPacketDecoder {
    private(set) var warnings: [DecodeWarning] = []

    /// The first link's format: a link of another channel count ends decoding.
    private let format: AudioFormat
    /// libopus for the link being decoded.
    private var decoder: OpusMultistreamDecoder
    /// The first link's pre-skip, to tell trimmed frames in a warning.
    private let preSkip: Int
    /// Frames still to drop from the front: a later link's pre-skip, or the 80 ms
    /// libopusfile discards after lost pages.
    private var pendingPreSkip = 0
    /// Where the next packet starts if none was lost: a packet that starts later follows
    /// lost pages (the parser places it by its granule position).
    private var expectedStart: Int?
    /// Frames output, for a format change's warning.
    private var framesOut = 0
    /// A link that cannot be decoded was met: nothing more is.
    private var ended = false
    /// One packet's decoded frames, before they are put in Spool's channel order.
    private var scratch: [Float]

    /// 120 ms at 48 kHz, the longest an Opus packet lasts.
    private static let packetFramesMax = 5760

    /// - Throws: `.corruptData` for a magic cookie that is not a valid `OpusHead`,
    ///   `.unsupportedFormat` for a mapping family libopusfile does not decode.
    /// A decoder for the stream whose `OpusHead` is `magicCookie`.
    init(_ dataFormat: StreamDataFormat, magicCookie: [UInt8]?) throws {
        guard let magicCookie else { throw AudioError(.corruptData, "an Opus decoder needs the OpusHead packet (the magic cookie)") }
        let head = try OpusHeadInfo(packet: magicCookie)
        format = try AudioFormat(sampleRate: 48_000, channelCount: head.channels)
        decoder = try OpusMultistreamDecoder(head)
        preSkip = head.preSkip
        scratch = [Float](repeating: 0, count: Self.packetFramesMax * head.channels)
    }

    /// Decodes an audio packet, or takes a chained link's `OpusHead`.
    func decode(_ packet: StreamPacket, into output: inout [Float]) throws -> Int {
        guard !ended else { return 0 }
        if packet.bytes.starts(with: Array("OpusHead".utf8)) {
            link(packet)
            return 0
        }
        if packet.bytes.starts(with: Array("OpusTags".utf8)) { return 0 }
        if let start = packet.startFrame, let expected = expectedStart, start > expected {
            pendingPreSkip += OggStreamParser.opusHoleDiscard
        }
        expectedStart = packet.startFrame.map { $0 + packet.frameCount }
        // Packets whose TOC libopus refuses: libopusfile skips them too.
        guard opusPacketFrames(packet.bytes) > 0 else { return 0 }
        return decodeAndKeep(packet, into: &output)
    }

    /// Decodes a packet and appends the frames it keeps: after any front to drop, at most `frameCount`.
    private func decodeAndKeep(_ packet: StreamPacket, into output: inout [Float]) -> Int {
        let channels = format.channelCount
        let decoded = decoder.decode(packet.bytes, into: &scratch, frames: Self.packetFramesMax)
        guard decoded > 0 else { return 0 }
        let drop = min(pendingPreSkip, decoded)
        pendingPreSkip -= drop
        let keep = max(0, min(decoded - drop, packet.frameCount))
        guard keep > 0 else { return 0 }
        if let map = decoder.channelMap {
            output.reserveCapacity(output.count + keep * channels)
            for frame in drop..<(drop + keep) {
                for source in map { output.append(scratch[frame * channels + source]) }
            }
        } else {
            output.append(contentsOf: scratch[(drop * channels)..<((drop + keep) * channels)])
        }
        framesOut += keep
        return keep
    }

    /// Forgets the decoder's state: the next packet follows a seek.
    func reset() {
        decoder.reset()
        pendingPreSkip = 0
        expectedStart = nil
        ended = false
    }

    /// A chained link's `OpusHead`: the decoder is made anew for it, or decoding ends.
    private func link(_ packet: StreamPacket) {
        expectedStart = packet.startFrame
        let frame = max(0, (packet.startFrame ?? framesOut) - preSkip)
        do {
            let head = try OpusHeadInfo(packet: packet.bytes)
            guard head.channels == format.channelCount else {
                let change = DecodeWarning.FormatChange(frame: frame, from: format, toSampleRate: 48_000,
                                                        toChannelCount: head.channels, toCodec: "Opus")
                warnings.append(DecodeWarning(formatChange: change, byteOffset: packet.byteOffset, byteCount: 0))
                ended = true
                return
            }
            decoder = try OpusMultistreamDecoder(head)
            // The first link's pre-skip is the packet table's priming; a later link's is dropped here.
            pendingPreSkip = (packet.startFrame ?? 1) == 0 ? 0 : head.preSkip
        } catch {
            warnings.append(DecodeWarning(kind: .skippedCorruptData, byteOffset: packet.byteOffset, byteCount: 0,
                                          detail: "a link of the chained stream cannot be decoded: \(error)"))
            ended = true
        }
    }
}

/// Owns one libopus multistream decoder (`OpusMSDecoder`).
private final class OpusMultistreamDecoder {
    /// The `OpusMSDecoder`.
    private let raw: OpaquePointer
    /// Channels it decodes.
    let channels: Int
    /// The source channel for each WAV-order channel, or nil when the order is Spool's already.
    let channelMap: [Int]?

    /// Makes the decoder an `OpusHead` describes, its output gain set.
    init(_ head: OpusHeadInfo) throws {
        var error: Int32 = 0
        let made = head.mapping.withUnsafeBufferPointer { mapping -> OpaquePointer? in
            guard let table = mapping.baseAddress else { return nil }
            return opus_multistream_decoder_create(48_000, Int32(head.channels), Int32(head.streamCount),
                                                   Int32(head.coupledCount), table, &error)
        }
        guard let made, error == OPUS_OK else {
            throw AudioError(.corruptData, "libopus refuses the stream's layout (\(head.channels) channels, \(head.streamCount) streams, \(head.coupledCount) coupled): error \(error)")
        }
        raw = made
        channels = head.channels
        if head.mappingFamily <= 1, (3...8).contains(head.channels) {
            channelMap = Self.vorbisToWAVOrder[head.channels - 1]
        } else {
            channelMap = nil
        }
        _ = spool_opus_ms_set_gain(raw, Int32(head.outputGain))
    }

    deinit { opus_multistream_decoder_destroy(raw) }

    /// Decodes one packet into `buffer` (room for `frames` frames); 0 for a packet libopus refuses.
    func decode(_ packet: [UInt8], into buffer: inout [Float], frames: Int) -> Int {
        guard !packet.isEmpty else { return 0 }
        let got = packet.withUnsafeBufferPointer { bytes in
            buffer.withUnsafeMutableBufferPointer { out -> Int32 in
                guard let samples = out.baseAddress, out.count >= frames * channels else { return -1 }
                return opus_multistream_decode_float(raw, bytes.baseAddress, Int32(clamping: bytes.count), samples,
                                                     Int32(clamping: frames), 0)
            }
        }
        return got > 0 ? Int(got) : 0
    }

    /// `OPUS_RESET_STATE`.
    func reset() { _ = spool_opus_ms_reset(raw) }

    /// For each channel count, the Vorbis-order channel feeding each WAV-order channel (as `OpusDecoder`).
    private static let vorbisToWAVOrder: [[Int]] = [
        [0], [0, 1], [0, 2, 1], [0, 1, 2, 3], [0, 2, 1, 3, 4],
        [0, 2, 1, 5, 3, 4], [0, 2, 1, 6, 5, 3, 4], [0, 2, 1, 7, 5, 6, 3, 4],
    ]
}
