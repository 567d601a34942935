import SpoolCore

/// Parses an Ogg Vorbis or Ogg Opus stream from bytes in any pieces.
///
/// Pages are found by their capture pattern and kept only when their checksum matches;
/// bytes that are no page are skipped up to the next `OggS`. Packets are joined across pages
/// as libogg joins them (a lost page drops the packet it cut). Only the first logical stream
/// of each link is followed: a multiplexed video stream's pages are passed over.
///
/// - Vorbis: the magic cookie holds the three header packets, each after its 32-bit
///   little-endian length (`VorbisStreamHeaders.cookie`). A packet's frame count comes from
///   its block size and the previous one's (Vorbis I §1.3.2); the first packet after the
///   headers, or after a discontinuity, decodes to none.
/// - Opus: the magic cookie is the `OpusHead` packet; its pre-skip is the priming. A
///   packet's frame count comes from its TOC byte.
///
/// Frame counts are what the file decoders keep: on a link's last page, the granule
/// position cuts the last packets as libvorbis and libopusfile cut them, so a packet there
/// may count fewer frames than it decodes to and its decoder drops the rest. A page's
/// packets are delivered once the page is whole, so the cut is known before the packets are.
///
/// Chained links of the same format follow as one stream: their header packets are
/// delivered as packets of no frames (a decoder starts the link afresh on them). A link that
/// changes the sample rate or channel count, or the codec, ends the stream: its first header
/// packet is delivered, so that the decoder can report the change as `VorbisDecoder` does,
/// and nothing after it.
///
/// Damage goes to `warnings` as `VorbisDecoder` reports it: bytes that are no valid page, pages
/// lost (sequence numbers that jump), a stream cut inside a page or without its last page.
/// After lost Opus pages, libopusfile's behaviour is followed: the positions go on from the
/// next granule position and 80 ms are discarded while the decoder converges.
///
/// `duration` is an estimate from the bytes so far until the stream ends (an Ogg stream does
/// not say how long it is); at `finish()` it is the exact frame count. Seeks are exact to
/// pages already parsed and an estimate from the bit rate beyond.
///
/// Not followed: a Vorbis stream whose first granule position trims its beginning (libvorbis
/// then drops frames inside the first page's last packet; no fixture or common encoder
/// makes one) plays those frames.
struct OggStreamParser: StreamFormatParser {
    /// The codec of the followed stream.
    private enum Codec { case vorbis, opus }

    /// What the parser knows of each link, for seeking back into it.
    private struct Link {
        /// Offset of the link's first page.
        let offset: Int
        /// Its followed stream's serial number.
        let serialNumber: UInt32
        /// Untrimmed frame of the link's first frame, when known.
        var startFrame: Int?
        /// The granule position that stands for `startFrame`, once a page has one.
        var granuleOrigin: Int64?
    }

    /// A page to resume decoding from after a seek.
    private struct SeekEntry {
        /// The page's offset.
        let offset: Int
        /// Untrimmed frame of the first frame the packets from this page decode to after a reset.
        let frame: Int
        /// The index of its link in `links`.
        let link: Int
    }

    /// Most bytes kept of a header packet: a comment header's text (cover art beyond it is dropped).
    static let headerKeepLimit = 1 << 20
    /// Most bytes of an audio packet.
    static let audioKeepLimit = 4 << 20
    /// Frames an Opus decoder decodes ahead of a seek target: not libopusfile's 80 ms, after
    /// which a steady tone is still 1.5 dB off, but the 0.5 s `OpusDecoder` decodes, after
    /// which the samples are those of a decode from the start to float rounding.
    static let opusPreRoll = max(3840, OpusDecoder.seekConvergenceFrames)

    /// The codec of the followed stream.
    private let codec: Codec
    /// `.oggVorbis` or `.oggOpus`, as the sniffer found.
    private let fileFormat: StreamFileFormat
    /// Finds the pages.
    private var reader = OggStreamPageReader()
    /// Joins the followed stream's pages into packets.
    private var assembler = OggPacketAssembler(keepLimit: headerKeepLimit)

