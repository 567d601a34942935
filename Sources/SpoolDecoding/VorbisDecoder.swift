import Foundation
import SpoolCore
internal import CVorbisFile

/// Ogg Vorbis, mono to 8 channels, through libvorbisfile, from a file or from memory.
///
/// Channels come out in Spool's order, the WAV/SMPTE one (L R C LFE BL BR SL SR), not
/// Vorbis's (L C R …).
///
/// Before libvorbisfile sees a byte, Spool walks the pages itself (`OggVorbisLayout`): it
/// finds the chained links, checks every link's headers against the Vorbis I specification
/// (libvorbis 1.3.7 divides by zero on some invalid setup headers) and counts each link's
/// frames from its packets and granule positions. libvorbisfile then decodes one link at a
/// time, shown only that link's bytes, so a link can never be read with another link's
/// channel layout and no granule position of one link moves another.
///
/// - Chained links of the same format play through as one stream.
/// - At a link that changes sample rate, channel count or codec, decoding ends: `read(into:)`
///   returns every frame before the change, then throws `AudioError.Code.formatChanged`;
///   `warnings` holds a `.formatChanged` warning with the frame and both formats from the
///   moment the decoder is opened, and `decodeAll()` returns the frames before the change.
///   `frameCount` counts the frames before it.
/// - A link whose headers are invalid ends decoding the same way, with a
///   `.skippedCorruptData` warning saying what is wrong, and no error.
/// - `frameCount` is exact (`isFrameCountExact`) when every link is regular; for a damaged
///   link (pages missing, granule positions that disagree with the packets, flags changed)
///   it is an estimate until decoding reaches the link's end, and decoding stops at what
///   the link's packets can hold at most, whatever its granule positions claim.
final class VorbisDecoder: AudioDecoder {
    let format: AudioFormat
    let info: AudioFileInfo
    private(set) var warnings: [DecodeWarning] = []

    var frameCount: Int { links.reduce(0) { $0.addingClamped($1.frames) } }
    var isFrameCountExact: Bool { links.allSatisfy(\.isKnown) }
    var position: Int {
        links.prefix(linkIndex).reduce(0) { $0.addingClamped($1.frames) }.addingClamped(framesIntoLink)
    }

    private struct Link {
        /// The link's number in the file, from 1, for messages.
        let number: Int
        let byteRange: Range<Int>
        /// Exact when `isKnown`, otherwise an estimate.
        var frames: Int
        /// Exact from the page walk, or learned by decoding to the link's end.
        var isKnown: Bool
        /// Whether the page walk found the link regular (libvorbisfile's seeks hold in it).
        let isRegular: Bool
        /// Most frames decoding may produce from it.
        let bound: Int
        let pagesAfterHoles: [Int]
        var damageNoted = false
        var holes = 0
    }

    private let reader: ByteReader
    private let name: String
    private let gaps: [Range<Int>]
    /// Source channel for each output channel.
    private let channelMap: [Int]
    /// The links that play, in order: the first link and those after it of its format.
    private var links: [Link]
    /// The link being decoded (`links.count` at the end) and the frames decoded from it.
    private var linkIndex = 0
    private var framesIntoLink = 0
    /// libvorbisfile over `links[linkIndex]`'s bytes; nil until needed, and dropped after any
    /// failure (libvorbis 1.3.7 must not be called again on a handle whose decoder setup
    /// failed: it would decode with half-built codebooks).
    private var file: VorbisFile?
    /// What ends the stream after the last link that plays: the warning that reports it,
    /// and the error `read(into:)` throws there.
    private var endWarning: Int?
    private var endError: AudioError?

    /// Most `OV_HOLE` reports accepted from one link before giving up on it.
    private static let holesPerLink = 10_000

