import Foundation
import SpoolCore
internal import CMPG123

/// MPEG-1/2/2.5 audio, Layers I–III, through libmpg123, from a file or from memory.
///
/// Spool finds every frame itself (`MPEGStream`): tags anywhere, the Xing/Info/LAME or VBRI
/// header frame, corrupt regions and a cut-off last frame are all kept out of libmpg123's
/// sight, which decodes only audio frames, untrimmed. So the length is known before decoding:
/// the frames times their samples, less the gapless trims Spool applies itself (LAME's encoder
/// delay and padding plus the decoder's own delay, exactly as libmpg123's gapless mode trims
/// them). Seeks are exact to the frame through libmpg123's frame index.
final class MP3Decoder: AudioDecoder {
    let format: AudioFormat
    private(set) var frameCount: Int
    private(set) var position = 0
    private(set) var info: AudioFileInfo
    private(set) var warnings: [DecodeWarning] = []

    private let handle: MPG123Handle
    let reader: ByteReader
    private let name: String
    /// Frames trimmed at the start: what libmpg123 decodes before the encoder's first sample.
    let startTrim: Int
    /// Frames libmpg123 decodes from the frames it is shown, untrimmed.
    let rawFrames: Int
    /// Untrimmed index of the next frame `pending` holds, and of the first one to hand out.
    private var rawPosition = 0
    private var dropUntil: Int
    /// Decoded samples libmpg123 holds for us from the last frame, not yet handed out.
    private var pending: UnsafePointer<Float>?
    private var pendingFrames = 0
    private var warnedTruncated = false