    // The link being parsed.
    /// Every link met so far, in order.
    private var links: [Link] = []
    /// The link being parsed (−1 before the first page).
    private var linkIndex = -1
    /// The serial number of the stream followed in that link.
    private var serial: UInt32?
    /// Streams of the link other than the one followed.
    private var others: Set<UInt32> = []
    /// Whether only first pages have come since the link began (more streams may begin).
    private var inFirstPages = true
    /// The link's last page (end-of-stream flag) has come.
    private var linkEnded = false
    /// The link's header packets so far.
    private var headerPackets: [[UInt8]] = []
    /// All the link's header packets have come.
    private var headersDone = false
    /// Whether header packets are delivered as packets (every link but the first, parsed first).
    private var deliverHeaders = false
    /// Whether the first link's headers have set the properties and packets have begun.
    private var streamBegun = false
    /// The next page follows a discontinuity: a first page there begins a link whatever its serial number.
    private var resyncing = false
    /// The headers of the link whose audio is parsed (Vorbis).
    private var vorbis: VorbisStreamHeaders?
    /// The first link's Vorbis headers, those the magic cookie carries.
    private(set) var checkedVorbisHeaders: VorbisStreamHeaders?
    /// The first link's `OpusHead` (Opus).
    private var opusHead: OpusHeadInfo?
    /// A link that changes format was met at this offset: nothing from it on plays.
    private var stopOffset: Int?

    // Frames.
    /// The block size of the last audio packet libvorbis took, since the last reset.
    private var previousBlock: Int?
    /// libvorbis's granule position and sample count since its last reset (`vorbis_dsp_state`).
    private var vorbisGranule: Int64?
    /// Samples libvorbis has given since its last reset (−1 before its first block).
    private var vorbisSamples: Int64 = -1
    /// The granule position of the last page of the link with a packet ending on it.
    private var lastGranule: Int64?
    /// Frames still to drop from the front of the next Opus packets: a later link's
    /// pre-skip, or the 80 ms libopusfile discards after lost pages.
    private var pendingPreSkip = 0
    /// Pages of the followed Opus stream were lost before the next page.
    private var opusHole = false
    /// Frames the positions jumped over at lost Opus pages (their granule positions say how many).
    private var framesLost = 0
    /// Frames libopusfile discards after lost pages while its decoder converges again
    /// (op_fetch_and_process_page); `OpusPacketDecoder` drops the same when a packet starts
    /// later than the one before it ended.
    static let opusHoleDiscard = 3840
    /// The untrimmed frame of the next packet's first frame, when known.
    private var nextFrame: Int? = 0
    /// The first link's pre-skip (Opus); 0 for Vorbis.
    private var primingFrames = 0
    /// Frames the links' last granule positions cut.
    private var endTrimmed = 0

    // What has been parsed in order (not after a seek back).
    /// The end of the last page parsed in order.
    private var parsedUpTo = 0
    /// The pages a seek can resume from, in stream order.
    private var seekEntries: [SeekEntry] = []
    /// Audio packets delivered.
    private var packetCount = 0
    /// Bytes of the audio packets delivered.
    private var audioBytes = 0
    /// Where the first audio page begins.
    private var firstAudioOffset: Int?
    /// Where the last audio page ends.
    private var audioEnd = 0
    /// The largest audio packet's size.
    private var largestPacket = 0
    /// Audio pages parsed, to refine the estimates now and then.
    private var audioPages = 0
    /// The untrimmed frame after the last packet parsed in order.
    private var framesParsed = 0
    /// Frames per second (48 kHz for Opus).
    private var sampleRate = 48_000.0
    /// The Vorbis identification header's nominal bit rate, 0 when it has none.
    private var nominalBitRate = 0
    /// Pages of the followed stream after lost ones (their sequence numbers jump), in order.
    private var pagesAfterHoles: [Int] = []
    /// The stream's last page was not marked as one (`finish()` found it so).
    private var endOffsetWithoutLastPage: Int?
    /// Most lost-page reports kept.
    private static let holeLimit = 256

    /// Makes the parser for the codec the sniffer found on the first page.
    /// - Throws: `.unsupportedFormat` for a format that is not Ogg Vorbis or Ogg Opus.
    init(format: StreamFileFormat) throws {
        switch format {
        case .oggVorbis: codec = .vorbis
        case .oggOpus: codec = .opus
        default: throw AudioError(.unsupportedFormat, "the Ogg parser reads Vorbis and Opus, not \(format.rawValue)")
        }
        fileFormat = format
    }

    /// The format's name, for messages.
    private var name: String { codec == .vorbis ? "Ogg Vorbis" : "Ogg Opus" }

    // MARK: - StreamFormatParser

