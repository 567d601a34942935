import Foundation
import SpoolCore

/// Parses an MP3 stream (MPEG-1, 2 and 2.5, layers 1 to 3) as it arrives, finding what
/// `MPEGStream` finds in a file: the Xing/Info/LAME or VBRI header frame, every audio frame,
/// the tags between and after them, and the bytes that are neither.
///
/// Each audio frame is a packet. A frame is held until what follows it is known, because
/// `MPEGStream` drops the frame before bytes that are neither frame nor tag (they may have
/// been written over its end) unless those bytes run to the end of the audio; the last few
/// frames that the header frame counts are held too, until the stream shows whether they end
/// where the header says, so that the gapless trims are known before they are decoded. So
/// the packets, their count and the trims are the file decoder's, to the frame.
///
/// Where a stream cannot know what a file knows, it differs: a tag whose size runs past the
/// end is skipped until the end shows it does (a file decoder takes its header for damage at
/// once, a stream only when it ends within the tag's first megabyte), and a stream of three
/// frames or fewer whose last is cut short and followed by an ID3v1 tag is not recognised
/// (`MPEGStream` takes the tag off the end before it looks for frames).
struct MP3StreamParser: StreamFormatParser {
    /// A frame whose header and bytes have arrived, not yet a packet.
    private struct Frame {
        var offset: Int
        var header: MPEGAudioHeader
        var bytes: [UInt8]
    }

    /// Bytes that are neither frame nor tag, from `start`: looked through from `cursor` for
    /// where the stream picks up again.
    private struct Garbage {
        var start: Int
        var cursor: Int
        /// Every byte so far is zero (padding to the end is no damage).
        var allZero: Bool
        /// The tag the bytes ran into: whether they are damage in the middle of the stream
        /// or something added after the audio is decided by what follows the tags.
        var tagAt: Int?
    }

    /// How duration is known before the stream's end.
    private enum DurationRule { case frameCount, byteCount, estimate }

    /// At most this many tags after the first frame are read (more are skipped unread).
    private static let tagLimit = 64

    private var id3v2: AudioTags
    private var ape = AudioTags()
    private var id3v1 = AudioTags()
    private var tagsRead = 0

    /// The first frame's header; every audio frame continues it.
    private var first: MPEGAudioHeader?
    private var firstFrameOffset = 0
    /// Offset of the first audio frame.
    private var dataOffset = 0
    private var info: MPEGInfoFrame?
    /// Still looking for a chain of frames: at the start, or after a discontinuity.
    private var searching = true
    /// Tags at the very front may still follow (no other byte has been seen).
    private var inFront = true
    private var held: Frame?
    private var garbage: Garbage?
    private var lyrics: MP3LyricsSearch?
    /// A last frame the stream ends inside: nothing after it is parsed.
    private var truncatedAt: Int?
    /// Damage to report with the next packet.
    private var damage: [DecodeWarning] = []
    /// Packets made but not yet handed out (the last ones a header frame counts).
    private var outbox: [(index: Int?, packet: StreamPacket)] = []

    /// Index of the next packet, when known (not after a seek to an estimated offset).
    private var nextIndex: Int? = 0
    /// The byte offset of every packet from the first, as far as they have been seen in order.
    private var offsets: [Int] = []
    /// The bytes of each of those packets.
    private var sizes: [Int] = []
    private var discontinuous = false
    /// The stream has ended: the last packets wait for the counts it settles.
    private var finishing = false

    // What the packets so far add up to.
    private var packets = 0
    private var packetBytes = 0
    private var audioEnd = 0
    private var firstBitRate: Int?
    private var bitRatesVary = false
    private var uniformSize: Int?
    private var sizesVary = false
    private var largest = 0
    private var corruptRegions = 0

    // What the header frame says, and the rules it gives.
    private var claimedFrames: Int?
    private var claimedAudioBytes: Int?
    private var primingFrames = 0
    private var remainderFrames = 0
    /// More frames arrived than the header frame counts: its end trim does not apply.
    private var exceeded = false
    private var durationRule = DurationRule.estimate
    private var statedBitRate: Int?
    /// The packets there were when the estimates were last refined.
    private var refinedAt = 0