    init(source: AudioSource) throws {
        name = source.name
        reader = try ByteReader(source: source)
        guard reader.totalSize > 0 else { throw AudioError(.emptyInput, "\(name): the input is empty") }
        let stream = try MPEGStream(reader: reader, name: name)
        guard stream.audioFrames > 0 else {
            throw AudioError(.corruptData, "\(name): no whole MPEG audio frame after the stream's header frame")
        }
        reader.setWindow(stream.audioStart..<stream.audioEnd)
        reader.exclude(stream.excluded)
        for region in stream.corruptRegions {
            warnings.append(DecodeWarning(kind: .skippedCorruptData, byteOffset: region.lowerBound, byteCount: region.count))
        }
        for frame in stream.starvedFrames {
            warnings.append(LayerIIIReservoir.warning(at: frame.offset, missing: frame.missingBytes))
        }
        if stream.isTruncated {
            warnings.append(DecodeWarning(kind: .truncated, byteOffset: stream.truncatedFrameAt ?? stream.audioEnd,
                                          byteCount: stream.missingBytes))
            warnedTruncated = true
        }

        handle = try MPG123Handle(name: name)
        // Quiet: libmpg123 prints its notes to stderr otherwise. No gapless and no info frame:
        // it sees only audio frames and decodes every one, Spool trims. No read-ahead: the
        // frames are known good, and a stream of one frame has no next header to confirm it.
        // No Frankenstein streams: a frame that would change the format is not played.
        try handle.check(mpg123_param2(handle.raw, Int32(MPG123_ADD_FLAGS.rawValue),
                                       Int(MPG123_FORCE_FLOAT.rawValue | MPG123_QUIET.rawValue | MPG123_NO_FRANKENSTEIN.rawValue
                                           | MPG123_IGNORE_INFOFRAME.rawValue | MPG123_NO_READAHEAD.rawValue), 0))
        try handle.check(mpg123_param2(handle.raw, Int32(MPG123_REMOVE_FLAGS.rawValue), Int(MPG123_GAPLESS.rawValue), 0))
        // A negative index size lets the frame index grow to every frame: exact seeks anywhere.
        try handle.check(mpg123_param2(handle.raw, Int32(MPG123_INDEX_SIZE.rawValue), -1000, 0))
        // Layer III frames borrow bits from up to 511 (MPEG-1) or 255 (MPEG-2/2.5) bytes of
        // earlier frames; at 8 kbit/s and 22.05 kHz a frame is 26 bytes, so a seek must decode
        // ten frames ahead to refill that reservoir. The default (2) gives garbage there.
        try handle.check(mpg123_param2(handle.raw, Int32(MPG123_PREFRAMES.rawValue), 12, 0))
        try handle.check(mpg123_replace_reader_handle(handle.raw, { user, buffer, count in
            guard let user, let buffer else { return -1 }
            return Unmanaged<ByteReader>.fromOpaque(user).takeUnretainedValue().read(into: buffer, count: count)
        }, { user, offset, whence in
            // No offset inside a file comes near 2^62: a larger one is refused, not added up.
            guard let user, offset.magnitude < 1 << 62 else { return -1 }
            return off_t(Unmanaged<ByteReader>.fromOpaque(user).takeUnretainedValue().seek(Int(offset), whence: whence))
        }, nil))
        try handle.check(mpg123_open_handle(handle.raw, Unmanaged.passUnretained(reader).toOpaque()))

        var rate = 0, channels: Int32 = 0, encoding: Int32 = 0
        try handle.check(mpg123_getformat(handle.raw, &rate, &channels, &encoding))
        guard encoding == Int32(MPG123_ENC_FLOAT_32.rawValue) else {
            throw AudioError(.libraryFailure, "\(name): libmpg123 does not decode to 32-bit float here")
        }
        guard rate == stream.header.sampleRate, Int(channels) == stream.header.channelCount else {
            throw AudioError(.libraryFailure, "\(name): libmpg123 reads \(rate) Hz, \(channels) ch where the frames say "
                             + "\(stream.header.sampleRate) Hz, \(stream.header.channelCount) ch")
        }
        format = try AudioFormat(sampleRate: Double(rate), channelCount: Int(channels))

        // Gapless: trim at the start whatever happened at the end; trim the padding only where
        // the stream ends as the header says (not cut short, and not longer than it counts).
        let samplesPerFrame = stream.header.samplesPerFrame
        rawFrames = stream.audioFrames * samplesPerFrame
        let header = stream.infoFrame
        startTrim = min(rawFrames, header?.startTrim ?? 0)
        let counted = stream.audioFrames
        let endIntact = !stream.isTruncated
            && (header?.frames).map { $0 == counted || ($0 > counted && !stream.corruptRegions.isEmpty) } ?? false
        let endTrim = endIntact ? min(rawFrames - startTrim, header?.endTrim ?? 0) : 0
        frameCount = rawFrames - startTrim - endTrim
        dropUntil = startTrim

        // Bit rate: a CBR stream's nominal rate; the frames' average when their rates vary.
        let isVBR = stream.bitRatesVary
        let seconds = Double(rawFrames) / Double(stream.header.sampleRate)
        let bitRate = isVBR ? Int((Double(stream.audioBytes) * 8 / seconds).rounded()) : stream.firstBitRate
        info = AudioFileInfo(container: "MP3", codec: stream.header.codecName, bitRate: bitRate, isVBR: isVBR, tags: stream.tags)
    }

    /// The raw frame at which output stops.
    private var rawEnd: Int { startTrim + frameCount }

    func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int {
        let channels = format.channelCount
        guard let base = buffer.baseAddress else { return 0 }
        let capacity = buffer.count / channels
        var written = 0
        while written < capacity, rawPosition < rawEnd {
            if pendingFrames == 0, try !decodeFrame() { break }
            guard let samples = pending else { break }
            // Before the first frame wanted (the encoder delay, or a seek's in-frame offset).
            if rawPosition < dropUntil {
                let n = min(pendingFrames, dropUntil - rawPosition)
                consume(n, from: samples)
                continue
            }
            let n = min(pendingFrames, capacity - written, rawEnd - rawPosition)
            (base + written * channels).update(from: samples, count: n * channels)
            consume(n, from: samples)
            written += n
        }
        position += written
        if written == 0, capacity > 0, position < frameCount {
            // libmpg123 ran out before the frames Spool counted: say so, and end the count here.
            if !warnedTruncated, !warnings.contains(where: { $0.kind == .skippedCorruptData }) {
                warnings.append(DecodeWarning(kind: .truncated, byteOffset: reader.end, byteCount: 0))
                warnedTruncated = true
            }
            frameCount = position
        }
        return written
    }

