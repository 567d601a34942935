import Foundation
import SpoolCore
internal import CMPG123

/// MPEG-1/2/2.5 audio, Layers I–III, through libmpg123, from a file or from memory.
///
/// Gapless: the encoder delay and padding a LAME/Xing header records are trimmed, so the
/// frame count is exact. Without such a header the length comes from a scan of every frame
/// header (`mpg123_scan`), never from a bit-rate guess. Seeks are exact to the frame through
/// libmpg123's frame index. ID3v2 is read by libmpg123; ID3v1 and APEv2 tags at the end are
/// read by Spool and kept out of the decoder's sight.
final class MP3Decoder: AudioDecoder {
    let format: AudioFormat
    private(set) var frameCount: Int
    private(set) var position = 0
    private(set) var info: AudioFileInfo
    private(set) var warnings: [DecodeWarning] = []

    private let handle: MPG123Handle
    private let reader: ByteReader
    private let name: String
    /// Decoded samples libmpg123 holds for us from the last frame, not yet handed out.
    private var pending: UnsafePointer<Float>?
    private var pendingSamples = 0
    private var warnedTruncated = false

    init(source: AudioSource) throws {
        name = source.name
        reader = try ByteReader(source: source)
        guard reader.totalSize > 0 else { throw AudioError(.emptyInput, "\(name): the input is empty") }
        let layout = MPEGLayout(reader: reader)
        let scanStart = min(layout.id3v2Bytes, layout.audioEnd)
        let head = reader.bytes(at: scanStart, count: min(64 * 1024, layout.audioEnd - scanStart))
        guard let (firstOffset, firstHeader) = MPEGLayout.firstFrame(in: head, from: 0) else {
            throw AudioError(.unsupportedFormat, "\(name): no MPEG audio frame found")
        }
        let xing = XingHeader(head, frameAt: firstOffset, header: firstHeader)
        reader.setWindow(0..<layout.audioEnd)
        let walk = MPEGFrameWalk(reader: reader, firstFrame: scanStart + firstOffset, header: firstHeader, end: layout.audioEnd)
        reader.exclude(walk.corruptRegions)
        for region in walk.corruptRegions {
            warnings.append(DecodeWarning(kind: .skippedCorruptData, byteOffset: region.lowerBound, byteCount: region.count))
        }

        handle = try MPG123Handle(name: name)
        try handle.check(mpg123_param2(handle.raw, Int32(MPG123_ADD_FLAGS.rawValue), Int(MPG123_FORCE_FLOAT.rawValue | MPG123_GAPLESS.rawValue | MPG123_QUIET.rawValue | MPG123_NO_FRANKENSTEIN.rawValue), 0))
        // A negative index size lets the frame index grow to every frame: exact seeks anywhere.
        try handle.check(mpg123_param2(handle.raw, Int32(MPG123_INDEX_SIZE.rawValue), -1000, 0))
        // Layer III frames borrow bits from up to 511 (MPEG-1) or 255 (MPEG-2/2.5) bytes of
        // earlier frames; at 8 kbit/s and 22.05 kHz a frame is 26 bytes, so a seek must decode
        // ten frames ahead to refill that reservoir. The default (2) gives garbage there.
        try handle.check(mpg123_param2(handle.raw, Int32(MPG123_PREFRAMES.rawValue), 12, 0))
        // Resync across corrupt regions of any length instead of giving up after 1 KiB.
        try handle.check(mpg123_param2(handle.raw, Int32(MPG123_RESYNC_LIMIT.rawValue), -1, 0))
        try handle.check(mpg123_replace_reader_handle(handle.raw, { user, buffer, count in
            Unmanaged<ByteReader>.fromOpaque(user!).takeUnretainedValue().read(into: buffer!, count: Int(count))
        }, { user, offset, whence in
            off_t(Unmanaged<ByteReader>.fromOpaque(user!).takeUnretainedValue().seek(Int(offset), whence: whence))
        }, nil))
        try handle.check(mpg123_open_handle(handle.raw, Unmanaged.passUnretained(reader).toOpaque()))

        var rate = 0, channels: Int32 = 0, encoding: Int32 = 0
        try handle.check(mpg123_getformat(handle.raw, &rate, &channels, &encoding))
        guard encoding == Int32(MPG123_ENC_FLOAT_32.rawValue) else {
            throw AudioError(.libraryFailure, "\(name): libmpg123 does not decode to 32-bit float here")
        }
        format = try AudioFormat(sampleRate: Double(rate), channelCount: Int(channels))

        // Trust the header's frame count only when the bytes could hold it; a header that
        // claims more (corrupt, or a truncated file) is checked by a full scan.
        let audioBytes = layout.audioEnd - scanStart - firstOffset
        let smallestFrame = max(1, firstHeader.samplesPerFrame * 8000 / 8 / firstHeader.sampleRate)
        let plausible = xing?.frames.map { $0 > 0 && $0 <= audioBytes / smallestFrame + 1 } ?? false
        if !plausible { try handle.check(mpg123_scan(handle.raw)) }
        var length = Int(mpg123_length(handle.raw))
        let claimsTooMuch = (xing?.bytes.map { $0 > audioBytes + 4096 } ?? false)
            || (xing?.frames.map { $0 > walk.frames + 1 } ?? false)
        if walk.truncatedFrameAt != nil || (claimsTooMuch && walk.corruptRegions.isEmpty) {
            let missing = max(0, (xing?.bytes ?? audioBytes) - audioBytes)
            warnings.append(DecodeWarning(kind: .truncated, byteOffset: walk.truncatedFrameAt ?? layout.audioEnd,
                                          byteCount: missing))
            warnedTruncated = true
            if plausible {
                try handle.check(mpg123_scan(handle.raw))
                length = Int(mpg123_length(handle.raw))
            }
        }
        guard length >= 0 else { throw AudioError(.corruptData, "\(name): the length of the MPEG stream cannot be found") }
        frameCount = length

        var frameInfo = mpg123_frameinfo2()
        _ = mpg123_info2(handle.raw, &frameInfo)
        let isVBR = frameInfo.vbr != Int32(MPG123_CBR.rawValue)
        let seconds = format.seconds(forFrames: frameCount)
        let bitRate = !isVBR ? Int(frameInfo.bitrate) * 1000
            : seconds > 0 ? Int((Double(audioBytes) * 8 / seconds).rounded()) : 0
        var tags = layout.tags
        Self.readID3v2(handle: handle, into: &tags)
        info = AudioFileInfo(container: "MP3", codec: firstHeader.codecName, bitRate: bitRate, isVBR: isVBR, tags: tags)
    }