    /// Makes the parser of a stream whose leading ID3v2 tags (their text, `tags`) were skipped.
    init(leadingTags tags: AudioTags) throws {
        id3v2 = tags
    }

    // MARK: - Parsing

    /// Parses the held bytes: frames become packets as what follows them arrives.
    mutating func parse(_ input: inout StreamInput, _ events: inout StreamEvents) throws {
        while try step(&input, &events) {}
        refine(input, &events)
    }

    /// One step through the held bytes; false when more bytes are needed.
    private mutating func step(_ input: inout StreamInput, _ events: inout StreamEvents) throws -> Bool {
        if truncatedAt != nil {
            input.consume(input.count)
            return false
        }
        if let garbage, garbage.tagAt == nil { return resync(&input, &events) }
        if searching { return search(&input, &events) }
        return audio(&input, &events)
    }

    /// Finds the first chain of frames (at the start: the tags in front first; after a
    /// discontinuity: frames that continue the stream's).
    private mutating func search(_ input: inout StreamInput, _ events: inout StreamEvents) -> Bool {
        if inFront, first == nil, input.count > 0, input[0] == UInt8(ascii: "I") || input[0] == UInt8(ascii: "A") {
            switch input.mp3TagSize(at: 0, lyrics: &lyrics) {
            case .more: return false
            case .yes(let size):
                guard readTag(&input, &events, size: size, front: true) else { return false }
                return true
            case .no: break
            }
        }
        var i = 0
        while i < input.count {
            if input[i] == 0xFF {
                switch input.mpegChainStarts(at: i, continuing: first, lyrics: &lyrics) {
                case .more:
                    if i > 0 { inFront = false }
                    input.consume(i)
                    return false
                case .yes(let header):
                    input.consume(i)
                    found(header, &input)
                    return true
                case .no: break
                }
            }
            i += 1
        }
        if i > 0 { inFront = false }
        input.consume(i)
        return false
    }

    /// The chain `search` found starts at the first held byte.
    private mutating func found(_ header: MPEGAudioHeader, _ input: inout StreamInput) {
        searching = false
        inFront = false
        if first == nil {
            first = header
            firstFrameOffset = input.offset
            let frame = Array(input.peek(min(header.frameBytes, input.count)) ?? [])
            info = MPEGInfoFrame(frame: frame, header: header)
            if info != nil { input.consume(min(header.frameBytes, input.count)) }
            return
        }
        // After a discontinuity: a frame seen before has its index; so has the seek's frame.
        let offset = input.offset
        if let known = Self.index(of: offset, in: offsets) {
            nextIndex = known
        } else if nextIndex != nil, offset != seekOffset {
            nextIndex = nil
        }
    }

    /// Where the last exact seek pointed (its packet's index is `nextIndex`).
    private var seekOffset: Int?

    /// The audio frames and what lies between them.
    private mutating func audio(_ input: inout StreamInput, _ events: inout StreamEvents) -> Bool {
        guard input.count > 0, let first else { return false }
        switch input.mpegHeader(at: 0, continuing: first) {
        case .more: return false
        case .yes(let header):
            guard input.count >= header.frameBytes else {
                if input.isFinished {
                    truncatedAt = input.offset
                    input.consume(input.count)
                }
                return false
            }
            if let garbage, let tag = garbage.tagAt { damaged(garbage, to: tag) }
            if let held { emit(held, &events) }
            if !events.properties.readyToProducePackets { begin(header, at: input.offset, input, &events) }
            held = Frame(offset: input.offset, header: header, bytes: input.take(header.frameBytes))
            return true
        case .no: break
        }
        switch input.mp3TagSize(at: 0, lyrics: &lyrics) {
        case .more: return false
        case .yes(let size):
            // Its text first: a tag cut off by the end of the stream is damage after all.
            if input.count < min(size, MP3Tags.textBytesLimit) && !input.isFinished { return false }
            // A frame followed by a tag is whole; one followed by damage, then tags, may not be.
            if garbage == nil, let held {
                emit(held, &events)
                self.held = nil
            }
            return readTag(&input, &events, size: size, front: false)
        case .no: break
        }
        if let garbage, let tag = garbage.tagAt { damaged(garbage, to: tag) }
        garbage = Garbage(start: input.offset, cursor: input.offset + 1, allZero: input[0] == 0, tagAt: nil)
        return true
    }

