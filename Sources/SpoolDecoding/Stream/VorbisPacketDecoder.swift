import SpoolCore
internal import CVorbisFile

/// Decodes the Vorbis packets of an `OggStreamParser` through libvorbis's synthesis calls,
/// as libvorbisfile drives them for the file decoder: the same samples, in Spool's channel
/// order (the WAV one, as `VorbisDecoder` gives them).
///
/// Packets go to libvorbis without granule positions, so libvorbis trims nothing; a packet
/// that counts fewer frames than it decodes to (the end of a link, cut by its granule
/// position) keeps its first `frameCount`. A chained link's header packets (frame count 0)
/// start the decoder afresh with that link's headers; a link of another format or with bad
/// headers ends decoding with the warning `VorbisDecoder` gives.
final class VorbisPacketDecoder: StreamPacketDecoder {
    private(set) var warnings: [DecodeWarning] = []

    /// The first link's format: a link of another ends decoding.
    private let format: AudioFormat
    /// libvorbis for the link being decoded.
    private var synthesis: VorbisSynthesis
    /// A chained link's header packets as they come.
    private var linkHeaders: [[UInt8]] = []
    /// Frames output, for a format change's warning.
    private var framesOut = 0
    /// A link that cannot be decoded was met: nothing more is.
    private var ended = false

    /// A decoder for the stream whose three headers `magicCookie` holds.
    /// - Parameter checked: Headers a parser already checked: taken as they are when the
    ///   cookie is theirs, and the cookie is checked otherwise.
    /// - Throws: `.corruptData` for a magic cookie that is not three valid Vorbis headers.
    init(_ dataFormat: StreamDataFormat, magicCookie: [UInt8]?, checked: VorbisStreamHeaders? = nil) throws {
        guard let magicCookie else { throw AudioError(.corruptData, "a Vorbis decoder needs the three header packets (the magic cookie)") }
        let headers: VorbisStreamHeaders
        if let checked, checked.cookie == magicCookie {
            headers = checked
        } else {
            do {
                headers = try VorbisStreamHeaders(cookie: magicCookie)
            } catch {
                throw AudioError(.corruptData, "the Vorbis magic cookie cannot be decoded: \(error)")
            }
        }
        format = try AudioFormat(sampleRate: Double(headers.identification.sampleRate), channelCount: headers.identification.channels)
        synthesis = try VorbisSynthesis(headers)
    }

    /// Decodes an audio packet, or takes a chained link's header packet.
    func decode(_ packet: StreamPacket, into output: inout [Float]) throws -> Int {
        guard !ended else { return 0 }
        if let first = packet.bytes.first, first & 1 == 1 {
            try header(packet)
            return 0
        }
        if !linkHeaders.isEmpty { return 0 }  // a link's headers did not all come
        let frames = synthesis.decode(packet.bytes, keeping: packet.frameCount, into: &output)
        framesOut += frames
        return frames
    }

    /// Forgets the blocks before: the next packet follows a discontinuity.
    func reset() {
        synthesis.restart()
        linkHeaders = []
        ended = false
    }

    /// A header packet of a chained link: collected, and the decoder made anew at the third.
    private func header(_ packet: StreamPacket) throws {
        let payload = OggPayload(firstPacket: packet.bytes)
        let frame = packet.startFrame ?? framesOut
        if packet.bytes.first == 0x01, payload == .vorbis {
            linkHeaders = [packet.bytes]
            if let id = try? VorbisIdentification(packet: packet.bytes),
               Double(id.sampleRate) != format.sampleRate || id.channels != format.channelCount {
                let change = DecodeWarning.FormatChange(frame: frame, from: format, toSampleRate: Double(id.sampleRate),
                                                        toChannelCount: id.channels, toCodec: "Vorbis")
                warnings.append(DecodeWarning(formatChange: change, byteOffset: packet.byteOffset, byteCount: 0))
                ended = true
            }
            return
        }
        guard packet.bytes.first == 0x03 || packet.bytes.first == 0x05, !linkHeaders.isEmpty else {
            guard payload.isKnown else { return }  // not audio: libvorbis refuses it, and so nothing comes of it
            let change = DecodeWarning.FormatChange(frame: frame, from: format, toSampleRate: nil, toChannelCount: nil,
                                                    toCodec: payload.description)
            warnings.append(DecodeWarning(formatChange: change, byteOffset: packet.byteOffset, byteCount: 0))
            ended = true
            return
        }
        linkHeaders.append(packet.bytes)
        guard linkHeaders.count == 3 else { return }
        defer { linkHeaders = [] }
        do {
            synthesis = try VorbisSynthesis(try VorbisStreamHeaders(packets: linkHeaders))
        } catch {
            warnings.append(DecodeWarning(kind: .skippedCorruptData, byteOffset: packet.byteOffset, byteCount: 0,
                                          detail: "a link of the chained stream cannot be decoded: \(error)"))
            ended = true
        }
    }
}

