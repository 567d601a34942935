import Foundation
import SpoolCore
internal import CVorbisFile

/// Ogg Vorbis, mono to 8 channels, through libvorbisfile, from a file or from memory.
///
/// Channels come out in Spool's order, the WAV/SMPTE one (L R C LFE BL BR SL SR), not
/// Vorbis's (L C R …). A chained file plays across links of the same format; at a link that
/// changes rate or channel count decoding ends with `AudioError.Code.formatChanged`, so
/// nothing is ever played at the wrong speed: `frameCount` counts the frames before it.
final class VorbisDecoder: AudioDecoder {
    let format: AudioFormat
    private(set) var frameCount: Int
    private(set) var position = 0
    let info: AudioFileInfo
    private(set) var warnings: [DecodeWarning] = []

    private let file: VorbisFile
    private let reader: ByteReader
    private let name: String
    /// Source channel for each output channel.
    private let channelMap: [Int]
    /// The first link whose format differs, and the frame where it starts.
    private let formatBreak: (link: Int, frame: Int, format: String)?
    private var checkedPages = false
    /// The frame at which reading last had to seek across a link boundary.
    private var boundaryRetried = -1

    init(source: AudioSource) throws {
        name = source.name
        reader = try ByteReader(source: source)
        guard reader.totalSize > 0 else { throw AudioError(.emptyInput, "\(name): the input is empty") }
        do {
            file = try VorbisFile(reader: reader)
        } catch {
            throw Self.openError(error, reader: reader, name: name)
        }
        let vf = file.raw
        guard let first = ov_info(vf, 0)?.pointee else {
            throw AudioError(.corruptData, "\(name): no Vorbis stream header")
        }
        do {
            format = try AudioFormat(sampleRate: Double(first.rate), channelCount: Int(first.channels))
        } catch let error as AudioError {
            throw AudioError(.unsupportedFormat, "\(name): \(error.message)")
        }
        channelMap = Self.vorbisToWAVOrder[format.channelCount - 1]
        // libvorbisfile 1.3.7 starts a chained file at link 2 when link 1 holds a single
        // audio page; an explicit seek to frame 0 puts it at the real start.
        if ov_streams(vf) > 1 { _ = ov_pcm_seek(vf, 0) }

        var frames = 0
        var formatBreak: (link: Int, frame: Int, format: String)?
        for link in 0..<Int(ov_streams(vf)) {
            guard let linkInfo = ov_info(vf, Int32(link))?.pointee else { break }
            if linkInfo.rate != first.rate || linkInfo.channels != first.channels {
                formatBreak = (link, frames, "\(linkInfo.rate) Hz, \(linkInfo.channels) ch")
                break
            }
            frames += max(0, Int(ov_pcm_total(vf, Int32(link))))
        }
        self.formatBreak = formatBreak
        frameCount = frames

        var tags = AudioTags()
        if let comment = ov_comment(vf, 0)?.pointee, let entries = comment.user_comments {
            for i in 0..<Int(comment.comments) {
                guard let entry = entries[i] else { continue }
                let length = Int(comment.comment_lengths[i])
                let text = String(decoding: UnsafeRawBufferPointer(start: entry, count: length), as: UTF8.self)
                guard let equals = text.firstIndex(of: "=") else { continue }
                tags.merge(String(text[..<equals]), String(text[text.index(after: equals)...]))
            }
        }
        let nominal = Int(first.bitrate_nominal)
        let average = Int(ov_bitrate(vf, -1))
        info = AudioFileInfo(container: "Ogg", codec: "Vorbis", bitRate: average > 0 ? average : max(0, nominal),
                             isVBR: !(first.bitrate_upper == first.bitrate_nominal && first.bitrate_lower == first.bitrate_nominal && first.bitrate_nominal > 0),
                             tags: tags)
        if let truncation = OggPageWalker.truncatedTail(reader: reader) {
            warnings.append(truncation)
        }
    }

