import Foundation
import SpoolCore
internal import CSndFile

/// WAV (incl. WAVE_FORMAT_EXTENSIBLE, RF64), AIFF, AIFF-C, CAF and FLAC through libsndfile:
/// 8/16/24/32-bit integer, float, IMA ADPCM, µ-law and A-law. Memory sources are read
/// through libsndfile's virtual I/O, never a temporary file.
final class SndFileDecoder: AudioDecoder {
    let format: AudioFormat
    private(set) var frameCount: Int
    private(set) var position = 0
    let info: AudioFileInfo
    var warnings: [DecodeWarning] { ownWarnings + (recovery?.warnings ?? []) }
    private var ownWarnings: [DecodeWarning] = []

    private let reader: ByteReader
    private let handle: OpaquePointer
    private let name: String
    private let source: AudioSource
    private var warnedTruncated = false
    /// A FLAC file's stream decoder, which takes over where libFLAC stopped before the end
    /// (damage in a frame; libsndfile's reader does not resynchronise), and from then on.
    private var recovery: (any AudioDecoder)?

    /// What libsndfile's refusal to open a file means, in words about the file: libsndfile
    /// reads through Spool's own I/O, so its texts about files that do not exist, pipes or
    /// unreadable files (its internal errors 7, `SFE_BAD_FILE`, and 8, `SFE_BAD_FILE_READ`,
    /// which its MPEG and other decoders return when their data will not decode) would
    /// mislead; the library's text stays in brackets.
    static func openFailure(status: Int, text: String) -> String {
        switch status {
        case SF_ERR_UNRECOGNISED_FORMAT, SF_ERR_UNSUPPORTED_ENCODING: text
        case 7: "the audio data cannot be decoded: it is damaged or not what the header says (libsndfile: \(text))"
        case 8: "no audio data could be read from the file (libsndfile: \(text))"
        default: "libsndfile cannot read the header: \(text)"
        }
    }

    init(source: AudioSource) throws {
        reader = try ByteReader(source: source)
        name = source.name
        self.source = source
        guard reader.size > 0 else { throw AudioError(.emptyInput, "\(name): the input is empty") }
        if let chunk = RIFFHeader.chunkOverrunningTheFile(reader: reader) {
            throw AudioError(.corruptData, "\(name): the '\(chunk.id)' chunk at byte \(chunk.offset) claims \(chunk.size) bytes, more than the file's \(reader.totalSize), before any audio")
        }
        var sfInfo = SF_INFO()
        guard let handle = Self.open(reader, &sfInfo) else {
            let status = sf_error(nil)
            let text = String(cString: sf_strerror(nil))
            let code: AudioError.Code = switch Int(status) {
            case SF_ERR_UNRECOGNISED_FORMAT, SF_ERR_UNSUPPORTED_ENCODING: .unsupportedFormat
            case SF_ERR_SYSTEM: .readFailed
            default: .corruptData
            }
            let reason = if let claim = RIFFHeader.rf64DataBytes(reader: reader), claim > UInt64(reader.totalSize) {
                "the RF64 ds64 chunk claims \(claim) bytes of audio in a file of \(reader.totalSize) bytes (libsndfile: \(text))"
            } else {
                Self.openFailure(status: Int(status), text: text)
            }
            throw AudioError(code, "\(source.name): \(reason)",
                             underlying: LibraryStatus(library: "libsndfile", code: status, text: text))
        }
        self.handle = handle
        do {
            format = try AudioFormat(sampleRate: Double(sfInfo.samplerate), channelCount: Int(sfInfo.channels))
        } catch let error as AudioError {
            sf_close(handle)
            throw AudioError(.unsupportedFormat, "\(source.name): \(error.message)")
        }
        frameCount = Int(max(0, sfInfo.frames))
        // Reads come back as floats scaled to ±1 whatever the stored encoding (the default,
        // set explicitly because the scale of integer data depends on it).
        sf_command(handle, Int32(SFC_SET_NORM_FLOAT), nil, Int32(SF_TRUE))

        let prefix = reader.bytes(at: 0, count: 12)
        let container = Self.containerName(major: Int(sfInfo.format) & SF_FORMAT_TYPEMASK, prefix: prefix)
        let subtype = Int(sfInfo.format) & SF_FORMAT_SUBMASK
        var tags = AudioTags()
        for (key, id) in [("title", SF_STR_TITLE), ("artist", SF_STR_ARTIST), ("album", SF_STR_ALBUM),
                          ("date", SF_STR_DATE), ("genre", SF_STR_GENRE), ("tracknumber", SF_STR_TRACKNUMBER),
                          ("comment", SF_STR_COMMENT), ("copyright", SF_STR_COPYRIGHT)] {
            if let text = sf_get_string(handle, Int32(id)) { tags.merge(key, String(cString: text)) }
        }
        let seconds = format.seconds(forFrames: frameCount)
        var (codec, bitsPerSample) = Self.codecName(subtype: subtype)
        if container == "FLAC" {
            // FLAC is compressed: name the codec and its sample depth, measure the bit rate.
            codec = "FLAC " + (codec.split(separator: " ").dropFirst().first.map(String.init) ?? "")
            bitsPerSample = nil
        }
        let bitRate = if let bitsPerSample {
            Int(format.sampleRate) * format.channelCount * bitsPerSample
        } else {
            seconds > 0 ? Int((Double(reader.size) * 8 / seconds).rounded()) : 0
        }
        info = AudioFileInfo(container: container, codec: codec, bitRate: bitRate,
                             isVBR: container == "FLAC",
                             tags: tags)
        if let missing = RIFFHeader.missingDataBytes(reader: reader) {
            ownWarnings.append(DecodeWarning(kind: .truncated, byteOffset: reader.totalSize, byteCount: missing))
            warnedTruncated = true
        }
        if container == "FLAC" { verifyFLACLength(source: source) }
    }