    /// Takes every whole page held.
    mutating func parse(_ input: inout StreamInput, _ events: inout StreamEvents) throws {
        while let page = reader.next(&input) {
            try handle(page, &events)
        }
    }

    /// The damage found so far, in the file decoders' terms.
    var warnings: [DecodeWarning] {
        var warnings: [DecodeWarning] = []
        if let cut = reader.cutPage {
            warnings.append(DecodeWarning(kind: .truncated, byteOffset: cut.offset, byteCount: cut.missing))
        } else if let end = endOffsetWithoutLastPage {
            warnings.append(DecodeWarning(kind: .truncated, byteOffset: end, byteCount: 0))
        }
        for gap in reader.gaps where stopOffset.map({ gap.lowerBound < $0 }) ?? true {
            warnings.append(DecodeWarning(kind: .skippedCorruptData, byteOffset: gap.lowerBound, byteCount: gap.count))
        }
        for offset in pagesAfterHoles where !reader.gaps.contains(where: { $0.upperBound == offset }) {
            warnings.append(DecodeWarning(kind: .missingData, byteOffset: offset, byteCount: 0,
                                          detail: "pages of the \(name) stream are missing (their sequence numbers jump)"))
        }
        return warnings
    }

    /// The counts the end makes exact: packets, bytes, the trims and the duration.
    /// - Throws: `.truncated` for a stream that ends before its headers do.
    mutating func finish(_ input: inout StreamInput, _ events: inout StreamEvents) throws {
        reader.dropRest(&input)
        if reader.cutPage == nil, stopOffset == nil, streamBegun, !linkEnded { endOffsetWithoutLastPage = input.offset }
        guard streamBegun else {
            if linkIndex < 0 { throw AudioError(.truncated, "the \(name) stream ends before its first page") }
            throw AudioError(.truncated, "the \(name) stream ends inside its header packets")
        }
        events.beginPackets()
        let end = max(0, (nextFrame ?? 0) - primingFrames)
        let total = max(0, end - framesLost)
        events.set(.audioDataPacketCount, \.audioDataPacketCount, packetCount)
        if let first = firstAudioOffset { events.set(.audioDataByteCount, \.audioDataByteCount, max(0, audioEnd - first)) }
        events.set(.packetTableInfo, \.packetTableInfo,
                   StreamPacketTableInfo(primingFrames: primingFrames, remainderFrames: endTrimmed, validFrames: end))
        events.set(.duration, \.duration,
                   StreamDuration(frames: total, seconds: Double(total) / sampleRate, basis: .frameCount))
        if total > 0 {
            let average = Double(audioBytes) * 8 * sampleRate / Double(total)
            if average.isFinite, average < 1e12 { events.set(.bitRate, \.bitRate, Int(average.rounded())) }
        }
    }

    /// The page to play `frame` from: exact among the pages parsed in order (for Opus,
    /// `opusPreRoll` earlier), else an estimate from the bit rate.
    /// - Throws: `.unsupported` when there is no page parsed and no bit rate.
    func seekPoint(toFrame frame: Int, _ properties: StreamProperties) throws -> StreamSeekPoint {
        let target = frame.addingClamped(primingFrames)
        let want = codec == .opus ? target - Self.opusPreRoll : target
        let parsedEnd = framesParsed
        if !seekEntries.isEmpty, target <= parsedEnd || properties.duration?.isEstimated == false {
            var chosen = seekEntries[0]
            var low = 0, high = seekEntries.count - 1
            while low <= high {
                let middle = (low + high) / 2
                if seekEntries[middle].frame <= want {
                    chosen = seekEntries[middle]
                    low = middle + 1
                } else {
                    high = middle - 1
                }
            }
            if chosen.frame > want { chosen = seekEntries[0] }
            // A page of another link than the one the decoder has the headers of (or of this
            // link before all its headers came): from that link's first page, so that its
            // headers come first.
            if chosen.link != linkIndex || !headersDone, let start = links[chosen.link].startFrame {
                let link = links[chosen.link]
                return StreamSeekPoint(byteOffset: link.offset, frame: max(0, start - primingFrames), targetFrame: frame, isEstimated: false)
            }
            return StreamSeekPoint(byteOffset: chosen.offset, frame: max(0, chosen.frame - primingFrames), targetFrame: frame,
                                   isEstimated: false)
        }
        guard let rate = properties.bitRate ?? (nominalBitRate > 0 ? nominalBitRate : nil), rate > 0,
              let dataOffset = properties.dataOffset else {
            throw AudioError(.unsupported, "the \(name) stream has no bit rate to estimate where frame \(frame) lies")
        }
        let bytes = Double(frame) / sampleRate * Double(rate) / 8
        let offset = bytes < Double(Int.max / 4) ? dataOffset.addingClamped(Int(bytes)) : Int.max / 4
        return StreamSeekPoint(byteOffset: offset, frame: frame, targetFrame: frame, isEstimated: true)
    }

