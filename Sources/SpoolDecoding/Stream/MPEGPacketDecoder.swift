import SpoolCore
internal import CMPG123

/// Decodes MPEG audio packets (one frame each) through libmpg123's feed API, set up as
/// `MP3Decoder` sets it up, so the same frames decode to the same samples, bit for bit.
///
/// libmpg123 is fed each packet's bytes and asked for every frame they complete; it sees
/// nothing but audio frames (the parser keeps tags, the header frame and damage from it) and
/// trims nothing (`StreamDecoder` applies the gapless trims). The damage the parser skipped
/// on the way to a packet comes with it and is reported as the file decoder reports it.
final class MPEGPacketDecoder: StreamPacketDecoder {
    private let handle: MPG123Handle
    /// The format the parser read from the first frame; libmpg123 must agree.
    private let sampleRate: Int
    private let channelCount: Int
    /// The damage the parser skipped, in stream order.
    private(set) var warnings: [DecodeWarning] = []
    /// The bit reservoir of the frames fed since the start or the last discontinuity.
    private var reservoir = LayerIIIReservoir()

    /// Makes a decoder for packets of `dataFormat`.
    /// - Throws: `.libraryFailure` when libmpg123 cannot be set up.
    init(_ dataFormat: StreamDataFormat) throws {
        let name = "the MPEG audio stream"
        handle = try MPG123Handle(name: name)
        sampleRate = Int(dataFormat.sampleRate)
        channelCount = dataFormat.channelCount
        // MP3Decoder's flags: quiet, float, no gapless and no header frame (Spool trims),
        // no read-ahead (a frame decodes once its bytes are in), no Frankenstein streams.
        try handle.check(mpg123_param2(handle.raw, Int32(MPG123_ADD_FLAGS.rawValue),
                                       Int(MPG123_FORCE_FLOAT.rawValue | MPG123_QUIET.rawValue | MPG123_NO_FRANKENSTEIN.rawValue
                                           | MPG123_IGNORE_INFOFRAME.rawValue | MPG123_NO_READAHEAD.rawValue), 0))
        try handle.check(mpg123_param2(handle.raw, Int32(MPG123_REMOVE_FLAGS.rawValue), Int(MPG123_GAPLESS.rawValue), 0))
        try handle.check(mpg123_open_feed(handle.raw))
    }

    /// Feeds the packet's frame to libmpg123 and appends the samples it decodes.
    /// - Throws: `.corruptData` for a frame libmpg123 refuses, `.formatChanged` for one
    ///   that changes the rate or channels.
    func decode(_ packet: StreamPacket, into output: inout [Float]) throws -> Int {
        warnings += packet.damage
        guard !packet.bytes.isEmpty else { return 0 }
        if let header = MPEGAudioHeader(packet.bytes),
           let missing = reservoir.take(header, byte: { $0 < packet.bytes.count ? packet.bytes[$0] : nil }) {
            warnings.append(LayerIIIReservoir.warning(at: packet.byteOffset, missing: missing))
        }
        let fed = packet.bytes.withUnsafeBufferPointer { mpg123_feed(handle.raw, $0.baseAddress, $0.count) }
        try handle.check(fed)
        var frames = 0
        while true {
            var frameNumber: off_t = 0
            var audio: UnsafeMutablePointer<UInt8>?
            var bytes = 0
            let status = mpg123_decode_frame(handle.raw, &frameNumber, &audio, &bytes)
            switch status {
            case Int32(MPG123_OK.rawValue):
                guard bytes > 0, let audio else { continue }
                let count = bytes / MemoryLayout<Float>.size
                let samples = UnsafeRawPointer(audio).bindMemory(to: Float.self, capacity: count)
                output.append(contentsOf: UnsafeBufferPointer(start: samples, count: count))
                frames += count / channelCount
            case Int32(MPG123_NEW_FORMAT.rawValue):
                var rate = 0, channels: Int32 = 0, encoding: Int32 = 0
                mpg123_getformat(handle.raw, &rate, &channels, &encoding)
                guard encoding == Int32(MPG123_ENC_FLOAT_32.rawValue) else {
                    throw AudioError(.libraryFailure, "libmpg123 does not decode to 32-bit float here")
                }
                if rate != sampleRate || Int(channels) != channelCount {
                    throw AudioError(.formatChanged, "the MPEG audio stream changes from \(sampleRate) Hz, \(channelCount) ch "
                                     + "to \(rate) Hz, \(channels) ch at byte \(packet.byteOffset)")
                }
            case Int32(MPG123_NEED_MORE.rawValue), Int32(MPG123_DONE.rawValue):
                return frames
            default:
                let text = String(cString: mpg123_strerror(handle.raw))
                throw AudioError(.corruptData, "decoding the MPEG audio frame at byte \(packet.byteOffset) failed: \(text)",
                                 underlying: LibraryStatus(library: "libmpg123", code: status, text: text))
            }
        }
    }

    /// Forgets the frames before (their bytes and the bit reservoir): the next packet
    /// follows a discontinuity.
    func reset() {
        // A fresh feed forgets the bytes and the decoder state of the frames before.
        mpg123_close(handle.raw)
        _ = mpg123_open_feed(handle.raw)
        // The frames after a seek reach into frames not fed: no damage, the decode primes.
        reservoir = LayerIIIReservoir(full: true)
    }
}