/// Owns libvorbis's decoder state for one link (`vorbis_info`, `vorbis_comment`,
/// `vorbis_dsp_state`, `vorbis_block`).
private final class VorbisSynthesis {
    // The libvorbis state, allocated here and cleared in deinit.
    private let info = UnsafeMutablePointer<vorbis_info>.allocate(capacity: 1)
    private let comment = UnsafeMutablePointer<vorbis_comment>.allocate(capacity: 1)
    private let dsp = UnsafeMutablePointer<vorbis_dsp_state>.allocate(capacity: 1)
    private let block = UnsafeMutablePointer<vorbis_block>.allocate(capacity: 1)
    /// Whether `vorbis_synthesis_init` succeeded (and `vorbis_dsp_clear` is owed).
    private var dspReady = false
    /// Whether `vorbis_block_init` succeeded (and `vorbis_block_clear` is owed).
    private var blockReady = false
    /// Channels of the link.
    private let channels: Int
    /// Source channel for each output channel.
    private let channelMap: [Int]
    /// The next packet's number, as libogg would give it.
    private var packetNumber: Int64 = 3

    /// Reads the headers into libvorbis (`vorbis_synthesis_headerin` three times) and makes
    /// the decoder; the headers were checked first (`VorbisStreamHeaders`), so that libvorbis
    /// never builds codebooks it would divide by zero with.
    init(_ headers: VorbisStreamHeaders) throws {
        channels = headers.identification.channels
        channelMap = channels <= 8 ? Self.vorbisToWAVOrder[channels - 1] : Array(0..<channels)
        vorbis_info_init(info)
        vorbis_comment_init(comment)
        for (number, packet) in headers.packets.enumerated() {
            let status = packet.withUnsafeBufferPointer { bytes -> Int32 in
                var op = ogg_packet(packet: UnsafeMutablePointer(mutating: bytes.baseAddress), bytes: bytes.count,
                                    b_o_s: number == 0 ? 1 : 0, e_o_s: 0, granulepos: 0, packetno: Int64(number))
                return vorbis_synthesis_headerin(info, comment, &op)
            }
            guard status == 0 else {
                throw VorbisStatus(status).error("the Vorbis stream", call: "vorbis_synthesis_headerin",
                                                 context: "libvorbis refuses header packet \(number + 1)")
            }
        }
        guard vorbis_synthesis_init(dsp, info) == 0 else {
            throw AudioError(.libraryFailure, "libvorbis could not set up a decoder for the stream (vorbis_synthesis_init)")
        }
        dspReady = true
        guard vorbis_block_init(dsp, block) == 0 else {
            throw AudioError(.libraryFailure, "libvorbis could not set up a decoder for the stream (vorbis_block_init)")
        }
        blockReady = true
    }

    deinit {
        if blockReady { vorbis_block_clear(block) }
        if dspReady { vorbis_dsp_clear(dsp) }
        vorbis_comment_clear(comment)
        vorbis_info_clear(info)
        block.deallocate()
        dsp.deallocate()
        comment.deallocate()
        info.deallocate()
    }

    /// Forgets the blocks before: the next packet decodes as a stream's first.
    func restart() { vorbis_synthesis_restart(dsp) }

    /// Decodes one audio packet and appends up to `limit` of its frames, interleaved in
    /// WAV order; a packet libvorbis refuses adds nothing (libvorbisfile skips it too).
    func decode(_ packet: [UInt8], keeping limit: Int, into output: inout [Float]) -> Int {
        let accepted = packet.withUnsafeBufferPointer { bytes -> Bool in
            var op = ogg_packet(packet: UnsafeMutablePointer(mutating: bytes.baseAddress), bytes: bytes.count,
                                b_o_s: 0, e_o_s: 0, granulepos: -1, packetno: packetNumber)
            return vorbis_synthesis(block, &op) == 0 && vorbis_synthesis_blockin(dsp, block) == 0
        }
        packetNumber &+= 1
        guard accepted else { return 0 }
        var kept = 0
        while true {
            var pcm: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>?
            let available = Int(vorbis_synthesis_pcmout(dsp, &pcm))
            guard available > 0 else { break }
            let take = max(0, min(available, limit - kept))
            if take > 0, let pcm {
                let start = output.count
                output.append(contentsOf: repeatElement(0, count: take * channels))
                output.withUnsafeMutableBufferPointer { out in
                    for (target, source) in channelMap.enumerated() {
                        guard let plane = pcm[source] else { continue }
                        var index = start + target
                        for frame in 0..<take {
                            out[index] = plane[frame]
                            index += channels
                        }
                    }
                }
                kept += take
            }
            vorbis_synthesis_read(dsp, Int32(clamping: available))
        }
        return kept
    }

    /// For each channel count, the Vorbis channel feeding each WAV-order channel (as `VorbisDecoder`).
    private static let vorbisToWAVOrder: [[Int]] = [
        [0], [0, 1], [0, 2, 1], [0, 1, 2, 3], [0, 2, 1, 3, 4],
        [0, 2, 1, 5, 3, 4], [0, 2, 1, 6, 5, 3, 4], [0, 2, 1, 7, 5, 6, 3, 4],
    ]
}
