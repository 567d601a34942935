import SpoolCore

/// The FLAC stream parser: `fLaC`, the metadata blocks, then the frames, each found by its
/// sync code and checked header and ended where the next checked header begins, once the
/// frame's CRC-16 confirms it (or the stream ends).
///
/// STREAMINFO gives the data format, the duration (exact when it states the total) and the
/// magic cookie (its block, header included, which `FLACPacketDecoder` hands libFLAC);
/// SEEKTABLE gives exact seek points; VORBIS_COMMENT gives the tags. Every other block
/// (PICTURE, PADDING, APPLICATION, …) is skipped as it arrives, whatever size it claims.
///
/// Damaged metadata: once STREAMINFO has been read, a block header that no encoder writes (a
/// reserved type, 7…127, or a second STREAMINFO: what a block shorter than its contents leaves
/// where the next header should be) ends the metadata there; the frames are looked for from
/// that byte on, by their checked headers, and the bytes before the first one are reported
/// (libFLAC and libsndfile refuse such a file whole; ffmpeg, as Spool, plays its frames).
///
/// Damage: bytes between frames that are no frame are dropped, so the next packet's
/// `byteOffset` does not follow the last one's end, which `FLACPacketDecoder` reports as
/// skipped data; a frame whose CRC-16 fails but whose successor is where it should be is
/// delivered as it is, for libFLAC to report (and to decode to silence, as the file decoder does).
struct FLACStreamParser: StreamFormatParser {
    /// Most bytes of a SEEKTABLE or VORBIS_COMMENT block that are read; larger ones are skipped.
    static let metadataLimit = 1 << 20

    private enum Stage: Equatable {
        case signature
        case blockHeader
        case block(type: Int, size: Int, isLast: Bool)
        case frames
    }

    private var stage = Stage.signature
    private let leadingTags: AudioTags
    private var commentTags = AudioTags()
    private var info: FLACStreamInfo?
    private var seekTable: [(frame: Int, offset: Int)] = []
    private var firstFrameOffset: Int?

    // The frame being delimited: it starts at the first held byte.
    private var current: FLACFrameHeader?
    /// The frame at the first held byte follows one whose CRC-16 held.
    private var confirmed = false
    /// Next held byte to look at for the next frame's header.
    private var scan = 0
    /// CRC-16 of the held bytes before `scan`.
    private var crc: UInt16 = 0

    /// Start offset and frame of the packets delivered, in frame order, for seeking.
    private var delivered: [(offset: Int, frame: Int)] = []
    /// The end of the furthest packet delivered: offset and frame.
    private var deliveredEnd: (offset: Int, frame: Int)?
    private var packetCount = 0
    private var largestPacket = 0
    private var hadDiscontinuity = false
    /// Where damaged metadata ended the metadata (the frames are looked for from there), and
    /// the report of the bytes up to the first frame once it is found.
    private var salvagedFrom: Int?
    private var metadataDamage: DecodeWarning?
    /// The stream's end, when it comes inside a frame or short of STREAMINFO's total.
    private var truncation: DecodeWarning?
    /// Frames whose headers were lost to damage: the frame numbers of the packets delivered
    /// in a row jump past them. Reported once per stream offset.
    private var lostFrames: [DecodeWarning] = []
    /// Where the last packet delivered in a row (since the start or the last discontinuity) ends.
    private var runEnd: (offset: Int, frame: Int)?

    /// Makes a parser; `tags` are those of any ID3v2 tag in front of `fLaC`.
    init(leadingTags tags: AudioTags) throws {
        leadingTags = tags
    }

    // MARK: - Metadata

    mutating func parse(_ input: inout StreamInput, _ events: inout StreamEvents) throws {
        while try step(&input, &events) {}
    }