    /// Opens libsndfile over `reader` through its virtual I/O.
    private static func open(_ reader: ByteReader, _ sfInfo: inout SF_INFO) -> OpaquePointer? {
        var io = SF_VIRTUAL_IO(
            get_filelen: { Unmanaged<ByteReader>.fromOpaque($0!).takeUnretainedValue().size.sfCount },
            seek: { offset, whence, user in
                Unmanaged<ByteReader>.fromOpaque(user!).takeUnretainedValue().seek(Int(offset), whence: whence).sfCount
            },
            read: { ptr, count, user in
                let n = Unmanaged<ByteReader>.fromOpaque(user!).takeUnretainedValue().read(into: ptr!, count: Int(clamping: count))
                return max(0, n).sfCount
            },
            write: { _, _, _ in 0 },
            tell: { Unmanaged<ByteReader>.fromOpaque($0!).takeUnretainedValue().position.sfCount })
        return sf_open_virtual(&io, Int32(SFM_READ), &sfInfo, Unmanaged.passUnretained(reader).toOpaque())
    }

    /// STREAMINFO's total is the encoder's claim; a FLAC cut short still carries it. The last
    /// frame is sought and read (libFLAC's seek is a binary search, so this costs a few
    /// frames); when it is not there, the file is decoded through once to count what is, so
    /// that `frameCount` is exact from the start; counted by the stream decoder, which goes on
    /// past damage where libFLAC's reader stops, as reads do (`recover`).
    /// A failed seek leaves libFLAC's decoder unable to read on (even from frame 0), so the
    /// probe runs on a second handle over the same bytes and the decoder's own is untouched.
    private func verifyFLACLength(source: AudioSource) {
        guard frameCount > 0, let probeReader = try? ByteReader(source: source) else { return }
        var probeInfo = SF_INFO()
        guard let probe = Self.open(probeReader, &probeInfo) else { return }
        var scratch = [Float](repeating: 0, count: 4096 * format.channelCount)
        let last = sf_count_t(frameCount - 1)
        let lastFrameIsThere = sf_seek(probe, last, SEEK_SET) == last && sf_readf_float(probe, &scratch, 1) == 1
        sf_close(probe)
        if lastFrameIsThere { return }
        guard let counter = try? FLACSalvage.open(source) else { return }
        var decoded = 0
        while decoded < frameCount {
            let got = scratch.withUnsafeMutableBufferPointer { (try? counter.read(into: $0)) ?? 0 }
            if got <= 0 { break }
            decoded += got
        }
        if decoded < frameCount {
            ownWarnings.append(DecodeWarning(kind: .truncated, byteOffset: reader.totalSize, byteCount: 0))
            warnedTruncated = true
            frameCount = decoded
        }
    }

    deinit { sf_close(handle) }

    func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int {
        let want = buffer.count / format.channelCount
        if let recovery { return try readRecovering(recovery, into: buffer) }
        guard want > 0, position < frameCount else { return 0 }
        let got = Int(sf_readf_float(handle, buffer.baseAddress, sf_count_t(min(want, frameCount - position))))
        if got == 0, info.container == "FLAC", let recovery = recover() {
            return try readRecovering(recovery, into: buffer)
        }
        if got == 0 {
            let status = sf_error(handle)
            // An error once every byte has been read is the cut-off end of a truncated file
            // (libFLAC "lost sync" on a partial last frame): keep what decoded, and warn.
            if status != 0, reader.offset < reader.end {
                let text = String(cString: sf_strerror(handle))
                throw AudioError(.corruptData, "\(name): decoding failed at frame \(position): \(text)",
                                 underlying: LibraryStatus(library: "libsndfile", code: status, text: text))
            }
            // The header promised more frames than the data holds.
            if !warnedTruncated {
                ownWarnings.append(DecodeWarning(kind: .truncated, byteOffset: reader.totalSize, byteCount: 0))
                warnedTruncated = true
            }
            frameCount = position
        }
        position += got
        return got
    }