    /// Looks through bytes that are neither frame nor tag for the next chain of frames or tag.
    private mutating func resync(_ input: inout StreamInput, _ events: inout StreamEvents) -> Bool {
        guard var g = garbage, let first else { return false }
        var c = g.cursor - input.offset
        while c < input.count {
            let byte = input[c]
            switch byte {
            case 0xFF:
                switch input.mpegChainStarts(at: c, continuing: first, lyrics: &lyrics) {
                case .more:
                    return wait(&g, at: c, &input)
                case .yes:
                    damaged(g, to: input.offset + c)
                    input.consume(c)
                    return true
                case .no: break
                }
            case UInt8(ascii: "A"):
                guard let head = input.mp3Bytes(at: c, count: APETagFrame.size) else {
                    if !input.isFinished, "APETAGEX".utf8.starts(with: input.held.dropFirst(c).prefix(8)) {
                        return wait(&g, at: c, &input)
                    }
                    break
                }
                guard let found = APETagFrame(head) else { break }
                if !found.isHeader, input.offset + c + APETagFrame.size - found.tagSize == g.start {
                    // The bytes were the items of an APEv2 tag without a header.
                    if g.start >= input.offset, tagsRead < Self.tagLimit {
                        let itemsStart = g.start - input.offset
                        let items = Array(input.peek(min(c - itemsStart, MP3Tags.textBytesLimit), from: itemsStart) ?? [])
                        APETagFrame.read(items: items, count: found.itemCount, into: &ape)
                        tagsRead += 1
                        events.set(.tags, \.tags, combinedTags)
                    }
                    garbage = nil
                    input.consume(c + APETagFrame.size)
                    if let held {
                        emit(held, &events)
                        self.held = nil
                    }
                    return true
                }
                if found.isHeader { return ranInto(tagAt: c, &g, &input) }
            case UInt8(ascii: "I"), UInt8(ascii: "T"), UInt8(ascii: "L"):
                switch input.mp3TagSize(at: c, lyrics: &lyrics) {
                case .more: return wait(&g, at: c, &input)
                case .yes: return ranInto(tagAt: c, &g, &input)
                case .no: break
                }
            default: break
            }
            if byte != 0 { g.allZero = false }
            c += 1
        }
        if input.isFinished {
            g.cursor = input.offset + c
            garbage = g
            return false
        }
        return wait(&g, at: c, &input)
    }

    /// Keeps the place of a resync that needs more bytes, holding at most as many bytes of
    /// the damage as an APEv2 tag's items are read from.
    private mutating func wait(_ g: inout Garbage, at c: Int, _ input: inout StreamInput) -> Bool {
        g.cursor = input.offset + c
        let excess = c - MP3Tags.textBytesLimit
        if excess > 0 { input.consume(excess) }
        garbage = g
        return false
    }

    /// The damage ran into a tag at `c`: what it was is decided after the tags.
    private mutating func ranInto(tagAt c: Int, _ g: inout Garbage, _ input: inout StreamInput) -> Bool {
        g.tagAt = input.offset + c
        garbage = g
        input.consume(c)
        return true
    }

    /// Bytes that are neither frame nor tag, from `g.start` to `end`, lay between frames:
    /// damage, and the frame before them is dropped (they may have overwritten its end).
    private mutating func damaged(_ g: Garbage, to end: Int) {
        let start = held?.offset ?? g.start
        damage.append(DecodeWarning(kind: .skippedCorruptData, byteOffset: start, byteCount: end - start))
        corruptRegions += 1
        held = nil
        garbage = nil
    }

