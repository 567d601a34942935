import Foundation
import SpoolCore
internal import COpusFile

/// Ogg Opus (RFC 7845), mono to 8 channels, through libopusfile, from a file or from memory.
///
/// Opus always decodes at 48 kHz, whatever rate the encoder was fed (the header keeps that
/// only as a note), so the output is 48 kHz. Channels come out in Spool's order, the
/// WAV/SMPTE one (L R C LFE BL BR SL SR), not the Vorbis order channel mapping family 1 uses.
///
/// The frame count is what decoding produces: the pre-skip and the end trimming of every
/// link are applied, and on opening, every packet is walked once through libopusfile with a
/// decode callback that only checks the packet's framing, which costs a read of the file
/// but no decoding. Seeks are exact (`op_pcm_seek`) wherever the pages' granule positions
/// agree with that walk; where they do not (a lost page, forged granule positions), a seek
/// walks forward from the start instead, so that a position always means the same frame.
/// After a seek the decoder is given 0.5 s to converge, so that the samples are those of a
/// decode from the start (see `seek(toFrame:)`).
///
/// A chained file plays across links with the same channel count; at a link that changes
/// it, decoding ends with `AudioError.Code.formatChanged`, and `frameCount` counts the
/// frames before it.
final class OpusDecoder: AudioDecoder {
    let format: AudioFormat
    private(set) var frameCount: Int
    private(set) var isFrameCountExact = true
    private(set) var position = 0
    let info: AudioFileInfo
    private(set) var warnings: [DecodeWarning] = []

    private let file: OpusFile
    private let reader: ByteReader
    private let name: String
    /// For each link, the source channel feeding each output channel (nil: the same order).
    private let channelMaps: [[Int]?]
    /// The first link whose channel count differs, and the frame where it starts.
    private let formatBreak: (link: Int, frame: Int, channels: Int)?
    /// Whether `op_pcm_seek`'s sample positions are Spool's frame positions.
    private let seeksByGranule: Bool
    /// Checks packets when they are walked instead of decoded.
    private let packetCheck: PacketCheck
    /// How many holes and undecodable packets the opening walk met at each frame position;
    /// reads expect the same, and count what they meet since the last seek.
    private let damageOnWalk: [Int: Int]
    private var damageOnRead: [Int: Int] = [:]
    /// Decoded samples in the link's own channel order, before they are put in Spool's.
    private var scratch: [Float]

    /// 120 ms at 48 kHz, the longest an Opus packet lasts: libopusfile decodes a packet
    /// straight into a buffer that holds it (opusfile.h, op_read_float).
    private static let packetFramesMax = 5760

