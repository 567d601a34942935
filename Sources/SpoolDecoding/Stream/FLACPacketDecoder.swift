import SpoolCore
internal import CFLAC

/// Decodes FLAC frames through libFLAC's stream decoder.
///
/// The decoder is first fed `fLaC` and the STREAMINFO block of the magic cookie; each
/// packet's bytes are then what its read callback serves. Samples are scaled as libsndfile
/// scales FLAC with `SFC_SET_NORM_FLOAT` (by 2^-(bits-1)), so they agree with the file
/// decoder. Damage is reported as `.skippedCorruptData`: what libFLAC's error callback
/// reports (a lost sync, a bad header, a frame whose CRC-16 fails), and bytes the parser dropped between packets (a packet that does not begin
/// where the last one ended, with no `reset()` between). A frame that decodes to nothing
/// plays as silence of its length, so that the frames after it keep their place.
///
/// libFLAC's callbacks reach the decoder through an `Unmanaged` pointer, capture nothing,
/// and clamp every count they are given.
final class FLACPacketDecoder: StreamPacketDecoder {
    private let handle: UnsafeMutablePointer<FLAC__StreamDecoder>
    private let channels: Int
    /// What the read callback serves, and how much of it was served.
    private var source: [UInt8] = []
    private var served = 0
    /// What the write callback decoded from the current packet.
    private var decoded: [Float] = []
    private var sourceOffset = 0
    private var warnedForPacket = false
    private var expectedOffset: Int?
    private var failure: AudioError?
    private(set) var warnings: [DecodeWarning] = []

    /// Makes a decoder for FLAC packets.
    /// - Throws: `.corruptData` when the magic cookie is no STREAMINFO block or libFLAC refuses it.
    init(_ dataFormat: StreamDataFormat, magicCookie: [UInt8]?) throws {
        guard let cookie = magicCookie, cookie.count == 38, cookie[0] & 0x7F == 0 else {
            throw AudioError(.corruptData, "a FLAC stream decoder needs the 38-byte STREAMINFO block as its magic cookie")
        }
        guard let handle = FLAC__stream_decoder_new() else { throw AudioError(.libraryFailure, "libFLAC could not make a stream decoder") }
        self.handle = handle
        channels = dataFormat.channelCount
        FLAC__stream_decoder_set_md5_checking(handle, 0)
        let status = FLAC__stream_decoder_init_stream(
            handle, Self.read, nil, nil, nil, nil, Self.write, nil, Self.error, Unmanaged.passUnretained(self).toOpaque())
        guard status == FLAC__STREAM_DECODER_INIT_STATUS_OK else {
            throw AudioError(.corruptData, "libFLAC refused to start a stream decoder (status \(status.rawValue))")
        }
        var header = Array("fLaC".utf8) + cookie
        header[4] |= 0x80  // the only metadata block
        source = header
        guard FLAC__stream_decoder_process_until_end_of_metadata(handle) != 0,
              FLAC__stream_decoder_get_state(handle) == FLAC__STREAM_DECODER_SEARCH_FOR_FRAME_SYNC else {
            throw AudioError(.corruptData, "libFLAC refused the stream's STREAMINFO block")
        }
        warnings = []
    }

    deinit { FLAC__stream_decoder_delete(handle) }