    /// Reads the tag of `size` bytes at the first held byte (its first bytes, for the text)
    /// and skips it; false when more of it must arrive first.
    private mutating func readTag(_ input: inout StreamInput, _ events: inout StreamEvents, size: Int, front: Bool) -> Bool {
        let wanted = min(size, MP3Tags.textBytesLimit)
        if input.count < wanted && !input.isFinished { return false }
        let tag = Array(input.peek(min(wanted, input.count)) ?? [])
        if front || tagsRead < Self.tagLimit {
            switch tag.first {
            case UInt8(ascii: "I"): ID3v2Tag.read(tag, into: &id3v2)
            case UInt8(ascii: "T") where !tag.matches("TAG+"): ID3v1Tag.read(tag, into: &id3v1)
            case UInt8(ascii: "A"):
                if let header = APETagFrame(tag) {
                    APETagFrame.read(items: Array(tag.dropFirst(APETagFrame.size)), count: header.itemCount, into: &ape)
                }
            default: break
            }
            events.set(.tags, \.tags, combinedTags)
        }
        if !front { tagsRead += 1 }
        input.skip(size)
        return true
    }

    /// The text of every tag: ID3v2 first, then APEv2, then ID3v1 (`MPEGStream`'s order).
    private var combinedTags: AudioTags {
        var tags = id3v2
        for (key, value) in ape.fields.sorted(by: { $0.key < $1.key }) { tags.merge(key, value) }
        for (key, value) in id3v1.fields.sorted(by: { $0.key < $1.key }) { tags.merge(key, value) }
        return tags
    }

    // MARK: - Packets

    /// Turns a frame into a packet.
    private mutating func emit(_ frame: Frame, _ events: inout StreamEvents) {
        let index = nextIndex
        let samples = frame.header.samplesPerFrame
        let packet = StreamPacket(byteOffset: frame.offset, bytes: frame.bytes, frameCount: samples,
                                  startFrame: index.map { $0 &* samples }, damage: damage)
        damage = []
        nextIndex = index.map { $0 + 1 }
        if let index, index == offsets.count {
            offsets.append(frame.offset)
            sizes.append(frame.bytes.count)
        }
        packets += 1
        packetBytes += frame.bytes.count
        audioEnd = frame.offset + frame.bytes.count
        if let rate = firstBitRate, rate != frame.header.bitRate { bitRatesVary = true }
        if firstBitRate == nil { firstBitRate = frame.header.bitRate }
        if let size = uniformSize, size != frame.bytes.count { sizesVary = true }
        if uniformSize == nil { uniformSize = frame.bytes.count }
        largest = max(largest, frame.bytes.count)
        if let index, let claimed = claimedFrames, index >= claimed, !exceeded {
            // More frames than the header counts: the padding it gives is not at this end.
            exceeded = true
            remainderFrames = 0
            events.set(.packetTableInfo, \.packetTableInfo,
                       StreamPacketTableInfo(primingFrames: primingFrames, remainderFrames: 0, validFrames: nil))
        }
        outbox.append((index, packet))
        flush(&events, all: false)
    }

    /// Hands out the packets whose trims are settled: all but the last few the header frame
    /// counts, until the stream shows where it ends, and all but the last packet, which
    /// carries the damage found after it should the stream end next.
    private mutating func flush(_ events: inout StreamEvents, all: Bool) {
        if finishing && !all { return }
        var sent = 0
        for (index, packet) in outbox {
            if !all, sent == outbox.count - 1 { break }
            if !all, !exceeded, let index, let claimed = claimedFrames, let first {
                let holdBack = (remainderFrames + first.samplesPerFrame - 1) / first.samplesPerFrame + 2
                if index >= claimed - holdBack { break }
            }
            events.packet(packet)
            sent += 1
        }
        outbox.removeFirst(sent)
    }