    init(source: AudioSource) throws {
        name = source.name
        reader = try ByteReader(source: source)
        guard reader.totalSize > 0 else { throw AudioError(.emptyInput, "\(name): the input is empty") }
        file = try OpusFile(reader: reader, name: name)
        let of = file.raw
        // Spool's readers are always seekable (a regular file or bytes in memory); libopusfile
        // says otherwise only when a seek callback failed while opening.
        guard op_seekable(of) != 0 else {
            throw AudioError(.readFailed, "\(name): libopusfile could not seek in the input")
        }
        guard let first = op_head(of, 0)?.pointee else {
            throw AudioError(.corruptData, "\(name): no Opus identification header")
        }
        do {
            format = try AudioFormat(sampleRate: 48_000, channelCount: Int(first.channel_count))
        } catch let error as AudioError {
            throw AudioError(.unsupportedFormat, "\(name): \(error.message)")
        }

        let links = Int(max(1, op_link_count(of)))
        var maps: [[Int]?] = []
        var streamCounts: [Int32] = []
        var breakLink: Int?
        for link in 0..<links {
            guard let head = op_head(of, Int32(link))?.pointee else { break }
            streamCounts.append(head.stream_count)
            maps.append(Self.channelMap(family: Int(head.mapping_family), channels: Int(head.channel_count)))
            if breakLink == nil, Int(head.channel_count) != format.channelCount { breakLink = link }
        }
        channelMaps = maps
        // libopusfile never writes more than it is offered: a packet of a link with more
        // channels goes through its own buffer.
        scratch = [Float](repeating: 0, count: Self.packetFramesMax * format.channelCount)

        packetCheck = PacketCheck(streamCounts: streamCounts)
        let walk = PacketWalk(file: file, check: packetCheck, stopLink: breakLink ?? links, scratch: &scratch)
        frameCount = walk.frames
        if let breakLink {
            formatBreak = (breakLink, walk.frames, Int(op_channel_count(of, Int32(breakLink))))
        } else {
            formatBreak = nil
        }
        damageOnWalk = walk.damage
        // A read error is the input's, not the stream's: another pass may get further.
        if walk.failure != nil { isFrameCountExact = false }
        // op_pcm_total counts from granule positions; where they agree with the walk link by
        // link, op_pcm_seek lands on Spool's frames.
        let linkTotals = (0..<walk.linkFrames.count).map { Int(op_pcm_total(of, Int32($0))) }
        seeksByGranule = linkTotals == walk.linkFrames && walk.damage.isEmpty

        var tags = AudioTags()
        if let opusTags = op_tags(of, 0)?.pointee, let entries = opusTags.user_comments, let lengths = opusTags.comment_lengths {
            for i in 0..<Int(max(0, opusTags.comments)) {
                guard let entry = entries[i] else { continue }
                let text = String(decoding: UnsafeRawBufferPointer(start: entry, count: Int(max(0, lengths[i]))), as: UTF8.self)
                guard let equals = text.firstIndex(of: "=") else { continue }
                let key = String(text[..<equals])
                // Cover art is a base64 FLAC picture block, not text.
                if key.caseInsensitiveCompare("METADATA_BLOCK_PICTURE") == .orderedSame { continue }
                tags.merge(key, String(text[text.index(after: equals)...]))
            }
        }
        let measured = op_bitrate(of, -1)
        let bitRate: Int
        if seeksByGranule, breakLink == nil, measured > 0 {
            bitRate = Int(measured)
        } else if walk.frames > 0 {
            // op_bitrate divides the whole stream by its granule positions' length; count the
            // bytes of the links that play over the frames there are.
            let bytes = (0..<walk.linkFrames.count).reduce(0) { $0 + Int(max(0, op_raw_total(of, Int32($1)))) }
            bitRate = Int((Double(bytes) * 8 * 48_000 / Double(walk.frames)).rounded())
        } else {
            bitRate = 0
        }
        info = AudioFileInfo(container: "Ogg", codec: "Opus", bitRate: bitRate,
                             isVBR: packetCheck.smallest < packetCheck.largest, tags: tags)

        if let truncation = OggPageWalker.truncatedTail(reader: reader) { warnings.append(truncation) }
        if !walk.damage.isEmpty { noteDamage(at: walk.firstDamageOffset) }
        if let failure = walk.failure {
            warnings.append(DecodeWarning(kind: .truncated, byteOffset: failure.byteOffset, byteCount: 0))
        }
        try rewind()
    }

    func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int {
        let channels = format.channelCount
        let want = min(buffer.count / channels, frameCount - position)
        if want <= 0 {
            if let formatBreak, position == frameCount, buffer.count >= channels {
                throw AudioError(.formatChanged,
                    "\(name): link \(formatBreak.link + 1) of the chained stream changes from \(format) to 48000 Hz, \(formatBreak.channels) ch at frame \(formatBreak.frame); Spool stops there")
            }
            return 0
        }
        guard let base = buffer.baseAddress else { return 0 }
        var written = 0
        while written < want {
            let got = try decode(into: base + written * channels, frames: want - written, at: position + written)
            if got == 0 { break }
            written += got
        }
        if written == 0 {
            // The stream ended before the walk said it would: it changed under us, or a
            // packet the walk passed failed to decode. Say so rather than promise more.
            frameCount = position
            isFrameCountExact = false
        }
        position += written
        return written
    }