    init(source: AudioSource) throws {
        name = source.name
        reader = try ByteReader(source: source)
        guard reader.totalSize > 0 else { throw AudioError(.emptyInput, "\(name): the input is empty") }
        let layout = OggVorbisLayout(reader: reader)
        gaps = layout.gaps
        guard let first = layout.links.first else {
            if layout.pageCount > 0 {
                throw AudioError(.corruptData, "\(name): no Ogg stream begins in it: none of its \(layout.pageCount) pages is flagged as the first page of a stream")
            }
            throw AudioError(.corruptData, "\(name): not an Ogg stream: no valid Ogg page (header and checksum) in its \(reader.totalSize) bytes")
        }
        guard let stream = first.vorbis else {
            let known = first.codecs.filter(\.isKnown)
            let what = known.isEmpty ? "an Ogg stream of an unknown codec" : "Ogg " + known.map(\.description).joined(separator: " and ")
            throw AudioError(.unsupportedFormat, "\(name): \(what), not Vorbis")
        }
        if let problem = stream.headerProblem {
            throw AudioError(.corruptData, "\(name): the Vorbis stream cannot be decoded: \(problem)")
        }
        guard let identification = stream.identification else {
            throw AudioError(.corruptData, "\(name): the Vorbis stream has no identification header")
        }
        do {
            format = try AudioFormat(sampleRate: Double(identification.sampleRate), channelCount: identification.channels)
        } catch let error as AudioError {
            throw AudioError(.unsupportedFormat, "\(name): \(error.message)")
        }
        channelMap = Self.vorbisToWAVOrder[format.channelCount - 1]

        var links: [Link] = []
        for (index, link) in layout.links.enumerated() {
            guard let vorbis = link.vorbis, vorbis.headerProblem == nil, let id = vorbis.identification,
                  id.sampleRate == identification.sampleRate, id.channels == identification.channels else { break }
            links.append(Link(number: index + 1, byteRange: link.byteRange, frames: vorbis.frames, isKnown: vorbis.isExact,
                              isRegular: vorbis.isExact, bound: vorbis.frameBound, pagesAfterHoles: vorbis.pagesAfterHoles))
        }
        self.links = links

        guard let firstLink = links.first else {
            throw AudioError(.corruptData, "\(name): the first link of the Ogg Vorbis stream cannot be decoded")
        }
        let opened = try Self.open(firstLink, reader: reader, format: format, name: name)
        let vf = opened.raw
        var tags = AudioTags()
        if let comment = ov_comment(vf, -1)?.pointee, let entries = comment.user_comments, comment.comments > 0,
           let lengths = comment.comment_lengths {
            for i in 0..<Int(comment.comments) {
                guard let entry = entries[i], lengths[i] > 0 else { continue }
                let text = String(decoding: UnsafeRawBufferPointer(start: entry, count: Int(lengths[i])), as: UTF8.self)
                guard let equals = text.firstIndex(of: "=") else { continue }
                tags.merge(String(text[..<equals]), String(text[text.index(after: equals)...]))
            }
        }
        // Bits per second over the links that play (what ov_bitrate(vf, -1) computes for a
        // whole file).
        let bytes = links.reduce(0) { $0 + $1.byteRange.count }
        let seconds = Double(links.reduce(0) { $0.addingClamped($1.frames) }) / format.sampleRate
        let average = seconds > 0 ? Double(bytes) * 8 / seconds : 0
        let nominal = identification.bitrateNominal
        info = AudioFileInfo(
            container: "Ogg", codec: "Vorbis",
            bitRate: average.isFinite && average > 0 && average < 1e12 ? Int(average.rounded()) : max(0, nominal),
            isVBR: !(identification.bitrateMaximum == nominal && identification.bitrateMinimum == nominal && nominal > 0),
            tags: tags)
        file = opened
        if let truncation = OggPageWalker.truncatedTail(reader: reader) {
            warnings.append(truncation)
        }
        if links.count < layout.links.count { reportEnd(at: layout.links[links.count]) }
    }

    // MARK: - Reading

    func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int {
        let channels = format.channelCount
        let capacity = buffer.count / channels
        guard capacity > 0, let base = buffer.baseAddress else { return 0 }
        var written = 0
        while written < capacity, linkIndex < links.count {
            let got = try readLink(into: base + written * channels, frames: capacity - written)
            if got == 0 { finishLink() } else { written += got }
        }
        if written == 0, linkIndex == links.count, let endError { throw endError }
        return written
    }