    // MARK: - Properties

    /// Reports what is known once the first audio frame's header is in.
    private mutating func begin(_ header: MPEGAudioHeader, at offset: Int, _ input: StreamInput, _ events: inout StreamEvents) {
        guard let first else { return }
        let samples = first.samplesPerFrame
        let rate = Double(first.sampleRate)
        events.set(.fileFormat, \.fileFormat, .mp3)
        events.set(.dataFormat, \.dataFormat, StreamDataFormat(sampleRate: rate, channelCount: first.channelCount,
                                                               codec: .mpeg(layer: first.layer), framesPerPacket: samples,
                                                               bytesPerPacket: 0))
        events.set(.tags, \.tags, combinedTags)
        dataOffset = offset
        events.set(.dataOffset, \.dataOffset, offset)
        if let info {
            claimedFrames = info.frames
            claimedAudioBytes = info.bytes.map { max(0, $0 - first.frameBytes) }
            primingFrames = info.startTrim
            remainderFrames = info.frames == nil ? 0 : info.endTrim
            events.set(.audioDataByteCount, \.audioDataByteCount, claimedAudioBytes)
            events.set(.audioDataPacketCount, \.audioDataPacketCount, claimedFrames)
            let valid = claimedFrames.map { max(0, $0 * samples - primingFrames - remainderFrames) }
            events.set(.packetTableInfo, \.packetTableInfo,
                       StreamPacketTableInfo(primingFrames: primingFrames, remainderFrames: remainderFrames, validFrames: valid))
            if info.kind != .info, let frames = claimedFrames, frames > 0, let bytes = claimedAudioBytes {
                statedBitRate = Self.bitRate(bytes: bytes, frames: frames * samples, sampleRate: first.sampleRate)
            }
        }
        events.set(.bitRate, \.bitRate, statedBitRate ?? header.bitRate)
        largest = header.frameBytes
        events.set(.maximumPacketSize, \.maximumPacketSize, largest)
        if let frames = claimedFrames {
            durationRule = .frameCount
            let valid = max(0, frames * samples - primingFrames - remainderFrames)
            events.set(.duration, \.duration, StreamDuration(frames: valid, seconds: Double(valid) / rate, basis: .frameCount))
        } else if let bytes = claimedAudioBytes, info?.kind != .xing {
            durationRule = .byteCount
            let seconds = Double(bytes) * 8 / Double(header.bitRate)
            events.set(.duration, \.duration, StreamDuration(frames: nil, seconds: seconds, basis: .byteCountAndBitRate))
        } else {
            durationRule = .estimate
            events.set(.duration, \.duration, estimate(input, bitRate: statedBitRate ?? header.bitRate))
        }
        events.beginPackets()
    }

    /// An estimated duration: the header frame's byte count, or the bytes so far, at `bitRate`.
    private func estimate(_ input: StreamInput, bitRate: Int) -> StreamDuration {
        let seen = held.map { $0.offset + $0.bytes.count } ?? max(audioEnd, input.offset)
        let bytes = claimedAudioBytes ?? max(0, seen - dataOffset)
        return StreamDuration(frames: nil, seconds: Double(bytes) * 8 / Double(max(1, bitRate)), basis: .estimate)
    }

    /// Bits per second of `bytes` that decode to `frames` at `sampleRate`.
    private static func bitRate(bytes: Int, frames: Int, sampleRate: Int) -> Int {
        guard frames > 0 else { return 0 }
        let rate = Double(bytes) * 8 * Double(sampleRate) / Double(frames)
        return rate.isFinite ? Int(min(rate.rounded(), 1e12)) : 0
    }