    /// Drops the packet in progress and libvorbis's state; the next packets' frames come
    /// from the point (exact) or from the next granule position.
    mutating func discontinuity(at point: StreamSeekPoint?) {
        assembler.restart()
        reader.restart()
        previousBlock = nil
        vorbisGranule = nil
        vorbisSamples = -1
        lastGranule = nil
        pendingPreSkip = 0
        nextFrame = nil
        if let point, !point.isEstimated {
            // The point came from a page (or a link's first page) this parser recorded; its
            // untrimmed frame is kept there (a point's frame is never below 0).
            if let entry = seekEntries.last(where: { $0.offset == point.byteOffset }) {
                nextFrame = entry.frame
            } else if let link = links.first(where: { $0.offset == point.byteOffset }) {
                nextFrame = link.startFrame
            } else {
                nextFrame = point.frame + primingFrames
            }
        }
        if let stop = stopOffset, let point, point.byteOffset < stop { stopOffset = nil }
        resyncing = true
        inFirstPages = false
    }

    // MARK: - Pages

    /// One valid page: which link and stream it belongs to, then its packets.
    private mutating func handle(_ page: OggStreamPage, _ events: inout StreamEvents) throws {
        guard stopOffset == nil else { return }
        let ordered = page.offset >= parsedUpTo
        if ordered { parsedUpTo = page.end }
        let resynced = resyncing
        resyncing = false
        if page.isFirst, page.serialNumber != serial || resynced {
            if linkIndex < 0 {
                beginLink(page, known: nil)
            } else if inFirstPages, !resynced, !linkEnded || others.contains(page.serialNumber) {
                // Another logical stream of this link (a multiplexed video stream): passed over.
                others.insert(page.serialNumber)
                return
            } else if let known = links.firstIndex(where: { $0.offset == page.offset }) {
                beginLink(page, known: known)
            } else {
                beginLink(page, known: nil)
            }
        } else if page.serialNumber != serial {
            inFirstPages = false
            return
        } else if !page.isFirst {
            inFirstPages = false
        }
        let holesBefore = assembler.holes
        let packets = assembler.packets(of: page)
        if assembler.holes > holesBefore {
            if ordered, pagesAfterHoles.count < Self.holeLimit { pagesAfterHoles.append(page.offset) }
            if codec == .opus, headersDone { opusHole = true }
        }
        var audio: [OggPacketAssembler.Packet] = []
        for packet in packets {
            if headersDone {
                audio.append(packet)
            } else {
                try header(packet, page: page, &events)
                if stopOffset != nil { return }
                if headersDone { assembler.keepLimit = Self.audioKeepLimit }
            }
        }
        if !audio.isEmpty { try deliver(audio, of: page, ordered: ordered, &events) }
        if page.isLast { linkEnded = true }
    }

    /// A first page that begins a link (the first, or a chained one).
    private mutating func beginLink(_ page: OggStreamPage, known: Int?) {
        if let known {
            linkIndex = known
            deliverHeaders = streamBegun
            if let start = links[known].startFrame { nextFrame = start }
        } else {
            linkIndex = links.count
            links.append(Link(offset: page.offset, serialNumber: page.serialNumber, startFrame: nextFrame))
            deliverHeaders = streamBegun
        }
        serial = page.serialNumber
        others = []
        inFirstPages = true
        linkEnded = false
        headerPackets = []
        headersDone = false
        previousBlock = nil
        vorbisGranule = nil
        vorbisSamples = -1
        lastGranule = nil
        assembler.restart()
        assembler.keepLimit = Self.headerKeepLimit
    }

    // MARK: - Headers