    /// Reads up to `frames` frames of the current link (into `out`, or nowhere), 0 at its
    /// end.
    private func readLink(into out: UnsafeMutablePointer<Float>?, frames: Int) throws -> Int {
        let link = links[linkIndex]
        let limit = link.isKnown ? link.frames : link.bound
        guard framesIntoLink < limit else { return 0 }
        let handle = try currentFile()
        let channels = format.channelCount
        let want = min(frames, limit - framesIntoLink, 4096)
        while true {
            var pcm: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>?
            var bitstream: Int32 = 0
            let got = Int(ov_read_float(handle.raw, &pcm, Int32(want), &bitstream))
            if got == Int(OV_HOLE) {
                noteDamage()
                links[linkIndex].holes += 1
                guard links[linkIndex].holes <= Self.holesPerLink else {
                    file = nil
                    throw AudioError(.corruptData, "\(name): link \(link.number) of the Ogg Vorbis stream has more than \(Self.holesPerLink) holes")
                }
                continue
            }
            if got < 0 {
                file = nil
                throw VorbisStatus(Int32(truncatingIfNeeded: got)).error(name, call: "ov_read_float",
                                                                         context: "decoding failed at frame \(position)")
            }
            guard got > 0 else { return 0 }
            let count = min(got, want)
            if let out {
                guard let pcm else {
                    file = nil
                    throw AudioError(.libraryFailure, "\(name): libvorbisfile returned \(got) frames and no samples")
                }
                if channels == 2, let left = pcm[channelMap[0]], let right = pcm[channelMap[1]] {
                    // Both planes in one pass: contiguous stores, which the compiler vectorises.
                    for frame in 0..<count {
                        out[2 * frame] = left[frame]
                        out[2 * frame + 1] = right[frame]
                    }
                } else {
                    for (target, source) in channelMap.enumerated() {
                        guard let plane = pcm[source] else {
                            file = nil
                            throw AudioError(.libraryFailure, "\(name): libvorbisfile returned no samples for channel \(source)")
                        }
                        if channels == 1 {
                            out.update(from: plane, count: count)  // nothing to interleave
                        } else {
                            var to = out + target
                            for frame in 0..<count {
                                to.pointee = plane[frame]
                                to += channels
                            }
                        }
                    }
                }
            }
            framesIntoLink += count
            if !link.isKnown, framesIntoLink > link.frames { links[linkIndex].frames = framesIntoLink }
            return count
        }
    }

    /// The current link is decoded to its end: its count is known now; go on to the next.
    private func finishLink() {
        let link = links[linkIndex]
        if !link.isKnown {
            if framesIntoLink < link.frames, !link.damageNoted {
                // The count `frameCount` gave was the last granule position's claim, and
                // decoding ended short of it with no hole reported: say where bytes belonged
                // to no page, or, when none did, that the link came up short.
                let reported = warnings.count
                noteDamage()
                if warnings.count == reported {
                    warnings.append(DecodeWarning(kind: .missingData, byteOffset: link.byteRange.upperBound, byteCount: 0,
                        detail: "link \(link.number) decoded to \(framesIntoLink) frames, \(link.frames - framesIntoLink) fewer than its last granule position claims"))
                }
            }
            links[linkIndex].frames = framesIntoLink
            links[linkIndex].isKnown = true
        } else if framesIntoLink < link.frames {
            // A count the page walk found exact, and libvorbis produced fewer: never a
            // silent difference.
            warnings.append(DecodeWarning(kind: .truncated, byteOffset: link.byteRange.upperBound, byteCount: 0,
                detail: "link \(link.number) decoded to \(framesIntoLink) frames, \(link.frames - framesIntoLink) fewer than its pages declare"))
            links[linkIndex].frames = framesIntoLink
        }
        file = nil
        linkIndex += 1
        framesIntoLink = 0
        if linkIndex == links.count, let endWarning {
            warnings[endWarning].formatChange?.frame = frameCount
        }
    }

    /// libvorbisfile reports a hole where pages were lost: the page walk says where, and how
    /// many bytes that belong to no page were skipped.
    private func noteDamage() {
        let link = links[linkIndex]
        guard !link.damageNoted else { return }
        links[linkIndex].damageNoted = true
        let truncatedAtEnd = warnings.contains { $0.kind == .truncated }
        for gap in gaps where link.byteRange.overlaps(gap) {
            if truncatedAtEnd, gap.upperBound == reader.totalSize { continue }
            warnings.append(DecodeWarning(kind: .skippedCorruptData, byteOffset: gap.lowerBound, byteCount: gap.count))
        }
        for offset in link.pagesAfterHoles where !gaps.contains(where: { $0.upperBound == offset }) {
            warnings.append(DecodeWarning(kind: .missingData, byteOffset: offset, byteCount: 0,
                                          detail: "pages of link \(link.number) are missing (their sequence numbers jump)"))
        }
    }

    // MARK: - Seeking

    func seek(toFrame frame: Int) throws {
        guard frame >= 0, frame <= frameCount else {
            throw AudioError(.outOfRange, "\(name): frame \(frame) is outside 0...\(frameCount)")
        }
        var start = 0
        for k in links.indices {
            if !links[k].isKnown {
                // Where later links begin depends on this link's length: decode through it.
                try open(k)
                linkIndex = k
                framesIntoLink = 0
                let target = frame - start
                while framesIntoLink < target, try readLink(into: nil, frames: target - framesIntoLink) > 0 {}
                if framesIntoLink == target, !(links[k].isKnown && framesIntoLink == links[k].frames) { return }
                if !links[k].isKnown, framesIntoLink < target {
                    links[k].frames = framesIntoLink
                    links[k].isKnown = true
                }
            }
            let frames = links[k].frames
            if frame < start + frames || (k == links.count - 1 && frame == start + frames) {
                try seek(inLink: k, to: frame - start)
                return
            }
            start += frames
        }
        throw AudioError(.outOfRange, "\(name): frame \(frame) is outside 0...\(frameCount)")
    }