    private func consume(_ frames: Int, from samples: UnsafePointer<Float>) {
        pending = samples + frames * format.channelCount
        pendingFrames -= frames
        rawPosition += frames
    }

    /// Decodes the next frame into `pending`; false at the end of the stream.
    private func decodeFrame() throws -> Bool {
        var frameNumber: off_t = 0
        var audio: UnsafeMutablePointer<UInt8>?
        var bytes = 0
        while true {
            let status = mpg123_decode_frame(handle.raw, &frameNumber, &audio, &bytes)
            switch status {
            case Int32(MPG123_OK.rawValue):
                guard bytes > 0, let audio else { continue }
                pending = UnsafeRawPointer(audio).assumingMemoryBound(to: Float.self)
                pendingFrames = bytes / MemoryLayout<Float>.size / format.channelCount
                return true
            case Int32(MPG123_NEW_FORMAT.rawValue):
                var rate = 0, channels: Int32 = 0, encoding: Int32 = 0
                mpg123_getformat(handle.raw, &rate, &channels, &encoding)
                if Double(rate) != format.sampleRate || Int(channels) != format.channelCount {
                    throw AudioError(.formatChanged,
                        "\(name): the stream changes from \(format) to \(rate) Hz, \(channels) ch at frame \(position)")
                }
            case Int32(MPG123_DONE.rawValue):
                return false
            default:
                let text = String(cString: mpg123_strerror(handle.raw))
                throw AudioError(.corruptData, "\(name): decoding failed at frame \(position): \(text)",
                                 underlying: LibraryStatus(library: "libmpg123", code: status, text: text))
            }
        }
    }

    func seek(toFrame frame: Int) throws {
        guard frame >= 0, frame <= frameCount else {
            throw AudioError(.outOfRange, "\(name): frame \(frame) is outside 0...\(frameCount)")
        }
        pending = nil
        pendingFrames = 0
        position = frame
        let target = startTrim + frame
        dropUntil = target
        guard target < rawEnd else {
            rawPosition = target  // at the end: nothing more to read
            return
        }
        let result = mpg123_seek(handle.raw, off_t(target), SEEK_SET)
        guard result >= 0, result <= target else {
            let text = String(cString: mpg123_strerror(handle.raw))
            throw AudioError(.corruptData, "\(name): cannot seek to frame \(frame): \(text)")
        }
        // libmpg123 lands on the sample; should it land earlier, the rest is dropped.
        rawPosition = Int(result)
    }
}

/// Owns one `mpg123_handle`.
final class MPG123Handle {
    let raw: OpaquePointer
    private let name: String

    /// libmpg123 before 1.27 needs one `mpg123_init` per process; later versions ignore it.
    private static let initialized: Bool = mpg123_init() == Int32(MPG123_OK.rawValue)

    init(name: String) throws {
        self.name = name
        _ = Self.initialized
        var error: Int32 = 0
        guard let raw = mpg123_new(nil, &error) else {
            let text = String(cString: mpg123_plain_strerror(error))
            throw AudioError(.libraryFailure, "\(name): libmpg123 cannot make a decoder: \(text)")
        }
        self.raw = raw
    }

    deinit {
        mpg123_close(raw)
        mpg123_delete(raw)
    }

    /// Turns a libmpg123 status into an `AudioError`.
    func check(_ status: Int32) throws {
        guard status != Int32(MPG123_OK.rawValue) else { return }
        let text = String(cString: mpg123_strerror(raw))
        throw AudioError(.corruptData, "\(name): \(text)", underlying: LibraryStatus(library: "libmpg123", code: status, text: text))
    }
}

extension DecoderFactory {
    /// MPEG audio (MP3, and Layers I and II) through libmpg123.
    public static let mp3 = DecoderFactory(
        name: "mp3",
        typeHints: ["mp3", "mp2", "mp1", "mpga", "mpeg", "audio/mpeg", "audio/mp3"],
        sniff: { p in
            p.matches("ID3") || MPEGStream.startsWithFrame(p)
        },
        open: { try MP3Decoder(source: $0) })
}