    func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int {
        let channels = format.channelCount
        let want = min(buffer.count / channels, frameCount - position)
        if want <= 0 {
            if let formatBreak, position == frameCount, buffer.count >= channels {
                throw AudioError(.formatChanged,
                    "\(name): link \(formatBreak.link + 1) of the chained stream changes from \(format) to \(formatBreak.format) at frame \(formatBreak.frame); Spool stops there rather than play it at the wrong speed")
            }
            return 0
        }
        var written = 0
        while written < want {
            var pcm: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>?
            var link: Int32 = 0
            let got = Int(ov_read_float(file.raw, &pcm, Int32(min(want - written, 4096)), &link))
            if got == Int(OV_HOLE) {
                noteHole()
                continue
            }
            if got < 0 {
                throw AudioError(.corruptData, "\(name): decoding failed at frame \(position + written) (libvorbisfile \(got))",
                                 underlying: LibraryStatus(library: "libvorbisfile", code: Int32(got), text: "ov_read_float"))
            }
            if got == 0 {
                // libvorbisfile 1.3.7 can report the end of the stream at the end of a chained
                // link although more links follow; a seek to the next frame crosses over.
                let next = position + written
                guard next < frameCount, next != boundaryRetried, ov_pcm_seek(file.raw, ogg_int64_t(next)) == 0 else { break }
                boundaryRetried = next
                continue
            }
            guard let pcm else { break }
            let out = buffer.baseAddress! + written * channels
            for (target, sourceChannel) in channelMap.enumerated() {
                let plane = pcm[sourceChannel]!
                for frame in 0..<got { out[frame * channels + target] = plane[frame] }
            }
            written += got
        }
        if written == 0, position < frameCount { frameCount = position }
        position += written
        return written
    }

    /// libvorbisfile reports a hole where pages were lost; Spool walks the pages itself to
    /// say how many bytes were skipped and where.
    private func noteHole() {
        guard !checkedPages else { return }
        checkedPages = true
        for gap in OggPageWalker.corruptRegions(reader: reader) {
            warnings.append(DecodeWarning(kind: .skippedCorruptData, byteOffset: gap.lowerBound, byteCount: gap.count))
        }
    }

    func seek(toFrame frame: Int) throws {
        guard frame >= 0, frame <= frameCount else {
            throw AudioError(.outOfRange, "\(name): frame \(frame) is outside 0...\(frameCount)")
        }
        let status = ov_pcm_seek(file.raw, ogg_int64_t(frame))
        guard status == 0 else {
            throw AudioError(.corruptData, "\(name): cannot seek to frame \(frame) (libvorbisfile \(status))",
                             underlying: LibraryStatus(library: "libvorbisfile", code: status, text: "ov_pcm_seek"))
        }
        position = frame
    }

    /// The error for an input libvorbisfile would not open, saying what the input is when it
    /// is not Vorbis at all.
    static func openError(_ status: VorbisStatus, reader: ByteReader, name: String) -> AudioError {
        guard status == .notVorbis else {
            return status.error(name, call: "ov_open_callbacks", context: "cannot open the Ogg Vorbis stream")
        }
        var walker = OggPageWalker(reader: reader)
        guard let first = walker.next() else {
            return AudioError(.corruptData, "\(name): not an Ogg stream: no valid Ogg page (header and checksum) in its \(reader.totalSize) bytes",
                              underlying: LibraryStatus(library: "libvorbisfile", code: status.rawValue, text: "ov_open_callbacks: \(status.name)"))
        }
        // The streams that begin together at the start (RFC 3533: all first pages come first).
        var codecs: [OggCodec] = []
        var page: OggPage? = first
        while let current = page, current.isFirst {
            codecs.append(OggCodec(firstPacket: current.body))
            page = walker.next()
        }
        if codecs.isEmpty { codecs = [OggCodec(firstPacket: first.body)] }
        let underlying = LibraryStatus(library: "libvorbisfile", code: status.rawValue, text: "ov_open_callbacks: \(status.name)")
        if codecs.contains(.vorbis) {
            return AudioError(.corruptData, "\(name): the Vorbis stream's headers are invalid", underlying: underlying)
        }
        let known = codecs.filter { $0 != .unknown }
        let what = known.isEmpty ? "an Ogg stream of an unknown codec" : "Ogg " + known.map(\.description).joined(separator: " and ")
        return AudioError(.unsupportedFormat, "\(name): \(what), not Vorbis", underlying: underlying)
    }