    /// Decodes up to `frames` frames into `out` in Spool's channel order; 0 at the end.
    /// `frame` is the position of the first of them.
    private func decode(into out: UnsafeMutablePointer<Float>, frames: Int, at frame: Int) throws -> Int {
        let channels = format.channelCount
        while true {
            var link: Int32 = 0
            let count = min(frames, Self.packetFramesMax)
            let got = scratch.withUnsafeMutableBufferPointer { samples in
                Int(op_read_float(file.raw, samples.baseAddress, Int32(count * channels), &link))
            }
            if got == Int(OP_HOLE) || got == Int(OP_EBADPACKET) {
                // Lost pages and undecodable packets: the walk found them and warned; only
                // damage it did not see makes the count a guess.
                damageOnRead[frame, default: 0] += 1
                if damageOnRead[frame, default: 0] > damageOnWalk[frame, default: 0] {
                    isFrameCountExact = false
                    noteDamage(at: Int(op_raw_tell(file.raw)))
                }
                continue
            }
            if got < 0 {
                throw OpusFile.failure(Int32(got), "\(name): decoding failed at frame \(frame)", call: "op_read_float")
            }
            guard got > 0, link >= 0, Int(link) < channelMaps.count,
                  Int(op_channel_count(file.raw, link)) == channels else { return 0 }
            let plane = scratch
            if let map = channelMaps[Int(link)] {
                for i in 0..<got {
                    for (target, sourceChannel) in map.enumerated() {
                        out[i * channels + target] = plane[i * channels + sourceChannel]
                    }
                }
            } else {
                plane.withUnsafeBufferPointer { out.update(from: $0.baseAddress!, count: got * channels) }
            }
            return got
        }
    }

    func seek(toFrame frame: Int) throws {
        guard frame >= 0, frame <= frameCount else {
            throw AudioError(.outOfRange, "\(name): frame \(frame) is outside 0...\(frameCount)")
        }
        if frame == frameCount, frame > 0 {
            // Nothing is read from the end; the next seek places libopusfile again.
            position = frame
            return
        }
        // Opus decoders carry state from packet to packet (CELT predicts each band's energy
        // from the last frame), so decoding that starts at a seek converges on what a decode
        // from the start produces only gradually: with libopusfile's own 80 ms of pre-roll,
        // a steady tone comes out 1.5 dB too quiet (15 dB SNR against the straight decode).
        // Decoding a further 0.5 s first brings it within float rounding (above 130 dB),
        // so that a frame position means the same samples however it was reached; a seek
        // nearer the start than that decodes from the start and matches exactly.
        let start = max(0, frame - Self.seekConvergenceFrames)
        if start == 0 {
            try rewind()
        } else if seeksByGranule {
            let status = op_pcm_seek(file.raw, ogg_int64_t(start))
            guard status == 0 else {
                throw OpusFile.failure(status, "\(name): cannot seek to frame \(frame)", call: "op_pcm_seek")
            }
        } else {
            // Granule positions that disagree with the frames there are (a hole, forged
            // positions): walk the packets from the start without decoding them.
            try rewind()
            let walked = try skip(frames: start, decoding: false)
            guard walked == start else { throw AudioError(.corruptData, "\(name): cannot seek to frame \(frame): the stream ends at \(walked)") }
        }
        let decoded = try skip(frames: frame - start, decoding: true)
        guard decoded == frame - start else {
            throw AudioError(.corruptData, "\(name): cannot seek to frame \(frame): the stream ends at \(start + decoded)")
        }
        position = frame
        damageOnRead = [:]
    }

    /// Frames decoded ahead of a seek target (see `seek(toFrame:)`).
    static let seekConvergenceFrames = 24_000

    /// Back to frame 0, as after opening.
    private func rewind() throws {
        var status = op_pcm_seek(file.raw, 0)
        if status != 0 { status = op_raw_seek(file.raw, 0) }
        guard status == 0 else { throw OpusFile.failure(status, "\(name): cannot return to the start", call: "op_pcm_seek") }
        position = 0
        damageOnRead = [:]
    }

