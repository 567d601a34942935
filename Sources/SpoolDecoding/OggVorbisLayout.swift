import SpoolCore

/// The structure of an Ogg Vorbis input, found by one linear walk of its pages before
/// libvorbisfile sees any of it: the chained links and their byte ranges, each link's Vorbis
/// headers (checked), and how many frames each link decodes to.
///
/// A link's frame count is exact when its pages are regular: checksums valid, no page
/// missing, `header_type` flags where they belong, every granule position consistent with
/// the block sizes of the packets before it and the last one trimming no more than the last
/// packet holds (Vorbis I specification §A.2). libvorbis then produces exactly that many
/// frames. Otherwise the count is an estimate, and decoding is bounded by what the packets
/// can hold at most, whatever the granule positions claim.
struct OggVorbisLayout {
    struct Link {
        /// From the link's first page to the next link's first page (or the end).
        let byteRange: Range<Int>
        /// The codecs of the link's logical streams, in order.
        let codecs: [OggPayload]
        /// The link's Vorbis stream, when it has one.
        let vorbis: VorbisStream?
    }

    struct VorbisStream {
        let serialNumber: UInt32
        /// nil when the identification header itself is invalid.
        let identification: VorbisIdentification?
        /// What is wrong with the headers, when something is.
        let headerProblem: String?
        /// Frames decoding produces (exact) or is expected to produce (estimate).
        let frames: Int
        let isExact: Bool
        /// Most frames libvorbis can produce from this stream's packets.
        let frameBound: Int
        /// Why the count is not exact, for messages and tests.
        let irregularities: [String]
        /// Offsets of the pages that follow a missing page (sequence numbers jump).
        let pagesAfterHoles: [Int]
    }

    let links: [Link]
    /// Bytes outside any valid page.
    let gaps: [Range<Int>]
    /// Valid pages found, whether or not they belong to a link.
    let pageCount: Int

    init(reader: ByteReader) {
        var walker = OggPageWalker(reader: reader)
        var links: [Link] = []
        var builder: LinkBuilder?
        var pageCount = 0
        while let page = walker.next() {
            pageCount += 1
            if page.isFirst, builder.map({ !$0.acceptsFirstPage(page) }) ?? true {
                if let finished = builder?.finish(end: page.offset) { links.append(finished) }
                builder = LinkBuilder(start: page.offset)
            }
            builder?.add(page)
        }
        if let finished = builder?.finish(end: reader.totalSize) { links.append(finished) }
        self.links = links
        self.pageCount = pageCount
        gaps = walker.gaps
    }
}

/// Gathers one link's pages.
private struct LinkBuilder {
    let start: Int
    private var codecs: [OggPayload] = []
    private var serials: [UInt32] = []
    private var vorbis: VorbisStreamAnalyzer?
    /// Whether only first pages have been seen so far (they open the link's streams).
    private var inFirstPages = true

    init(start: Int) { self.start = start }

    /// Serial numbers whose last page has been seen.
    private var ended: Set<UInt32> = []

    /// Whether a first page belongs to this link: it opens another stream while the link's
    /// streams are opening, or it is a page of a stream still going whose flag is wrong
    /// (a new link begins only with a stream that is new).
    func acceptsFirstPage(_ page: OggPage) -> Bool {
        if serials.contains(page.serialNumber) { return !ended.contains(page.serialNumber) }
        return inFirstPages
    }

    mutating func add(_ page: OggPage) {
        if page.isFirst, inFirstPages, !serials.contains(page.serialNumber) {
            serials.append(page.serialNumber)
            let codec = OggPayload(firstPacket: page.body)
            codecs.append(codec)
            if codec == .vorbis, vorbis == nil { vorbis = VorbisStreamAnalyzer(serialNumber: page.serialNumber) }
        } else {
            inFirstPages = false
        }
        if let serial = vorbis?.serialNumber, page.serialNumber == serial { vorbis?.add(page) }
        if page.isLast { ended.insert(page.serialNumber) }
    }

    func finish(end: Int) -> OggVorbisLayout.Link {
        OggVorbisLayout.Link(byteRange: start..<max(start, end), codecs: codecs, vorbis: vorbis?.finish())
    }
}

/// Follows one Vorbis logical stream page by page: assembles and checks its three headers,
/// then reads the first bytes of each audio packet (its mode, hence its block size) and
/// checks the granule positions against the block sizes.
private struct VorbisStreamAnalyzer {
    let serialNumber: UInt32

    private var irregularities: [String] = []
    private var pagesAfterHoles: [Int] = []
    private var nextSequence: UInt32?
    private var sawFirstPage = false
    private var sawLastPage = false

    // Headers.
    private var headers: [[UInt8]] = []
    private var identification: VorbisIdentification?
    private var modeIsLong: [Bool] = []
    private var headerProblem: String?