    /// Positions decoding `relative` frames into link `k`, whose length is known.
    private func seek(inLink k: Int, to relative: Int) throws {
        file = nil
        linkIndex = k
        framesIntoLink = relative
        guard relative < links[k].frames else { return }
        try open(k)
        framesIntoLink = 0
        if links[k].isRegular {
            let status = ov_pcm_seek(try currentFile().raw, ogg_int64_t(relative))
            guard status == 0 else {
                file = nil
                throw VorbisStatus(status).error(name, call: "ov_pcm_seek", context: "cannot seek to frame \(position + relative)")
            }
            framesIntoLink = relative
        } else {
            // Granule positions of a damaged link cannot be trusted to seek by: decode to it.
            while framesIntoLink < relative, try readLink(into: nil, frames: relative - framesIntoLink) > 0 {}
        }
    }

    // MARK: - Links

    /// Opens libvorbisfile over link `k`'s bytes alone, at its start.
    private func open(_ k: Int) throws {
        file = nil
        file = try Self.open(links[k], reader: reader, format: format, name: name)
    }

    private static func open(_ link: Link, reader: ByteReader, format: AudioFormat, name: String) throws -> VorbisFile {
        reader.setWindow(link.byteRange)
        let opened: VorbisFile
        do {
            opened = try VorbisFile(reader: reader)
        } catch {
            throw error.error(name, call: "ov_open_callbacks", context: "cannot open link \(link.number) of the Ogg Vorbis stream")
        }
        guard let vi = ov_info(opened.raw, -1)?.pointee, Double(vi.rate) == format.sampleRate,
              Int(vi.channels) == format.channelCount else {
            throw AudioError(.corruptData, "\(name): libvorbisfile reads link \(link.number) as another format than its headers declare")
        }
        return opened
    }

    /// The handle for the current link, reopened (and placed at `framesIntoLink`) after a
    /// failure dropped it.
    private func currentFile() throws -> VorbisFile {
        if let file { return file }
        let target = framesIntoLink
        try open(linkIndex)
        framesIntoLink = 0
        if target > 0 { try seek(inLink: linkIndex, to: target) }
        guard let file else { throw AudioError(.invalidState, "\(name): link \(links[linkIndex].number) is not open") }
        return file
    }

    /// Reports what follows the last link that plays.
    private func reportEnd(at next: OggVorbisLayout.Link) {
        let number = links.count + 1
        let offset = next.byteRange.lowerBound
        let rest = reader.totalSize - offset
        if let vorbis = next.vorbis, let problem = vorbis.headerProblem {
            warnings.append(DecodeWarning(kind: .skippedCorruptData, byteOffset: offset, byteCount: rest,
                                          detail: "link \(number) of the chained stream cannot be decoded: \(problem)"))
            return
        }
        let codecs = next.codecs.filter(\.isKnown)
        guard !codecs.isEmpty else {
            warnings.append(DecodeWarning(kind: .skippedCorruptData, byteOffset: offset, byteCount: rest,
                                          detail: "link \(number) of the chained stream is of an unknown codec"))
            return
        }
        let id = next.vorbis?.identification
        let change = DecodeWarning.FormatChange(
            frame: frameCount, from: format, toSampleRate: id.map { Double($0.sampleRate) }, toChannelCount: id?.channels,
            toCodec: codecs.map(\.description).joined(separator: " and "))
        endWarning = warnings.count
        warnings.append(DecodeWarning(formatChange: change, byteOffset: offset, byteCount: rest))
        let to = id.map { "\($0.sampleRate) Hz, \($0.channels) ch" } ?? change.toCodec
        endError = AudioError(.formatChanged,
            "\(name): link \(number) of the chained stream changes from \(format) to \(to) at frame \(frameCount); Spool stops there rather than play it at the wrong speed")
    }

    /// For each channel count, the Vorbis channel feeding each WAV-order channel
    /// (Vorbis I specification §4.3.9; WAVE_FORMAT_EXTENSIBLE channel mask order).
    private static let vorbisToWAVOrder: [[Int]] = [
        [0], [0, 1], [0, 2, 1], [0, 1, 2, 3], [0, 2, 1, 3, 4],
        [0, 2, 1, 5, 3, 4], [0, 2, 1, 6, 5, 3, 4], [0, 2, 1, 7, 5, 6, 3, 4],
    ]
}

extension Int {
    /// The sum, or `Int.max` where it would overflow.
    func addingClamped(_ other: Int) -> Int {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }
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