    /// One header packet: checked, its properties set (the first link's) or delivered (a
    /// later link's), the stream stopped at a link it cannot go on with.
    private mutating func header(_ packet: OggPacketAssembler.Packet, page: OggStreamPage, _ events: inout StreamEvents) throws {
        let index = headerPackets.count
        if index == 0, OggPayload(firstPacket: packet.bytes) != (codec == .vorbis ? .vorbis : .opus) {
            // A chained link of another codec: the stream ends here.
            stop(packet, page: page, &events)
            return
        }
        if packet.length > packet.bytes.count, index != 1 {
            try refuse("header packet \(index + 1) is longer than \(Self.headerKeepLimit) bytes", packet, page: page, &events)
            return
        }
        let cut = packet.length > packet.bytes.count
        // libvorbis refuses a comment header cut short: one with no comments stands in.
        let bytes = cut && codec == .vorbis ? VorbisStreamHeaders.emptyCommentHeader : packet.bytes
        headerPackets.append(bytes)
        switch codec {
        case .vorbis:
            if index == 0 {
                do {
                    let id = try VorbisIdentification(packet: packet.bytes)
                    if linkIndex > 0 || deliverHeaders, let current = vorbis?.identification,
                       current.sampleRate != id.sampleRate || current.channels != id.channels {
                        stop(packet, page: page, &events)
                        return
                    }
                } catch {
                    try refuse("\(error)", packet, page: page, &events)
                    return
                }
            }
            if deliverHeaders { events.packet(StreamPacket(byteOffset: packet.byteOffset, bytes: bytes, frameCount: 0, startFrame: nextFrame)) }
            if index == 1, !deliverHeaders {
                events.set(.tags, \.tags, oggComments(packet.bytes, skipping: 7, excludingPictures: false))
            }
            guard index == 2 else { return }
            let headers: VorbisStreamHeaders
            do {
                headers = try VorbisStreamHeaders(packets: headerPackets)
            } catch {
                if deliverHeaders {
                    stopOffset = page.offset  // the decoder reports the bad header
                    return
                }
                throw AudioError(.corruptData, "the Ogg Vorbis stream cannot be decoded: \(error)")
            }
            vorbis = headers
            if !deliverHeaders {
                if checkedVorbisHeaders == nil { checkedVorbisHeaders = headers }
                let id = headers.identification
                sampleRate = Double(id.sampleRate)
                nominalBitRate = max(0, id.bitrateNominal)
                events.set(.magicCookie, \.magicCookie, headers.cookie)
                try beginStream(channels: id.channels, page: page, packet: packet, &events)
            }
            headersDone = true
        case .opus:
            if index == 0 {
                let head: OpusHeadInfo
                do {
                    head = try OpusHeadInfo(packet: packet.bytes)
                } catch let error as AudioError {
                    if deliverHeaders {
                        stop(packet, page: page, &events)
                        return
                    }
                    throw AudioError(error.code, "the Ogg Opus stream cannot be decoded: \(error.message)")
                }
                if deliverHeaders {
                    if let current = opusHead, current.channels != head.channels {
                        stop(packet, page: page, &events)
                        return
                    }
                    if linkIndex > 0 { pendingPreSkip = head.preSkip }
                    events.packet(StreamPacket(byteOffset: packet.byteOffset, bytes: packet.bytes, frameCount: 0, startFrame: nextFrame))
                } else {
                    opusHead = head
                    primingFrames = head.preSkip
                }
                return
            }
            if !deliverHeaders {
                events.set(.tags, \.tags, oggComments(packet.bytes, skipping: 8, excludingPictures: true))
                events.set(.magicCookie, \.magicCookie, headerPackets[0])
                try beginStream(channels: opusHead?.channels ?? 1, page: page, packet: packet, &events)
            }
            headersDone = true
        }
    }

    /// The first link's headers are read: the properties the headers give, then packets.
    private mutating func beginStream(channels: Int, page: OggStreamPage, packet: OggPacketAssembler.Packet,
                                      _ events: inout StreamEvents) throws {
        let codec: StreamDataFormat.Codec = self.codec == .vorbis ? .vorbis : .opus
        events.set(.fileFormat, \.fileFormat, fileFormat)
        events.set(.dataFormat, \.dataFormat,
                   StreamDataFormat(sampleRate: sampleRate, channelCount: channels, codec: codec, framesPerPacket: 0, bytesPerPacket: 0))
        let audioFollows = packet.isLastOnPage == false
        events.set(.dataOffset, \.dataOffset, audioFollows ? page.offset : page.end)
        events.set(.packetTableInfo, \.packetTableInfo,
                   StreamPacketTableInfo(primingFrames: primingFrames, remainderFrames: 0, validFrames: nil))
        if nominalBitRate > 0 { events.set(.bitRate, \.bitRate, nominalBitRate) }
        events.set(.duration, \.duration, StreamDuration(frames: nil, seconds: 0, basis: .estimate))
        events.beginPackets()
        streamBegun = true
    }