    // The packet being assembled: all of it for headers, its first byte and length for audio
    // (an array per audio packet cost more than the rest of the walk).
    private var packetOpen = false
    private var partialHeader: [UInt8] = []
    private var partialFirstByte: UInt8?
    private var partialLength = 0

    // Audio accounting (Vorbis I §1.3.2: a block after the first returns
    // previous/4 + current/4 samples).
    private var previousBlock: Int?
    private var samples = 0
    private var lastContribution = 0
    private var audioPackets = 0
    private var packetsEnded = 0
    /// (granule, samples so far, contribution of the page's last packet) of the first page
    /// on which an audio packet ends, and of the latest one.
    private var firstGranule: (granule: Int64, samples: Int, contribution: Int)?
    private var lastGranule: (granule: Int64, samples: Int, contribution: Int, isLastPage: Bool)?
    private var granulePages = 0

    init(serialNumber: UInt32) { self.serialNumber = serialNumber }

    private var inHeaders: Bool { headers.count < 3 }

    private mutating func irregular(_ why: String) {
        if irregularities.count < 16 { irregularities.append(why) }
    }

    mutating func add(_ page: OggPage) {
        if sawLastPage { irregular("a page follows the last page (byte \(page.offset))") }
        if let expected = nextSequence, page.sequenceNumber != expected {
            irregular("pages are missing before byte \(page.offset)")
            pagesAfterHoles.append(page.offset)
            // libogg drops the packet that spans a hole.
            packetOpen = false
        }
        nextSequence = page.sequenceNumber &+ 1
        if page.isFirst, sawFirstPage { irregular("a first-page flag on page \(page.sequenceNumber)") }
        sawFirstPage = true
        if page.isLast { sawLastPage = true }

        var segments = page.lacing[...]
        var body = page.body[...]
        if page.isContinued, !packetOpen {
            irregular("page \(page.sequenceNumber) continues a packet no page began")
            // libogg skips the continued segments of a packet it never saw begin.
            while let length = segments.first {
                segments = segments.dropFirst()
                body = body.dropFirst(Int(length))
                if length < 255 { break }
            }
        } else if !page.isContinued, packetOpen {
            irregular("page \(page.sequenceNumber) leaves a packet unfinished")
        }
        let endedBefore = packetsEnded
        let audioBefore = audioPackets
        let wasInHeaders = inHeaders
        for length in segments {
            let count = Int(length)
            if !packetOpen {
                packetOpen = true
                partialHeader.removeAll(keepingCapacity: true)
                partialFirstByte = nil
                partialLength = 0
            }
            // Keep a header packet whole; of an audio packet only what the mode needs.
            if inHeaders {
                partialHeader.append(contentsOf: body.prefix(count))
            } else if partialFirstByte == nil, count > 0 {
                partialFirstByte = body.first
            }
            body = body.dropFirst(count)
            partialLength += count
            if length < 255 {
                packetOpen = false
                packetsEnded += 1
                if inHeaders { header(partialHeader) } else { audio(firstByte: partialFirstByte, length: partialLength) }
            }
        }
        let ended = packetsEnded - endedBefore
        if wasInHeaders {
            if page.granulePosition != 0 { irregular("a header page has granule position \(page.granulePosition)") }
            // §A.2: the first audio packet begins a new page.
            if !inHeaders, audioPackets > audioBefore || packetOpen {
                irregular("audio begins on a page that holds headers")
            }
            return
        }
        if ended == 0 {
            if page.granulePosition != -1 { irregular("page \(page.sequenceNumber) has a granule position but no packet ends on it") }
            return
        }
        let granule = page.granulePosition
        guard granule >= 0 else {
            irregular("page \(page.sequenceNumber) has granule position \(granule)")
            return
        }
        if let first = firstGranule, let last = lastGranule {
            // The previous granule page was not the last: it must agree exactly.
            let (g, o1) = last.granule.subtractingReportingOverflow(first.granule)
            if o1 || g != Int64(last.samples - first.samples) || last.isLastPage {
                irregular("the granule position \(last.granule) disagrees with the packets before it")
            }
            if granule < last.granule { irregular("granule positions go backwards at page \(page.sequenceNumber)") }
        }
        if firstGranule == nil { firstGranule = (granule, samples, lastContribution) }
        lastGranule = (granule, samples, lastContribution, page.isLast)
        granulePages += 1
    }

    private mutating func header(_ packet: [UInt8]) {
        headers.append(packet)
        guard headerProblem == nil else { return }
        do throws(VorbisHeaderError) {
            switch headers.count {
            case 1:
                identification = try VorbisIdentification(packet: packet)
            case 2:
                guard packet.starts(with: [0x03, 0x76, 0x6F, 0x72, 0x62, 0x69, 0x73]) else {
                    throw VorbisHeaderError("the second header is not a comment header")
                }
            default:
                guard let identification else { return }
                modeIsLong = try VorbisSetupHeader(packet: packet, channels: identification.channels).modeIsLong
            }
        } catch {
            headerProblem = headers.count == 3 ? "the setup header is invalid: \(error)" : "\(error)"
        }
    }