    private mutating func step(_ input: inout StreamInput, _ events: inout StreamEvents) throws -> Bool {
        switch stage {
        case .signature:
            guard let head = input.peek(4) else { return false }
            guard head.elementsEqual("fLaC".utf8) else { throw AudioError(.corruptData, "the FLAC stream does not begin with 'fLaC'") }
            events.set(.fileFormat, \.fileFormat, .flac)
            input.consume(4)
            stage = .blockHeader
            return true
        case .blockHeader:
            guard let head = input.peek(4).map(Array.init) else { return false }
            let type = Int(head[0] & 0x7F), size = Int(head[1]) << 16 | Int(head[2]) << 8 | Int(head[3])
            let at = input.offset
            if info != nil, type == 0 || type >= 7 {
                // No encoder writes this: the block before it was shorter than its contents.
                salvagedFrom = at
                try beginFrames(at: at, &events)
                confirmed = false
                return true
            }
            guard type != 127 else { throw AudioError(.corruptData, "the FLAC metadata block at byte \(at) has the invalid type 127") }
            if info == nil, type != 0 {
                throw AudioError(.corruptData, "the FLAC stream's first metadata block (at byte \(at)) is of type \(type), not STREAMINFO")
            }
            if type == 0, size != 34 {
                throw AudioError(.corruptData, "the FLAC STREAMINFO block at byte \(at) claims \(size) bytes, not 34")
            }
            input.consume(4)
            let isLast = head[0] & 0x80 != 0
            if type == 0 || ((type == 3 || type == 4) && size <= Self.metadataLimit) {
                stage = .block(type: type, size: size, isLast: isLast)
            } else {
                input.skip(size)
                if isLast { try beginFrames(at: input.offset, &events) } else { stage = .blockHeader }
            }
            return true
        case .block(let type, let size, let isLast):
            guard let body = input.peek(size) else { return false }
            try readBlock(type, body, &events)
            input.consume(size)
            if isLast { try beginFrames(at: input.offset, &events) } else { stage = .blockHeader }
            return true
        case .frames:
            return try frames(&input, &events)
        }
    }