    /// libFLAC stopped before the count STREAMINFO states (and the open-time check found its
    /// last frame): the stream decoder, which finds frames past damage by their checked headers,
    /// goes on from the frame reached. Nil when it cannot.
    private func recover() -> (any AudioDecoder)? {
        guard let decoder = try? FLACSalvage.open(source), (try? decoder.seek(toFrame: position)) != nil else { return nil }
        recovery = decoder
        return decoder
    }

    private func readRecovering(_ decoder: any AudioDecoder, into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int {
        let got = try decoder.read(into: buffer)
        position += got
        if got == 0, position < frameCount {
            // Short of the count given at open (the file cut since, say): never a silent end.
            if !warnedTruncated {
                ownWarnings.append(DecodeWarning(kind: .truncated, byteOffset: reader.totalSize, byteCount: 0))
                warnedTruncated = true
            }
            frameCount = position
        }
        return got
    }

    func seek(toFrame frame: Int) throws {
        guard frame >= 0, frame <= frameCount else {
            throw AudioError(.outOfRange, "\(name): frame \(frame) is outside 0...\(frameCount)")
        }
        if let recovery {
            try recovery.seek(toFrame: frame)
            position = frame
            return
        }
        guard sf_seek(handle, sf_count_t(frame), SEEK_SET) >= 0 else {
            let text = String(cString: sf_strerror(handle))
            throw AudioError(.corruptData, "\(name): cannot seek to frame \(frame): \(text)")
        }
        position = frame
    }

    private static func containerName(major: Int, prefix: [UInt8]) -> String {
        switch major {
        case SF_FORMAT_WAV, SF_FORMAT_WAVEX: "WAV"
        case SF_FORMAT_RF64: "RF64"
        case SF_FORMAT_W64: "W64"
        case SF_FORMAT_AIFF: prefix.matches("AIFC", at: 8) ? "AIFF-C" : "AIFF"
        case SF_FORMAT_CAF: "CAF"
        case SF_FORMAT_FLAC: "FLAC"
        case SF_FORMAT_AU: "AU"
        default: "libsndfile 0x\(String(major, radix: 16))"
        }
    }

    /// A name for the encoding and, for uncompressed PCM, its bits per sample.
    private static func codecName(subtype: Int) -> (String, Int?) {
        switch subtype {
        case SF_FORMAT_PCM_S8: ("PCM 8-bit signed integer", 8)
        case SF_FORMAT_PCM_U8: ("PCM 8-bit unsigned integer", 8)
        case SF_FORMAT_PCM_16: ("PCM 16-bit integer", 16)
        case SF_FORMAT_PCM_24: ("PCM 24-bit integer", 24)
        case SF_FORMAT_PCM_32: ("PCM 32-bit integer", 32)
        case SF_FORMAT_FLOAT: ("PCM 32-bit float", 32)
        case SF_FORMAT_DOUBLE: ("PCM 64-bit float", 64)
        case SF_FORMAT_ULAW: ("µ-law", 8)
        case SF_FORMAT_ALAW: ("A-law", 8)
        case SF_FORMAT_IMA_ADPCM: ("IMA ADPCM", nil)
        case SF_FORMAT_MS_ADPCM: ("Microsoft ADPCM", nil)
        case SF_FORMAT_GSM610: ("GSM 6.10", nil)
        default: ("libsndfile subtype 0x\(String(subtype, radix: 16))", nil)
        }
    }
}

extension Int {
    fileprivate var sfCount: sf_count_t { sf_count_t(self) }
}

extension DecoderFactory {
    /// WAV, AIFF, AIFF-C, CAF, FLAC (and RF64, W64, AU) through libsndfile.
    public static let sndfile = DecoderFactory(
        name: "sndfile",
        typeHints: ["wav", "wave", "aif", "aiff", "aifc", "caf", "flac", "rf64", "w64", "au", "snd",
                    "audio/wav", "audio/x-wav", "audio/aiff", "audio/x-aiff", "audio/x-caf", "audio/flac"],
        sniff: { p in
            (p.matches("RIFF") && p.matches("WAVE", at: 8)) || p.matches("RF64") || p.matches("RIFX")
                || (p.matches("FORM") && (p.matches("AIFF", at: 8) || p.matches("AIFC", at: 8)))
                || p.matches("caff") || p.matches("fLaC") || p.matches(".snd") || p.matches("riff\u{2E}\u{91}\u{CF}\u{11}")
        },
        open: { source in
            if let mpeg = try MPEGInWAV.open(source) { return mpeg }
            do {
                return try SndFileDecoder(source: source)
            } catch let refusal as AudioError {
                if let salvaged = try? FLACSalvage.open(source) { return salvaged }
                throw refusal
            }
        })
}

/// A FLAC file that libsndfile (libFLAC's metadata reader) refuses whole, such as one whose
/// metadata block is shorter than its contents, is read by Spool's FLAC stream parser instead,
/// which takes its audio frames by their checked headers and reports the damage it went past
/// (`FLACStreamParser`). Its count is then STREAMINFO's claim until the end is decoded.
enum FLACSalvage {
    static func open(_ source: AudioSource) throws -> (any AudioDecoder)? {
        let reader = try ByteReader(source: source)
        guard reader.bytes(at: 0, count: 4).elementsEqual("fLaC".utf8) else { return nil }
        let decoder = try StreamingDecoder(
            name: source.name, typeHint: "flac",
            reader: { buffer in
                guard let base = buffer.baseAddress else { return 0 }
                let count = reader.read(into: base, count: buffer.count)
                guard count >= 0 else { throw AudioError(.readFailed, "\(source.name): cannot read") }
                return count
            },
            seeker: { offset in
                guard reader.seek(offset, whence: SEEK_SET) == offset else {
                    throw AudioError(.readFailed, "\(source.name): cannot move to byte \(offset)")
                }
            })
        return ClaimedCount(decoder)
    }
}

/// A decoder whose count is a header's claim until its end is decoded, whatever the inner
/// decoder would say (the stream parser takes STREAMINFO's total as exact).
final class ClaimedCount: AudioDecoder {
    private let inner: any AudioDecoder
    private var reachedEnd = false