    private mutating func audio(firstByte: UInt8?, length: Int) {
        audioPackets += 1
        guard let identification, !modeIsLong.isEmpty else { return }
        // What libvorbis's vorbis_synthesis reads first: the packet type bit, the mode
        // number and, for a long block, the two window flags.
        let modeBits = vorbisILog(modeIsLong.count - 1)
        guard let first = firstByte, first & 1 == 0 else {
            irregular("a packet where audio belongs is not audio")
            return
        }
        let mode = Int(first >> 1) & ((1 << modeBits) - 1)
        guard mode < modeIsLong.count else {
            irregular("an audio packet uses mode \(mode) of \(modeIsLong.count)")
            return
        }
        let long = modeIsLong[mode]
        guard !long || length * 8 >= 3 + modeBits else {
            irregular("an audio packet ends before its window flags")
            return
        }
        let block = long ? identification.blockSizes.long : identification.blockSizes.short
        if let previousBlock {
            lastContribution = previousBlock / 4 + block / 4
            samples += lastContribution
        } else {
            lastContribution = 0
        }
        previousBlock = block
    }

    func finish() -> OggVorbisLayout.VorbisStream {
        var irregularities = irregularities
        var problem = headerProblem
        if problem == nil, headers.count < 3 { problem = "the stream ends inside its headers" }
        // The most any decode can produce: every packet completed as a long block, plus one
        // packet per hole that libogg may assemble differently.
        let longBlock = identification?.blockSizes.long ?? 8192
        let packetsAtMost = audioPackets + pagesAfterHoles.count + 1
        let (product, overflow) = packetsAtMost.multipliedReportingOverflow(by: longBlock / 2)
        let bound = overflow ? Int.max : product

        // What the granule positions give when they are within what the packets can hold
        // (the count, when the stream is regular; the best estimate otherwise).
        var claimed: Int?
        if problem == nil {
            if packetOpen { irregularities.append("the stream ends inside a packet") }
            if !sawLastPage { irregularities.append("the stream has no last page (end-of-stream flag)") }
            if audioPackets == 0 {
                claimed = 0
            } else if let first = firstGranule, let last = lastGranule {
                claimed = Self.exactFrames(first: first, last: last, onePage: granulePages == 1, irregular: &irregularities)
            } else {
                irregularities.append("no page of audio has a granule position")
            }
        }
        let exact = irregularities.isEmpty ? claimed : nil
        let estimate = min(claimed ?? samples, bound)
        return OggVorbisLayout.VorbisStream(
            serialNumber: serialNumber, identification: identification, headerProblem: problem,
            frames: exact ?? estimate, isExact: exact != nil, frameBound: exact ?? bound,
            irregularities: irregularities, pagesAfterHoles: pagesAfterHoles)
    }

    /// The frames libvorbis returns from a regular stream: what the packets produce, the
    /// start trimmed to the first granule position and the end to the last (§A.2), or nil
    /// when a trim is outside what libvorbis can trim (then the granule positions lie).
    private static func exactFrames(first: (granule: Int64, samples: Int, contribution: Int),
                                    last: (granule: Int64, samples: Int, contribution: Int, isLastPage: Bool),
                                    onePage: Bool, irregular: inout [String]) -> Int? {
        guard last.isLastPage else {
            irregular.append("the last granule position is not on the last page")
            return nil
        }
        if onePage {
            // One page of audio: the end is cut, not the beginning.
            let trim = Int64(last.samples) - last.granule
            guard trim >= 0, trim <= Int64(last.contribution) else {
                irregular.append("the granule position \(last.granule) of the only audio page is outside what its packets hold")
                return nil
            }
            return Int(last.granule)
        }
        // The start trim applies to the output of the first granule page's last packet.
        let startTrim = max(0, Int64(first.samples) - first.granule)
        guard startTrim <= Int64(first.contribution) else {
            irregular.append("the first granule position \(first.granule) trims more than libvorbis can")
            return nil
        }
        let (span, o1) = last.granule.subtractingReportingOverflow(first.granule)
        let endTrim = Int64(last.samples - first.samples) &- span
        guard !o1, span >= 0, endTrim >= 0, endTrim <= Int64(last.contribution) else {
            irregular.append("the last granule position \(last.granule) is outside what the last packet holds")
            return nil
        }
        let frames = Int64(last.samples) - startTrim - endTrim
        guard frames >= 0 else { return nil }
        return Int(frames)
    }
}