    func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int {
        let channels = format.channelCount
        let capacity = buffer.count / channels * channels
        var written = 0
        while written < capacity {
            if pendingSamples == 0, try !decodeFrame() { break }
            let n = min(pendingSamples, capacity - written)
            (buffer.baseAddress! + written).update(from: pending!, count: n)
            pending = pending! + n
            pendingSamples -= n
            written += n
        }
        let frames = written / channels
        position += frames
        if frames == 0, position < frameCount {
            // Frames lost in a corrupt region shorten the stream; that was reported at open.
            // Otherwise the data ended before the header's count: a truncated file.
            if !warnedTruncated, !warnings.contains(where: { $0.kind == .skippedCorruptData }) {
                warnings.append(DecodeWarning(kind: .truncated, byteOffset: reader.end, byteCount: 0))
                warnedTruncated = true
            }
            frameCount = position
        }
        return frames
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
                pendingSamples = bytes / MemoryLayout<Float>.size
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
        let result = mpg123_seek(handle.raw, off_t(frame), SEEK_SET)
        guard result >= 0 else {
            let text = String(cString: mpg123_strerror(handle.raw))
            throw AudioError(.corruptData, "\(name): cannot seek to frame \(frame): \(text)")
        }
        pending = nil
        pendingSamples = 0
        position = frame
    }

    private static func readID3v2(handle: MPG123Handle, into tags: inout AudioTags) {
        var v1: UnsafeMutablePointer<mpg123_id3v1>?
        var v2: UnsafeMutablePointer<mpg123_id3v2>?
        guard mpg123_id3(handle.raw, &v1, &v2) == Int32(MPG123_OK.rawValue), let tag = v2?.pointee else { return }
        func text(_ s: UnsafeMutablePointer<mpg123_string>?) -> String? {
            guard let s, let p = s.pointee.p, s.pointee.fill > 0 else { return nil }
            return String(cString: p)
        }
        // ID3v2 wins over ID3v1 and APE: merge keeps the first value set, so start afresh.
        var merged = AudioTags()
        merged.merge("title", text(tag.title))
        merged.merge("artist", text(tag.artist))
        merged.merge("album", text(tag.album))
        merged.merge("date", text(tag.year))
        merged.merge("genre", text(tag.genre))
        merged.merge("comment", text(tag.comment))
        for i in 0..<Int(tag.texts) {
            let entry = tag.text[i]
            let id = withUnsafeBytes(of: entry.id) { String(decoding: $0, as: UTF8.self) }
            var value = entry.text
            let string = withUnsafeMutablePointer(to: &value) { text($0) }
            if id == "TRCK" { merged.merge("tracknumber", string) }
        }
        for (key, value) in tags.fields { merged.merge(key, value) }
        tags = merged
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
            p.matches("ID3") || MPEGLayout.firstFrame(in: p, from: 0)?.offset == 0
        },
        open: { try MP3Decoder(source: $0) })
}