    func decode(_ packet: StreamPacket, into output: inout [Float]) throws -> Int {
        if let expected = expectedOffset, packet.byteOffset > expected {
            warnings.append(DecodeWarning(kind: .skippedCorruptData, byteOffset: expected, byteCount: packet.byteOffset - expected))
        }
        expectedOffset = packet.byteOffset + packet.bytes.count
        source = packet.bytes
        served = 0
        sourceOffset = packet.byteOffset
        warnedForPacket = false
        decoded.removeAll(keepingCapacity: true)
        // One frame per packet; a few more calls at most when the packet holds damage.
        for _ in 0..<4 {
            let ok = FLAC__stream_decoder_process_single(handle) != 0
            if let failure { throw failure }
            let state = FLAC__stream_decoder_get_state(handle)
            if state == FLAC__STREAM_DECODER_END_OF_STREAM || !ok {
                guard FLAC__stream_decoder_flush(handle) != 0 else {
                    throw AudioError(.corruptData, "libFLAC could not go on after the packet at byte \(packet.byteOffset)")
                }
                break
            }
            if served >= source.count, !decoded.isEmpty { break }
        }
        if decoded.isEmpty, packet.frameCount > 0 {
            // A frame libFLAC could not decode plays as silence of its length, so that what
            // follows keeps its place in time (libFLAC itself zeroes a frame whose CRC fails).
            // Damage libFLAC drops without a word (it searches for the next sync) is reported too.
            if !warnedForPacket {
                warnings.append(DecodeWarning(kind: .skippedCorruptData, byteOffset: packet.byteOffset, byteCount: packet.bytes.count,
                                              detail: "libFLAC decoded nothing from the frame there; it plays as silence"))
            }
            decoded = [Float](repeating: 0, count: min(max(0, packet.frameCount), 65_535) * channels)
        }
        output.append(contentsOf: decoded)
        return decoded.count / channels
    }

    func reset() {
        FLAC__stream_decoder_flush(handle)
        expectedOffset = nil
        source = []
        served = 0
    }

    // MARK: - libFLAC's callbacks

    private static func decoder(_ client: UnsafeMutableRawPointer?) -> FLACPacketDecoder? {
        client.map { Unmanaged<FLACPacketDecoder>.fromOpaque($0).takeUnretainedValue() }
    }

    private static let read: FLAC__StreamDecoderReadCallback = { _, buffer, bytes, client in
        guard let me = decoder(client), let buffer, let bytes else { return FLAC__STREAM_DECODER_READ_STATUS_ABORT }
        let available = max(0, me.source.count - me.served)
        let count = min(bytes.pointee, available)
        guard count > 0 else {
            bytes.pointee = 0
            return FLAC__STREAM_DECODER_READ_STATUS_END_OF_STREAM
        }
        me.source.withUnsafeBufferPointer { from in
            guard let base = from.baseAddress else { return }
            buffer.update(from: base + me.served, count: count)
        }
        me.served += count
        bytes.pointee = count
        return FLAC__STREAM_DECODER_READ_STATUS_CONTINUE
    }

    private static let write: FLAC__StreamDecoderWriteCallback = { _, frame, buffer, client in
        guard let me = decoder(client), let frame, let buffer else { return FLAC__STREAM_DECODER_WRITE_STATUS_ABORT }
        let blockSize = min(Int(frame.pointee.header.blocksize), 65_535)
        let frameChannels = Int(frame.pointee.header.channels)
        let bits = Int(frame.pointee.header.bits_per_sample)
        guard frameChannels == me.channels, (1...32).contains(bits) else {
            me.failure = AudioError(.corruptData, "a FLAC frame near byte \(me.sourceOffset) has \(frameChannels) channels of \(bits) bits; the stream has \(me.channels)")
            return FLAC__STREAM_DECODER_WRITE_STATUS_ABORT
        }
        for channel in 0..<frameChannels where buffer[channel] == nil { return FLAC__STREAM_DECODER_WRITE_STATUS_ABORT }
        let scale = Float(sign: .plus, exponent: -(bits - 1), significand: 1)
        me.decoded.appendSamples(blockSize * frameChannels) { out in
            for channel in 0..<frameChannels {
                guard let plane = buffer[channel] else { continue }
                var j = channel
                for i in 0..<blockSize {
                    out[j] = Float(plane[i]) * scale
                    j += frameChannels
                }
            }
        }
        return FLAC__STREAM_DECODER_WRITE_STATUS_CONTINUE
    }

    private static let error: FLAC__StreamDecoderErrorCallback = { _, _, client in
        guard let me = decoder(client), !me.warnedForPacket else { return }
        me.warnedForPacket = true
        me.warnings.append(DecodeWarning(kind: .skippedCorruptData, byteOffset: me.sourceOffset, byteCount: me.source.count))
    }
}