    /// After each piece: the bit rate, largest packet and estimated duration the packets so far give.
    private mutating func refine(_ input: StreamInput, _ events: inout StreamEvents) {
        guard events.properties.readyToProducePackets, let first, !discontinuous, packets != refinedAt else { return }
        refinedAt = packets
        var bitRate = events.properties.bitRate ?? first.bitRate
        if statedBitRate == nil, bitRatesVary, packets > 0 {
            bitRate = Self.bitRate(bytes: packetBytes, frames: packets * first.samplesPerFrame, sampleRate: first.sampleRate)
            events.set(.bitRate, \.bitRate, bitRate)
        }
        events.set(.maximumPacketSize, \.maximumPacketSize, max(largest, events.properties.maximumPacketSize ?? 0))
        if durationRule == .estimate { events.set(.duration, \.duration, estimate(input, bitRate: bitRate)) }
    }

    // MARK: - The end

    /// Decides what the end leaves open (damage that ran to the end, a last frame cut short,
    /// whether the header frame's padding is at this end), hands out the last packets and
    /// makes the counts exact.
    /// - Throws: `.unsupportedFormat` when no frame was found, `.corruptData` for a header
    ///   frame with no audio frame after it.
    mutating func finish(_ input: inout StreamInput, _ events: inout StreamEvents) throws {
        guard let first else {
            throw AudioError(.unsupportedFormat, "no MPEG audio frame found in the stream")
        }
        endsInID3v1(input, &events)
        if let g = garbage {
            // Bytes that are neither frame nor tag run to the end (or to the tags there):
            // added after the audio, so the frame before them stands. Zeros are padding.
            let end = g.tagAt ?? input.offset + input.count
            if !g.allZero {
                damage.append(DecodeWarning(kind: .skippedCorruptData, byteOffset: g.start, byteCount: end - g.start))
                corruptRegions += 1
            }
            garbage = nil
        }
        guard events.properties.readyToProducePackets else {
            if info != nil, !discontinuous {
                throw AudioError(.corruptData, "no whole MPEG audio frame after the stream's header frame")
            }
            return
        }
        finishing = true
        if let held {
            emit(held, &events)
            self.held = nil
        }
        if !damage.isEmpty, !outbox.isEmpty {
            outbox[outbox.count - 1].packet.damage += damage
            damage = []
        }
        // After a seek the counts are known when every packet up to the end has been seen.
        if !discontinuous || nextIndex == offsets.count { settle(first, &events) }
        flush(&events, all: true)
    }

    /// A last frame cut short and an ID3v1 tag written after it: the tag's bytes were taken
    /// for the rest of the frame. `MPEGStream` takes the tag off the end first, so the frame
    /// is a truncated one and the tag is read.
    private mutating func endsInID3v1(_ input: StreamInput, _ events: inout StreamEvents) {
        guard let frame = held, garbage.map({ $0.tagAt == nil && $0.start == frame.offset + frame.bytes.count }) ?? true,
              input.offset == frame.offset + frame.bytes.count else { return }
        let tail = frame.bytes + input.held
        let tag = tail.count - ID3v1Tag.size
        guard tag > 4, tag < frame.bytes.count, tail.matches("TAG", at: tag) else { return }
        ID3v1Tag.read(Array(tail[tag...]), into: &id3v1)
        events.set(.tags, \.tags, combinedTags)
        truncatedAt = frame.offset
        held = nil
        garbage = nil
    }