    /// Reads and drops `frames` frames (fewer at the end); with `decoding` false, packets
    /// are only walked and checked as on opening, not decoded.
    private func skip(frames: Int, decoding: Bool) throws -> Int {
        if !decoding { op_set_decode_callback(file.raw, PacketCheck.callback, Unmanaged.passUnretained(packetCheck).toOpaque()) }
        defer { if !decoding { op_set_decode_callback(file.raw, nil, nil) } }
        var skipped = 0
        let channels = format.channelCount
        while skipped < frames {
            let count = min(frames - skipped, Self.packetFramesMax)
            var link: Int32 = 0
            let got = scratch.withUnsafeMutableBufferPointer { samples in
                Int(op_read_float(file.raw, samples.baseAddress, Int32(count * channels), &link))
            }
            if got == Int(OP_HOLE) || got == Int(OP_EBADPACKET) { continue }
            if got < 0 { throw OpusFile.failure(Int32(got), "\(name): cannot seek: decoding failed", call: "op_read_float") }
            if got == 0 { break }
            skipped += got
        }
        return skipped
    }

    /// Warns once about lost pages or packets: where the pages fail their checksum, or, when
    /// none does (a page missing altogether), where the loss showed.
    private func noteDamage(at offset: Int) {
        guard !warnings.contains(where: { $0.kind == .skippedCorruptData }) else { return }
        let regions = OggPageWalker.corruptRegions(reader: reader)
        if regions.isEmpty {
            warnings.append(DecodeWarning(kind: .skippedCorruptData, byteOffset: max(0, offset), byteCount: 0))
        }
        for region in regions {
            warnings.append(DecodeWarning(kind: .skippedCorruptData, byteOffset: region.lowerBound, byteCount: region.count))
        }
    }

    /// The source channel for each WAV-order channel, or nil when the link's order is
    /// already Spool's (mono, stereo) or has no speaker meaning (family 255, ambisonics).
    private static func channelMap(family: Int, channels: Int) -> [Int]? {
        guard family == 0 || family == 1, (3...8).contains(channels) else { return nil }
        return vorbisToWAVOrder[channels - 1]
    }

    /// For each channel count, the Vorbis-order channel feeding each WAV-order channel
    /// (RFC 7845 §5.1.1.2 uses the Vorbis I specification's §4.3.9 order; WAVE_FORMAT_EXTENSIBLE
    /// channel mask order).
    private static let vorbisToWAVOrder: [[Int]] = [
        [0], [0, 1], [0, 2, 1], [0, 1, 2, 3], [0, 2, 1, 3, 4],
        [0, 2, 1, 5, 3, 4], [0, 2, 1, 6, 5, 3, 4], [0, 2, 1, 7, 5, 6, 3, 4],
    ]
}

/// Stands in for the decoder while packets are walked rather than decoded: a packet whose
/// framing libopus would refuse (RFC 6716 §3, checked by `opus_multistream_packet_unpad` on
/// a copy) fails as it would in decoding. Notes the smallest and largest packet.
private final class PacketCheck {
    /// Opus streams per Ogg packet, for each link.
    let streamCounts: [Int32]
    private(set) var smallest = Int.max
    private(set) var largest = 0
    private var copy: [UInt8] = []

    init(streamCounts: [Int32]) { self.streamCounts = streamCounts }

    /// Whether libopus would decode the packet.
    func accepts(_ data: UnsafePointer<UInt8>, bytes: Int, link: Int) -> Bool {
        smallest = min(smallest, bytes)
        largest = max(largest, bytes)
        let streams = streamCounts.indices.contains(link) ? streamCounts[link] : 1
        if copy.count < bytes { copy = [UInt8](repeating: 0, count: bytes) }
        return copy.withUnsafeMutableBufferPointer { copy in
            copy.baseAddress!.update(from: data, count: bytes)
            return opus_multistream_packet_unpad(copy.baseAddress, Int32(clamping: bytes), streams) >= 0
        }
    }

    /// The decode callback (`op_decode_cb_func`); the samples are left as they are, nobody
    /// reads them.
    static let callback: op_decode_cb_func = { context, _, _, packet, _, _, _, link in
        guard let context, let packet = packet?.pointee, let data = packet.packet else { return OP_EBADPACKET }
        let check = Unmanaged<PacketCheck>.fromOpaque(context).takeUnretainedValue()
        return check.accepts(data, bytes: Int(max(0, packet.bytes)), link: Int(link)) ? 0 : OP_EBADPACKET
    }
}