    init(_ inner: any AudioDecoder) { self.inner = inner }

    var info: AudioFileInfo { inner.info }
    var format: AudioFormat { inner.format }
    var frameCount: Int { inner.frameCount }
    var isFrameCountExact: Bool { reachedEnd && inner.isFrameCountExact }
    var position: Int { inner.position }
    var warnings: [DecodeWarning] { inner.warnings }
    func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int {
        let frames = try inner.read(into: buffer)
        if frames == 0 { reachedEnd = true }
        return frames
    }
    func seek(toFrame frame: Int) throws { try inner.seek(toFrame: frame) }
}

/// MPEG audio inside a WAV file (format tags 0x0050 and 0x0055, as some encoders write it) is
/// decoded by Spool's MP3 decoder over the data chunk, not by libsndfile's own MPEG path: so
/// it is gapless and exactly counted like any MP3, and libmpg123 stays quiet on stderr.
enum MPEGInWAV {
    /// `WAVE_FORMAT_MPEG` and `WAVE_FORMAT_MPEGLAYER3`.
    static let formatTags: Set<Int> = [0x0050, 0x0055]

    static func open(_ source: AudioSource) throws -> (any AudioDecoder)? {
        let reader = try ByteReader(source: source)
        guard let payload = RIFFHeader.wavePayload(reader: reader), formatTags.contains(payload.formatTag) else { return nil }
        guard !payload.data.isEmpty else { throw AudioError(.corruptData, "\(source.name): the WAV file's MPEG data chunk is empty") }
        let bytes: Data
        switch source.location {
        case .memory(let data):
            bytes = data.subdata(in: (data.startIndex + payload.data.lowerBound)..<(data.startIndex + payload.data.upperBound))
        case .file(let url):
            // Mapped, not read: only the pages the decoder touches are loaded.
            let mapped = try Data(contentsOf: url, options: .alwaysMapped)
            bytes = mapped.subdata(in: payload.data)
        }
        let inner = try MP3Decoder(source: .memory(bytes, name: source.name))
        return ContainerRenamed(inner, container: "WAV")
    }
}

/// A decoder whose stream sits inside another container: everything is the inner decoder's,
/// except the container's name.
final class ContainerRenamed: AudioDecoder {
    private let inner: any AudioDecoder
    let info: AudioFileInfo

    init(_ inner: any AudioDecoder, container: String) {
        self.inner = inner
        var info = inner.info
        info.container = container
        self.info = info
    }

    var format: AudioFormat { inner.format }
    var frameCount: Int { inner.frameCount }
    var isFrameCountExact: Bool { inner.isFrameCountExact }
    var position: Int { inner.position }
    var warnings: [DecodeWarning] { inner.warnings }
    func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int { try inner.read(into: buffer) }
    func seek(toFrame frame: Int) throws { try inner.seek(toFrame: frame) }
}