    /// The counts the whole stream gives, exactly as `MP3Decoder` makes them.
    private mutating func settle(_ first: MPEGAudioHeader, _ events: inout StreamEvents) {
        let samples = first.samplesPerFrame
        let packets = offsets.count
        let packetBytes = sizes.reduce(0, +)
        let raw = packets * samples
        let claimedBytes = info?.bytes
        let isTruncated: Bool
        if truncatedAt != nil {
            isTruncated = true
        } else if corruptRegions > 0 {
            isTruncated = false
        } else if let claimed = claimedFrames {
            isTruncated = claimed > packets + 1
        } else if let claimed = claimedBytes {
            isTruncated = claimed > audioEnd - firstFrameOffset + 4096
        } else {
            isTruncated = false
        }
        if isTruncated {
            let missing = max(0, (claimedBytes ?? 0) - (audioEnd - firstFrameOffset))
            let warning = DecodeWarning(kind: .truncated, byteOffset: truncatedAt ?? audioEnd, byteCount: missing)
            if !outbox.isEmpty { outbox[outbox.count - 1].packet.damage.append(warning) }
        }
        let startTrim = min(raw, info?.startTrim ?? 0)
        let endIntact = !isTruncated
            && claimedFrames.map { $0 == packets || ($0 > packets && corruptRegions > 0) } ?? false
        let endTrim = endIntact ? min(raw - startTrim, info?.endTrim ?? 0) : 0
        let frames = raw - startTrim - endTrim
        remainderFrames = endTrim
        events.set(.audioDataByteCount, \.audioDataByteCount, packetBytes)
        events.set(.audioDataPacketCount, \.audioDataPacketCount, packets)
        if info != nil {
            events.set(.packetTableInfo, \.packetTableInfo,
                       StreamPacketTableInfo(primingFrames: startTrim, remainderFrames: endTrim, validFrames: frames))
        }
        let bitRate = bitRatesVary
            ? Self.bitRate(bytes: packetBytes, frames: raw, sampleRate: first.sampleRate) : firstBitRate ?? first.bitRate
        events.set(.bitRate, \.bitRate, bitRate)
        events.set(.maximumPacketSize, \.maximumPacketSize, largest)
        events.set(.duration, \.duration,
                   StreamDuration(frames: frames, seconds: Double(frames) / Double(first.sampleRate), basis: .frameCount))
    }

    // MARK: - Seeking

    /// Where to feed from to play `frame`: exact from the packets seen or for CBR frames of
    /// one size, a few frames early so the decoder has the bit reservoir; estimated through
    /// the Xing or VBRI table, or the average frame size, otherwise.
    func seekPoint(toFrame frame: Int, _ properties: StreamProperties) throws -> StreamSeekPoint {
        guard let first, let dataOffset = properties.dataOffset else {
            throw AudioError(.invalidState, "the MP3 stream has no audio frame to seek by yet")
        }
        let samples = first.samplesPerFrame
        let priming = properties.packetTableInfo?.primingFrames ?? 0
        let untrimmed = frame + priming
        let target = untrimmed / samples
        // Layer III frames take bits from the frames before (up to 511 bytes of them): start
        // decoding that many frames earlier. Layers I and II need one frame of filter history.
        let start = max(0, target - (first.layer == 3 ? Self.prerollFrames : 2))
        func exact(_ offset: Int, _ index: Int) -> StreamSeekPoint {
            StreamSeekPoint(byteOffset: offset, frame: index * samples - priming, targetFrame: frame, isEstimated: false)
        }
        func estimated(_ offset: Int) -> StreamSeekPoint {
            StreamSeekPoint(byteOffset: max(dataOffset, offset), frame: target * samples - priming, targetFrame: frame,
                            isEstimated: true)
        }
        if target < offsets.count { return exact(offsets[start], start) }
        // The frame held until what follows it is known (it stands unless damage follows).
        if let held, garbage == nil, target == offsets.count, nextIndex == target {
            return start < offsets.count ? exact(offsets[start], start) : exact(held.offset, start)
        }
        // CBR past what was seen: frames of one size (a rate the sample rate divides, so no
        // padding) follow on from the last one seen.
        if let last = offsets.last, !bitRatesVary, !sizesVary, let size = uniformSize, Self.needsNoPadding(first, size) {
            if start < offsets.count { return exact(offsets[start], start) }
            return exact(Self.offset(last, plus: start - (offsets.count - 1), times: Double(size)), start)
        }
        if offsets.isEmpty, Self.needsNoPadding(first, first.frameBytes), info?.kind != .xing, info?.kind != .vbri {
            return exact(Self.offset(dataOffset, plus: start, times: Double(first.frameBytes)), start)
        }
        if let info, let claimed = info.frames, claimed > 0, let position = Self.tableOffset(info, untrimmed: untrimmed,
                                                                                           frames: claimed, samples: samples) {
            let base = info.kind == .vbri ? dataOffset : firstFrameOffset
            return estimated(base + position)
        }
        // Otherwise the average frame so far, from the last frame seen.
        let average = packets > 0 ? Double(packetBytes) / Double(packets) : Double(first.frameBytes)
        let from = offsets.last ?? dataOffset
        let seen = max(0, offsets.count - 1)
        return estimated(Self.offset(from, plus: target - seen, times: average))
    }