/// One pass over every audio packet of the links before `stopLink`, through libopusfile's
/// own page and packet handling (pre-skip, end trimming, holes) with `PacketCheck` in place
/// of the decoder: the frames counted are the frames a decode produces.
private struct PacketWalk {
    private(set) var frames = 0
    private(set) var linkFrames: [Int]
    /// Holes and refused packets, by the frame position where they occur.
    private(set) var damage: [Int: Int] = [:]
    private(set) var firstDamageOffset = 0
    /// The error that ended the walk early, and where.
    private(set) var failure: (status: Int32, byteOffset: Int)?

    init(file: OpusFile, check: PacketCheck, stopLink: Int, scratch: inout [Float]) {
        let of = file.raw
        linkFrames = Array(repeating: 0, count: stopLink)
        op_set_decode_callback(of, PacketCheck.callback, Unmanaged.passUnretained(check).toOpaque())
        defer { op_set_decode_callback(of, nil, nil) }
        let capacity = Int32(clamping: scratch.count)
        while true {
            var link: Int32 = 0
            let got = scratch.withUnsafeMutableBufferPointer { Int(op_read_float(of, $0.baseAddress, capacity, &link)) }
            if got == Int(OP_HOLE) || got == Int(OP_EBADPACKET) {
                if damage.isEmpty { firstDamageOffset = Int(max(0, op_raw_tell(of))) }
                damage[frames, default: 0] += 1
                continue
            }
            if got < 0 {
                failure = (Int32(got), Int(max(0, op_raw_tell(of))))
                break
            }
            guard got > 0, link >= 0, Int(link) < stopLink else { break }
            linkFrames[Int(link)] += got
            frames += got
        }
    }
}

/// Owns one `OggOpusFile` and the reader its callbacks use.
final class OpusFile {
    let raw: OpaquePointer
    private let reader: ByteReader

    init(reader: ByteReader, name: String) throws {
        self.reader = reader
        var callbacks = Self.callbacks
        var status: Int32 = 0
        // On failure libopusfile frees what it made and leaves the stream to us: nothing
        // is owned yet, and since `raw` is never set the initializer throws before `deinit`
        // could run (a throw after full initialisation would run it).
        guard let raw = op_open_callbacks(Unmanaged.passUnretained(reader).toOpaque(), &callbacks, nil, 0, &status) else {
            throw Self.openFailure(status, name: name, prefix: reader.bytes(at: 0, count: 4096))
        }
        self.raw = raw
    }

    deinit { op_free(raw) }

    /// libopusfile's I/O, through a `ByteReader`.
    static let callbacks = OpusFileCallbacks(
        read: { stream, buffer, count in OpusFile.read(stream, buffer, count) },
        seek: { stream, offset, whence in OpusFile.seek(stream, offset, whence) },
        tell: { stream in OpusFile.tell(stream) },
        close: nil)

    /// `op_read_func`: up to `count` bytes, 0 at the end, −1 on an error; any `count` is safe.
    static func read(_ stream: UnsafeMutableRawPointer?, _ buffer: UnsafeMutablePointer<UInt8>?, _ count: Int32) -> Int32 {
        guard let stream, let buffer, count > 0 else { return 0 }
        let got = Unmanaged<ByteReader>.fromOpaque(stream).takeUnretainedValue().read(into: buffer, count: Int(count))
        return got < 0 ? -1 : Int32(clamping: got)
    }

    /// `op_seek_func`: 0 when the position moved, −1 otherwise; any offset is safe.
    static func seek(_ stream: UnsafeMutableRawPointer?, _ offset: Int64, _ whence: Int32) -> Int32 {
        guard let stream else { return -1 }
        let reader = Unmanaged<ByteReader>.fromOpaque(stream).takeUnretainedValue()
        // An offset larger than the input lands outside it whatever it is added to; refusing
        // it here keeps the reader's arithmetic (a base within the input plus the offset)
        // far from overflow.
        let limit = Int64(reader.totalSize)
        guard offset >= -limit, offset <= limit else { return -1 }
        return reader.seek(Int(offset), whence: whence) < 0 ? -1 : 0
    }