    /// A header the stream cannot go on from: an error in the first link; in a later one, the
    /// end of the stream (the decoder reports it, as `VorbisDecoder` does).
    private mutating func refuse(_ problem: String, _ packet: OggPacketAssembler.Packet, page: OggStreamPage,
                                 _ events: inout StreamEvents) throws {
        guard deliverHeaders else { throw AudioError(.corruptData, "the \(name) stream cannot be decoded: \(problem)") }
        stop(packet, page: page, &events)
    }

    /// Ends the stream at a link that does not continue it, delivering that link's first
    /// packet for the decoder to report.
    private mutating func stop(_ packet: OggPacketAssembler.Packet, page: OggStreamPage, _ events: inout StreamEvents) {
        stopOffset = page.offset
        guard events.properties.readyToProducePackets else { return }
        events.packet(StreamPacket(byteOffset: packet.byteOffset, bytes: packet.bytes, frameCount: 0, startFrame: nextFrame))
    }

    // MARK: - Audio

    /// The audio packets that end on `page`, timed and cut by its granule position.
    private mutating func deliver(_ packets: [OggPacketAssembler.Packet], of page: OggStreamPage, ordered: Bool,
                                  _ events: inout StreamEvents) throws {
        let granule = page.granulePosition
        if codec == .vorbis, vorbisGranule == nil, previousBlock == nil, let frame = nextFrame, linkIndex >= 0,
           let origin = links[linkIndex].granuleOrigin, let start = links[linkIndex].startFrame {
            // After a seek: libvorbis's granule position, as a decode from the link's start
            // would have it, so that the last page is cut as it would be.
            vorbisGranule = origin.addingReportingOverflow(Int64(frame &- start)).partialValue
        }
        var counts: [Int] = []
        var kept: [OggPacketAssembler.Packet] = []
        for packet in packets where packet.length == packet.bytes.count {
            let eos = page.isLast && packet.isLastOnPage
            let packetGranule: Int64 = packet.isLastOnPage ? granule : -1
            let frames: Int
            switch codec {
            case .vorbis:
                frames = vorbisFrames(packet.bytes, granule: packetGranule, endOfStream: eos)
            case .opus:
                frames = opusPacketFrames(packet.bytes)
            }
            counts.append(frames)
            kept.append(packet)
        }
        var lostBefore = 0
        if codec == .opus, opusHole {
            opusHole = false
            // libopusfile after lost pages: the positions go on from the next granule
            // position; an end page is dropped (it cannot be cut right), and otherwise 80 ms
            // are discarded while the decoder converges again.
            let total = counts.reduce(0, +)
            if granule >= 0, let frame = nextFrame, linkIndex >= 0, let origin = links[linkIndex].granuleOrigin,
               let start = links[linkIndex].startFrame {
                let (span, overflow) = granule.subtractingReportingOverflow(origin)
                if !overflow, span < Int64(Int.max / 4) {
                    let resumed = start.addingClamped(Int(span)) - total
                    if resumed > frame { lostBefore = resumed - frame }
                }
            }
            if lostBefore > 0 {
                if page.isLast {
                    for k in counts.indices { counts[k] = 0 }
                } else {
                    pendingPreSkip += Self.opusHoleDiscard
                }
            }
        }
        if codec == .opus, page.isLast, granule >= 0, lostBefore == 0 {
            // libopusfile: the last page's packets end at its granule position, counted
            // from the previous page's (op_fetch_and_process_page).
            let total = counts.reduce(0, +)
            let from = lastGranule ?? max(0, granule - Int64(total))
            var room = Int(clamping: max(0, granule &- from))
            for k in counts.indices {
                let cut = min(counts[k], room)
                endTrimmed += counts[k] - cut
                counts[k] = cut
                room -= cut
            }
        }
        if codec == .opus, pendingPreSkip > 0 {
            for k in counts.indices {
                let drop = min(pendingPreSkip, counts[k])
                counts[k] -= drop
                pendingPreSkip -= drop
            }
        }
        if granule >= 0 { lastGranule = granule }
        let pageFrames = counts.reduce(0, +)
        let link = linkIndex
        // Where the page's packets start: counted on from the packets before, or after a
        // discontinuity, from the granule position.
        if nextFrame == nil, granule >= 0, link >= 0, let origin = links[link].granuleOrigin, let start = links[link].startFrame {
            let (span, overflow) = granule.subtractingReportingOverflow(origin)
            if !overflow, span >= 0, span < Int64(Int.max / 4) { nextFrame = start.addingClamped(Int(span)) - pageFrames }
        }
        if ordered, let frame = nextFrame, let index = kept.firstIndex(where: { $0.byteOffset >= page.bodyOffset }) {
            let before = counts[..<index].reduce(0, +)
            let resume = frame.addingClamped(before + (codec == .vorbis ? counts[index] : 0))
            if seekEntries.last.map({ $0.frame <= resume && $0.offset < page.offset }) ?? true {
                seekEntries.append(SeekEntry(offset: page.offset, frame: resume, link: link))
            }
        }
        if lostBefore > 0, let frame = nextFrame {
            // Positions come from granule positions here: they saturate rather than trap.
            nextFrame = frame.addingClamped(lostBefore)
            if ordered { framesLost = framesLost.addingClamped(lostBefore) }
        }
        for (packet, frames) in zip(kept, counts) {
            events.packet(StreamPacket(byteOffset: packet.byteOffset, bytes: packet.bytes, frameCount: frames, startFrame: nextFrame))
            if let frame = nextFrame { nextFrame = frame.addingClamped(frames) }
            if ordered {
                packetCount += 1
                audioBytes += packet.bytes.count
                if packet.bytes.count > largestPacket {
                    largestPacket = packet.bytes.count
                    events.set(.maximumPacketSize, \.maximumPacketSize, largestPacket)
                }
            }
        }
        if granule >= 0, link >= 0, links[link].granuleOrigin == nil, let end = nextFrame, let start = links[link].startFrame {
            links[link].granuleOrigin = granule.subtractingReportingOverflow(Int64(end &- start)).partialValue
        }
        guard ordered else { return }
        if let frame = nextFrame { framesParsed = max(framesParsed, frame) }
        if firstAudioOffset == nil { firstAudioOffset = page.offset }
        audioEnd = page.end
        audioPages += 1
        if audioPages % 16 == 1, let frame = nextFrame {
            // An estimate from what has come so far: the stream does not say how long it is.
            let frames = max(0, frame - primingFrames)
            events.set(.duration, \.duration, StreamDuration(frames: nil, seconds: Double(frames) / sampleRate, basis: .estimate))
            if nominalBitRate <= 0, frames > 0 {
                let average = Double(audioBytes) * 8 * sampleRate / Double(frames)
                if average.isFinite, average < 1e12 { events.set(.bitRate, \.bitRate, Int(average.rounded())) }
            }
        }
    }