    /// `base` plus `count` frames of `size` bytes, clamped far below overflow (a seek far
    /// past a stream's end finds no frame there, and says so by giving no packet).
    private static func offset(_ base: Int, plus count: Int, times size: Double) -> Int {
        let bytes = (Double(count) * size).rounded()
        return base + Int(max(0, min(bytes, Double(Int.max / 4))))
    }

    /// Frames a seek point starts before the frame asked for, in layer III: as many as
    /// `MP3Decoder` has libmpg123 decode before the frame it seeks to (fewer leave the
    /// decoder's state a rounding error away from the file decoder's).
    static let prerollFrames = 12

    /// Whether frames of `size` bytes at this header's rate are exact (no padding slot needed).
    private static func needsNoPadding(_ header: MPEGAudioHeader, _ size: Int) -> Bool {
        // Layer I counts its slots in 4-byte words.
        let slots = header.layer == 1 ? 12 * header.bitRate : header.samplesPerFrame / 8 * header.bitRate
        guard slots % header.sampleRate == 0 else { return false }
        return size == slots / header.sampleRate * (header.layer == 1 ? 4 : 1)
    }

    /// The byte (from the header frame for Xing, from the first audio frame for VBRI) where
    /// the table of contents puts untrimmed frame `untrimmed`.
    private static func tableOffset(_ info: MPEGInfoFrame, untrimmed: Int, frames: Int, samples: Int) -> Int? {
        if let toc = info.toc, toc.count == 100, let bytes = info.bytes {
            let percent = min(99.999, max(0, Double(untrimmed) / Double(frames * samples) * 100))
            let i = Int(percent)
            let low = Double(toc[i]), high = Double(i < 99 ? toc[i + 1] : 256)
            let fraction = (low + (high - low) * (percent - Double(i))) / 256
            return Int((fraction * Double(bytes)).rounded(.down))
        }
        if let table = info.vbriTable {
            let frame = untrimmed / samples
            let entry = frame / table.framesPerEntry
            guard entry < table.bytes.count else { return table.bytes.reduce(0, &+) }
            let before = table.bytes[..<entry].reduce(0, &+)
            let within = Double(frame % table.framesPerEntry) / Double(table.framesPerEntry)
            return before + Int(Double(table.bytes[entry]) * within)
        }
        return nil
    }

    /// The index of the packet at `offset`, when it is one of `offsets` (which ascend).
    private static func index(of offset: Int, in offsets: [Int]) -> Int? {
        var low = 0, high = offsets.count
        while low < high {
            let mid = (low + high) / 2
            if offsets[mid] < offset { low = mid + 1 } else { high = mid }
        }
        return low < offsets.count && offsets[low] == offset ? low : nil
    }

    /// Drops the frame held and any damage being looked through, and finds the next chain of
    /// frames; its packets are numbered from an exact seek point's frame, or from a frame seen
    /// before at the same offset.
    mutating func discontinuity(at point: StreamSeekPoint?) {
        held = nil
        garbage = nil
        lyrics = nil
        truncatedAt = nil
        damage = []
        outbox = []
        searching = true
        discontinuous = true
        seekOffset = nil
        nextIndex = nil
        guard let point, !point.isEstimated, let first else { return }
        let untrimmed = point.frame + primingFrames
        if untrimmed >= 0, untrimmed % first.samplesPerFrame == 0 {
            nextIndex = untrimmed / first.samplesPerFrame
            seekOffset = point.byteOffset
        }
    }
}