    /// `op_tell_func`: the position in the input.
    static func tell(_ stream: UnsafeMutableRawPointer?) -> Int64 {
        guard let stream else { return -1 }
        return Int64(Unmanaged<ByteReader>.fromOpaque(stream).takeUnretainedValue().position)
    }

    /// The `AudioError` for a status libopusfile returned while decoding or seeking.
    static func failure(_ status: Int32, _ message: String, call: String) -> AudioError {
        let code: AudioError.Code = switch status {
        case OP_EREAD: .readFailed
        case OP_EFAULT, OP_EINVAL: .libraryFailure
        default: .corruptData
        }
        return AudioError(code, "\(message) (\(describe(status)))",
                          underlying: LibraryStatus(library: "libopusfile", code: status, text: call))
    }

    /// The `AudioError` for each way `op_open_callbacks` fails (opusfile.h lists them).
    private static func openFailure(_ status: Int32, name: String, prefix: [UInt8]) -> AudioError {
        let head = OpusHeadFields(prefix)
        let (code, what): (AudioError.Code, String) = switch status {
        case OP_EREAD: (.readFailed, "reading the input failed while opening it")
        case OP_EFAULT: (.libraryFailure, "libopusfile ran out of memory or failed internally while opening it")
        case OP_EIMPL: (.unsupportedFormat, head.map { "the stream uses channel mapping family \($0.family), which libopusfile does not implement" }
                        ?? "the stream uses a feature libopusfile does not implement")
        case OP_EINVAL: (.libraryFailure, "the input could be seeked but not told its position")
        case OP_ENOTFORMAT:
            (.unsupportedFormat, OggPayload.isOgg(prefix) ? "\(OggPayload.describe(prefix)), not Opus" : "not an Ogg stream at all")
        case OP_EBADHEADER: (.corruptData, head.map { "its Opus header is malformed (\($0.channels) channels, mapping family \($0.family)) or a required header is missing" }
                             ?? "a required Opus header packet is malformed or missing")
        case OP_EVERSION: (.unsupportedFormat, head.map { "its Opus header has version \($0.version), which no supported specification describes" }
                           ?? "its Opus header has an unsupported version")
        case OP_EBADLINK: (.corruptData, "a link of the stream could not be found again after seeking (damaged pages)")
        case OP_EBADTIMESTAMP: (.corruptData, "the first or last granule position of a link is impossible (RFC 7845 §4)")
        default: (.libraryFailure, "libopusfile could not open it")
        }
        return AudioError(code, "\(name): \(what)",
                          underlying: LibraryStatus(library: "libopusfile", code: status, text: "op_open_callbacks"))
    }

    private static func describe(_ status: Int32) -> String {
        switch status {
        case OP_HOLE: "a hole in the pages"
        case OP_EREAD: "a read failed"
        case OP_EFAULT: "an internal libopusfile failure"
        case OP_EINVAL: "an invalid request"
        case OP_EBADPACKET: "an undecodable packet"
        case OP_EBADLINK: "data seen before could not be found again"
        case OP_ENOSEEK: "the input cannot seek"
        case OP_EBADTIMESTAMP: "an impossible granule position"
        default: "libopusfile status \(status)"
        }
    }
}

/// The fields of an `OpusHead` packet on the first page, read directly for error messages
/// (RFC 7845 §5.1): version, channel count, channel mapping family.
private struct OpusHeadFields {
    let version: Int
    let channels: Int
    let family: Int

    init?(_ prefix: [UInt8]) {
        guard OggPayload.streams(in: prefix).first == .opus else { return nil }
        let body = 27 + Int(prefix[26])
        guard prefix.count >= body + 19 else { return nil }
        version = Int(prefix[body + 8])
        channels = Int(prefix[body + 9])
        family = Int(prefix[body + 18])
    }
}

extension DecoderFactory {
    /// Ogg Opus through libopusfile; claims Ogg streams whose first packet is `OpusHead`.
    public static let opus = DecoderFactory(
        name: "opus",
        typeHints: ["opus", "ogg", "oga", "audio/opus", "audio/ogg"],
        sniff: { OggPayload.streams(in: $0).contains(.opus) },
        open: { try OpusDecoder(source: $0) })
}