    /// The frames libvorbis gives for a packet, as `vorbis_synthesis_blockin` counts them,
    /// less what it trims at the end of the stream by the last granule position.
    private mutating func vorbisFrames(_ packet: [UInt8], granule: Int64, endOfStream: Bool) -> Int {
        guard let headers = vorbis, let block = headers.blockSize(of: packet) else { return 0 }
        let frames: Int
        if let previous = previousBlock {
            frames = previous / 4 + block / 4
            vorbisSamples += Int64(frames)
        } else {
            frames = 0
            vorbisSamples = 0
        }
        previousBlock = block
        var trim: Int64 = 0
        if granule < 0 {
            if let running = vorbisGranule { vorbisGranule = running.addingReportingOverflow(Int64(frames)).partialValue }
        } else if vorbisGranule == nil {
            vorbisGranule = granule
            // The only audio page: its granule position cuts the end (Vorbis I §A.2).
            if endOfStream, vorbisSamples > granule { trim = vorbisSamples - granule }
        } else if let running = vorbisGranule {
            // Granule positions come from the stream: near Int64.max they must not trap.
            let (advanced, overflow) = running.addingReportingOverflow(Int64(frames))
            if endOfStream, !overflow, advanced > granule { trim = advanced.subtractingReportingOverflow(granule).partialValue }
            vorbisGranule = granule
        }
        let cut = Int(min(trim, Int64(frames)))
        endTrimmed += cut
        return frames - cut
    }
}