    /// For each channel count, the Vorbis channel feeding each WAV-order channel
    /// (Vorbis I specification §4.3.9; WAVE_FORMAT_EXTENSIBLE channel mask order).
    private static let vorbisToWAVOrder: [[Int]] = [
        [0], [0, 1], [0, 2, 1], [0, 1, 2, 3], [0, 2, 1, 3, 4],
        [0, 2, 1, 5, 3, 4], [0, 2, 1, 6, 5, 3, 4], [0, 2, 1, 7, 5, 6, 3, 4],
    ]
}

/// Owns one `OggVorbis_File` and the reader its callbacks use.
///
/// The handle is opened before any stored property is set: an initializer that throws after
/// every stored property is set runs `deinit` too, and freeing the handle there as well as
/// on the failure path was a double free.
final class VorbisFile {
    let raw: UnsafeMutablePointer<OggVorbis_File>
    private let reader: ByteReader

    /// Opens libvorbisfile over `reader`'s window.
    /// - Throws: The status `ov_open_callbacks` returned. On failure it has already
    ///   released what it set up (vorbisfile.c clears the handle itself), so only the memory
    ///   for the handle is freed here.
    init(reader: ByteReader) throws(VorbisStatus) {
        let handle = UnsafeMutablePointer<OggVorbis_File>.allocate(capacity: 1)
        let status = ov_open_callbacks(Unmanaged.passUnretained(reader).toOpaque(), handle, nil, 0, Self.callbacks())
        guard status == 0 else {
            handle.deallocate()
            throw VorbisStatus(status)
        }
        self.reader = reader
        raw = handle
    }

    deinit {
        ov_clear(raw)
        raw.deallocate()
    }

    /// The I/O callbacks: each clamps what libvorbisfile asks for to what the reader holds,
    /// so no value from C reaches an arithmetic trap.
    private static func callbacks() -> ov_callbacks {
        ov_callbacks(
            read_func: { buffer, size, count, user in
                guard let buffer, let user, size > 0, count > 0 else { return 0 }
                let reader = Unmanaged<ByteReader>.fromOpaque(user).takeUnretainedValue()
                let (bytes, overflow) = size.multipliedReportingOverflow(by: count)
                let want = min(overflow ? Int.max : bytes, reader.totalSize)
                let got = reader.read(into: buffer, count: want - want % size)
                return got < 0 ? 0 : got / size
            },
            seek_func: { user, offset, whence in
                guard let user else { return -1 }
                let reader = Unmanaged<ByteReader>.fromOpaque(user).takeUnretainedValue()
                // Anything beyond ± the input's size is out of range whatever the base.
                let limit = Int64(reader.totalSize) + 1
                let clamped = Int(max(-limit, min(limit, offset)))
                return reader.seek(clamped, whence: whence) < 0 ? -1 : 0
            },
            close_func: nil,
            tell_func: { user in
                guard let user else { return -1 }
                return Unmanaged<ByteReader>.fromOpaque(user).takeUnretainedValue().position
            })
    }
}

extension DecoderFactory {
    /// Ogg Vorbis through libvorbisfile.
    public static let vorbis = DecoderFactory(
        name: "vorbis",
        typeHints: ["ogg", "oga", "vorbis", "audio/ogg", "audio/vorbis"],
        sniff: { $0.matches("OggS") },
        open: { try VorbisDecoder(source: $0) })
}