    private mutating func readBlock(_ type: Int, _ body: ArraySlice<UInt8>, _ events: inout StreamEvents) throws {
        switch type {
        case 0:
            guard info == nil else { throw AudioError(.corruptData, "the FLAC stream has a second STREAMINFO block") }
            let streamInfo = try FLACStreamInfo(body)
            info = streamInfo
            let format = StreamDataFormat(sampleRate: Double(streamInfo.sampleRate), channelCount: streamInfo.channelCount,
                                          codec: .flac, framesPerPacket: 0, bytesPerPacket: 0)
            events.set(.dataFormat, \.dataFormat, format)
            events.set(.magicCookie, \.magicCookie, [0x80, 0, 0, 34] + Array(body))
            if streamInfo.maximumFrameBytes > 0 { events.set(.maximumPacketSize, \.maximumPacketSize, streamInfo.maximumFrameBytes) }
            if streamInfo.totalFrames > 0 {
                events.set(.duration, \.duration, StreamDuration(frames: streamInfo.totalFrames,
                                                                 seconds: Double(streamInfo.totalFrames) / Double(streamInfo.sampleRate),
                                                                 basis: .frameCount))
            }
        case 3:
            let b = Array(body)
            var at = 0
            while at + 18 <= b.count {
                let frame = b[at..<(at + 8)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                let offset = b[(at + 8)..<(at + 16)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                at += 18
                // Placeholders (all ones) and absurd values are no points.
                guard frame < UInt64(Int.max / 4), offset < UInt64(Int.max / 4) else { continue }
                if let last = seekTable.last, Int(frame) <= last.frame { continue }
                seekTable.append((Int(frame), Int(offset)))
            }
        case 4:
            Self.readComments(body, into: &commentTags)
            var tags = commentTags
            for (key, value) in leadingTags.fields { tags.merge(key, value) }
            events.set(.tags, \.tags, tags)
        default:
            break
        }
    }

    /// Vorbis comments, under the names libsndfile gives them.
    static func readComments(_ body: ArraySlice<UInt8>, into tags: inout AudioTags) {
        let b = Array(body)
        func le32(_ at: Int) -> Int? { at + 4 <= b.count ? Int(b[at]) | Int(b[at + 1]) << 8 | Int(b[at + 2]) << 16 | Int(b[at + 3]) << 24 : nil }
        guard let vendor = le32(0), vendor <= b.count - 8, let count = le32(4 + vendor) else { return }
        let names = ["title": "title", "artist": "artist", "album": "album", "date": "date", "genre": "genre",
                     "tracknumber": "tracknumber", "comment": "comment", "description": "comment", "copyright": "copyright"]
        var at = 8 + vendor
        for _ in 0..<min(count, b.count / 4) {
            guard let length = le32(at), length <= b.count - at - 4 else { return }
            let text = String(decoding: b[(at + 4)..<(at + 4 + length)], as: UTF8.self)
            at += 4 + length
            guard let equals = text.firstIndex(of: "=") else { continue }
            if let key = names[text[..<equals].lowercased()] { tags.merge(key, String(text[text.index(after: equals)...])) }
        }
    }

    private mutating func beginFrames(at offset: Int, _ events: inout StreamEvents) throws {
        guard info != nil else { throw AudioError(.corruptData, "the FLAC stream has no STREAMINFO block") }
        if events.properties.tags.fields.isEmpty, !leadingTags.fields.isEmpty { events.set(.tags, \.tags, leadingTags) }
        firstFrameOffset = offset
        events.set(.dataOffset, \.dataOffset, offset)
        events.beginPackets()
        stage = .frames
        current = nil
        confirmed = true
    }

    // MARK: - Frames

    /// Delimits the next frame in what is held; false when more bytes are needed.
    private mutating func frames(_ input: inout StreamInput, _ events: inout StreamEvents) throws -> Bool {
        guard let info else { return false }
        guard let frame = current else {
            // Find a header: at the first held byte after a frame that checked, anywhere after damage.
            var i = 0
            while i < input.count {
                switch FLACFrameHeader.read(input, at: i, info) {
                case .valid(let header):
                    if i > 0 { confirmed = false }
                    input.consume(i)
                    if let from = salvagedFrom, metadataDamage == nil {
                        metadataDamage = DecodeWarning(
                            kind: .skippedCorruptData, byteOffset: from, byteCount: input.offset - from,
                            detail: "the FLAC metadata is damaged at byte \(from) (a block shorter than its contents); "
                                + "the audio frames from byte \(input.offset) on are decoded")
                    }
                    start(header, input)
                    return true
                case .needMore where !input.isFinished:
                    input.consume(i)
                    return false
                default:
                    i += 1
                }
            }
            input.consume(input.count)
            return false
        }
        let limit = info.frameBytesLimit
        while scan < input.count {
            // The bytes up to the next 0xFF cannot start a header: into the CRC in one run.
            (scan, crc) = input.withHeld { Self.crcRun($0, from: scan, limit: limit, crc: crc) }
            if scan > limit { return passLimit(&input, &events) }
            guard scan < input.count else { break }
            let byte = input[scan]
            if byte == 0xFF {
                switch FLACFrameHeader.read(input, at: scan, info) {
                case .needMore where !input.isFinished:
                    return false
                case .valid(let next):
                    if crc == 0 {
                        deliver(scan, frame, checked: true, &input, &events)
                        start(next, input)
                        return true
                    }
                    if frame.isFollowed(by: next, info) || !confirmed {
                        if let end = firstCRCMatch(input) {
                            // The frame ended there; what lies between is damage.
                            deliver(end, frame, checked: true, &input, &events)
                            input.consume(scan - end)
                            confirmed = false
                        } else if confirmed {
                            // Damaged inside: libFLAC reports it and decodes it as the file decoder does.
                            deliver(scan, frame, checked: false, &input, &events)
                            confirmed = true
                        } else {
                            // The header found after damage was no header.
                            input.consume(scan)
                        }
                        start(next, input)
                        return true
                    }
                // A header that does not follow: part of this frame's data.
                default: break
                }
            }
            crc = FLACFrameHeader.crc16(crc, byte)
            scan += 1
            if scan > limit { return passLimit(&input, &events) }
        }
        return false
    }

    /// No frame is this long: keeps what checked, and looks for the next header after it.
    private mutating func passLimit(_ input: inout StreamInput, _ events: inout StreamEvents) -> Bool {
        if let end = firstCRCMatch(input), let frame = current {
            deliver(end, frame, checked: true, &input, &events)
        } else {
            input.consume(1)
        }
        current = nil
        confirmed = false
        return true
    }

    /// The CRC-16 over `held` from `start` up to the next 0xFF byte (which may start a
    /// header), the end of what is held, or the byte past `limit`: where it stopped, and the
    /// CRC there. Eight bytes at a time where none of them is 0xFF (slice-by-8).
    private static func crcRun(_ held: UnsafeBufferPointer<UInt8>, from start: Int, limit: Int, crc: UInt16) -> (Int, UInt16) {
        var i = start, crc = crc
        let end = min(held.count, limit &+ 1)
        guard let base = held.baseAddress else { return (i, crc) }
        FLACFrameHeader.crc16Slices.withUnsafeBufferPointer { tables in
            while i + 8 <= end {
                let word = UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)
                // A byte of 0xFF is a zero byte of the complement.
                let inverted = ~word
                if (inverted &- 0x0101_0101_0101_0101) & ~inverted & 0x8080_8080_8080_8080 != 0 { break }
                let b = UInt64(littleEndian: word)
                func byte(_ k: UInt64) -> Int { Int(truncatingIfNeeded: (b >> (8 * k)) & 0xFF) }
                let b0 = byte(0) ^ Int(crc >> 8), b1 = byte(1) ^ Int(crc & 0xFF)
                crc = tables[7 << 8 | b0] ^ tables[6 << 8 | b1] ^ tables[5 << 8 | byte(2)] ^ tables[4 << 8 | byte(3)]
                    ^ tables[3 << 8 | byte(4)] ^ tables[2 << 8 | byte(5)] ^ tables[1 << 8 | byte(6)] ^ tables[byte(7)]
                i += 8
            }
            let table = UnsafeBufferPointer(rebasing: tables[0..<256])
            while i < end {
                let byte = held[i]
                if byte == 0xFF { break }
                crc = crc << 8 ^ table[Int(UInt8(truncatingIfNeeded: crc >> 8) ^ byte)]
                i += 1
            }
        }
        return (i, crc)
    }

    /// The first end, after the header and up to `scan`, at which the frame's CRC-16 comes
    /// to 0: where a frame whose CRC failed at the next header may have ended (damage after
    /// it). Looked for only then, byte by byte.
    private func firstCRCMatch(_ input: StreamInput) -> Int? {
        guard let frame = current, scan > frame.length else { return nil }
        return input.withHeld { held in
            var crc: UInt16 = 0
            for i in 0..<min(scan, held.count) {
                crc = FLACFrameHeader.crc16(crc, held[i])
                if i + 1 > frame.length, crc == 0 { return i + 1 }
            }
            return nil
        }
    }

    /// The frame with `header` starts at the first held byte.
    private mutating func start(_ header: FLACFrameHeader, _ input: StreamInput) {
        current = header
        scan = header.length
        crc = 0
        for i in 0..<header.length { crc = FLACFrameHeader.crc16(crc, input[i]) }
    }

    /// Delivers the first `length` held bytes as the frame `header` heads.
    private mutating func deliver(_ length: Int, _ header: FLACFrameHeader, checked: Bool, _ input: inout StreamInput,
                                  _ events: inout StreamEvents) {
        guard let info else { return }
        let offset = input.offset
        let first = header.startFrame(info)
        if let run = runEnd, first > run.frame, !lostFrames.contains(where: { $0.byteOffset == offset }) {
            lostFrames.append(DecodeWarning(kind: .missingData, byteOffset: offset, byteCount: 0,
                detail: "frames \(run.frame)...\(first - 1) of the FLAC stream are lost (their frame headers are damaged)"))
        }
        runEnd = (offset + length, first + header.blockSize)
        events.packet(StreamPacket(byteOffset: offset, bytes: input.take(length), frameCount: header.blockSize, startFrame: first))
        packetCount += 1
        confirmed = checked
        if length > largestPacket {
            largestPacket = length
            if length > events.properties.maximumPacketSize ?? 0 { events.set(.maximumPacketSize, \.maximumPacketSize, length) }
        }
        if delivered.last.map({ first > $0.frame }) ?? true {
            delivered.append((offset, first))
        } else {
            // A frame parsed again after a seek back: kept once, in order.
            let index = firstDelivered(after: first - 1)
            if index == delivered.count || delivered[index].frame != first { delivered.insert((offset, first), at: index) }
        }
        if deliveredEnd.map({ first + header.blockSize > $0.frame }) ?? true {
            deliveredEnd = (offset + length, first + header.blockSize)
        }
    }

    mutating func finish(_ input: inout StreamInput, _ events: inout StreamEvents) throws {
        guard let info, events.properties.readyToProducePackets else { return }
        let streamEnd = input.offset + input.count
        var cutShort = false
        if let frame = current, input.count > 0 {
            if crc == 0 {
                deliver(input.count, frame, checked: true, &input, &events)
            } else if let end = firstCRCMatch(input) {
                deliver(end, frame, checked: true, &input, &events)
            } else {
                // The last frame was cut short: libFLAC would not decode it either.
                cutShort = true
            }
            current = nil
        }
        guard !hadDiscontinuity, let end = deliveredEnd ?? firstFrameOffset.map({ ($0, 0) }) else { return }
        // A stream that ends inside a frame, or short of the total STREAMINFO states, is cut short.
        if cutShort || (info.totalFrames > 0 && end.frame < info.totalFrames) {
            truncation = DecodeWarning(kind: .truncated, byteOffset: streamEnd, byteCount: 0)
        }
        events.set(.audioDataPacketCount, \.audioDataPacketCount, packetCount)
        if let first = firstFrameOffset { events.set(.audioDataByteCount, \.audioDataByteCount, end.offset - first) }
        let frames = info.totalFrames > 0 ? min(info.totalFrames, end.frame) : end.frame
        let seconds = Double(frames) / Double(info.sampleRate)
        if seconds > 0, let first = firstFrameOffset {
            events.set(.bitRate, \.bitRate, Int((Double(end.offset - first) * 8 / seconds).rounded()))
        }
        events.set(.duration, \.duration, StreamDuration(frames: frames, seconds: seconds, basis: .frameCount))
    }

    // MARK: - Seeking

    /// The damaged metadata gone past, frames lost to damage and a cut-short end, if any.
    var warnings: [DecodeWarning] { [metadataDamage].compactMap { $0 } + lostFrames + [truncation].compactMap { $0 } }

    func seekPoint(toFrame frame: Int, _ properties: StreamProperties) throws -> StreamSeekPoint {
        guard let info, let first = firstFrameOffset else {
            throw AudioError(.invalidState, "the FLAC stream's frames have not begun, so there is nowhere to seek to")
        }
        var best: (offset: Int, frame: Int)? = seekTable.last { $0.frame <= frame }.map { (first + $0.offset, $0.frame) }
        if let end = deliveredEnd, frame < end.frame {
            // Within the frames parsed: the last one starting at or before the frame.
            let low = firstDelivered(after: frame)
            if low > 0, delivered[low - 1].frame >= best?.frame ?? -1 { best = delivered[low - 1] }
        }
        if let best {
            return StreamSeekPoint(byteOffset: best.offset, frame: best.frame, targetFrame: frame, isEstimated: false)
        }
        // Beyond: at the bytes per frame seen so far (or STREAMINFO's frame sizes).
        let from = deliveredEnd ?? best ?? (first, 0)
        let bytesPerFrame: Double
        if let end = deliveredEnd, end.frame > 0 {
            bytesPerFrame = Double(end.offset - first) / Double(end.frame)
        } else if info.maximumFrameBytes > 0 {
            bytesPerFrame = Double(info.minimumFrameBytes + info.maximumFrameBytes) / 2 / Double(info.maximumBlockSize)
        } else {
            bytesPerFrame = Double(info.channelCount * info.bitsPerSample) / 8 * 0.6
        }
        let estimate = Double(from.offset) + Double(frame - from.frame) * bytesPerFrame
        guard estimate < Double(Int.max / 2) else { throw AudioError(.outOfRange, "frame \(frame) lies past any FLAC stream") }
        return StreamSeekPoint(byteOffset: Int(estimate), frame: frame, targetFrame: frame, isEstimated: true)
    }

    /// The index of the first delivered frame that starts after `frame` (binary search).
    private func firstDelivered(after frame: Int) -> Int {
        var low = 0, high = delivered.count
        while low < high {
            let mid = (low + high) / 2
            if delivered[mid].frame <= frame { low = mid + 1 } else { high = mid }
        }
        return low
    }

    mutating func discontinuity(at point: StreamSeekPoint?) {
        guard stage == .frames else { return }
        current = nil
        confirmed = point.map { !$0.isEstimated } ?? false
        hadDiscontinuity = true
        runEnd = nil
    }
}
