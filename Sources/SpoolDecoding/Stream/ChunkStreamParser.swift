import SpoolCore

/// The WAV (RIFF, RF64/BW64), AIFF, AIFF-C and CAF stream parser: walks the chunks as they
/// arrive and cuts the data chunk into packets.
///
/// The format chunk (`fmt `, `COMM`, `desc`) and the text chunks (`LIST`/`INFO`, AIFF's
/// `NAME`, `AUTH`, `(c) `, `ANNO`, CAF's `info`) are held until whole and read; every other
/// chunk is skipped with `StreamInput.skip` as it arrives, whatever size it claims, so it is
/// never held. The data chunk (`data`, `SSND`) starts the packets.
///
/// In Apple's terms each PCM frame is a packet (`framesPerPacket` 1, `bytesPerPacket` the
/// bytes of a frame, `audioDataPacketCount` the frames), but one `StreamPacket` per frame
/// would be far too slow to deliver, so a `StreamPacket` here carries a run of whole frames:
/// `packetFrames` of them counted from the start of the data (or from a seek's frame), the
/// last run shorter. An IMA ADPCM packet is one block. `maximumPacketSize` is the largest
/// `StreamPacket`'s byte count. Packets are the same however the bytes are cut up.
///
/// The frame count is exact from the data chunk's size (RF64's `ds64` size, or for a CAF
/// data chunk of size -1, the bytes that arrive); when the stream ends before the data
/// chunk does, `audioDataByteCount`, `audioDataPacketCount` and `duration` are reported
/// again with what arrived, whole frames only, as libsndfile counts a truncated file.
struct ChunkStreamParser: StreamFormatParser {
    /// Frames of PCM in each full `StreamPacket`.
    static let packetFrames = 4096
    /// Most bytes of a chunk that is read (format, `ds64`, text); a format chunk claiming
    /// more is corrupt, a text chunk claiming more is skipped.
    static let formatChunkLimit = 1 << 16
    static let textChunkLimit = 1 << 20

    private enum Stage: Equatable {
        /// The file header: `RIFF`/`RF64`/`BW64` + size + `WAVE`, `FORM` + size + type, `caff` + version + flags.
        case fileHeader
        /// The next chunk's header.
        case chunkHeader
        /// A chunk whose body is read once held (`id`, its size and the pad byte after it).
        case body(id: String, size: Int, pad: Int)
        /// The 8 bytes of offset and block size an `SSND` chunk starts with.
        case soundHeader(size: Int)
        /// CAF's 4-byte edit count in front of the data.
        case editCount(size: Int?)
        /// The audio.
        case audio
    }

    private let format: StreamFileFormat
    private var stage = Stage.fileHeader
    private var isLittleEndian: Bool { format == .wave }
    private var isRF64 = false
    /// The data size RF64's `ds64` chunk gives.
    private var ds64DataBytes: Int?
    private var layout: ChunkStreamFormat?
    private var tags = AudioTags()
    /// Stream offset of the first audio byte.
    private var dataStart: Int?
    /// Audio bytes the data chunk claims, nil for "to the end of the stream" (CAF size -1).
    private var dataBytes: Int?
    /// Audio bytes passed so far: the next packet starts `delivered` bytes into the data.
    private var delivered = 0
    /// The pad byte after a data chunk of odd size, to skip once the audio is done.
    private var dataPad = 0
    private var audioDone = false
    /// Bytes left held when `parse` last returned: dropped by a discontinuity with no seek.
    private var heldAtReturn = 0

    /// Makes the parser of one of the chunk containers.
    /// - Throws: `.unsupportedFormat` for a format that is none of them.
    init(format: StreamFileFormat) throws {
        guard [.wave, .aiff, .aifc, .caf].contains(format) else {
            throw AudioError(.unsupportedFormat, "the chunk parser reads WAV, AIFF, AIFF-C and CAF, not \(format.rawValue)")
        }
        self.format = format
    }

    // MARK: - Parsing

    mutating func parse(_ input: inout StreamInput, _ events: inout StreamEvents) throws {
        while try step(&input, &events) {}
        heldAtReturn = input.count
    }

    /// Takes one step through the stream; false when more bytes are needed.
    private mutating func step(_ input: inout StreamInput, _ events: inout StreamEvents) throws -> Bool {
        switch stage {
        case .fileHeader:
            return try fileHeader(&input, &events)
        case .chunkHeader:
            return try chunkHeader(&input, &events)
        case .body(let id, let size, let pad):
            guard let body = input.peek(size) else { return false }
            try readChunk(id, body, &events)
            input.skip(size + pad)
            stage = .chunkHeader
            return true
        case .soundHeader(let size):
            guard let head = input.peek(8).map(Array.init) else { return false }
            input.consume(8)
            let offset = head[0..<4].reduce(0) { $0 << 8 | Int($1) }
            let audio = size - 8
            guard audio >= 0, offset <= audio else {
                throw AudioError(.corruptData, "the 'SSND' chunk of \(size) bytes puts its audio \(offset) bytes in")
            }
            input.skip(offset)
            dataPad = size & 1
            try beginAudio(at: input.offset, bytes: audio - offset, &events)
            return true
        case .editCount(let size):
            guard input.count >= 4 else { return false }
            input.consume(4)
            try beginAudio(at: input.offset, bytes: size.map { $0 - 4 }, &events)
            return true
        case .audio:
            return try audio(&input, &events)
        }
    }

    private mutating func fileHeader(_ input: inout StreamInput, _ events: inout StreamEvents) throws -> Bool {
        let size = format == .caf ? 8 : 12
        guard let head = input.peek(size).map(Array.init) else { return false }
        events.set(.fileFormat, \.fileFormat, format)
        if format == .caf {
            let version = Int(head[4]) << 8 | Int(head[5])
            guard version == 1 else { throw AudioError(.unsupportedFormat, "the CAF stream is version \(version); Spool reads version 1") }
        } else {
            isRF64 = head[0..<4].elementsEqual("RF64".utf8) || head[0..<4].elementsEqual("BW64".utf8)
        }
        input.consume(size)
        stage = .chunkHeader
        return true
    }

    private mutating func chunkHeader(_ input: inout StreamInput, _ events: inout StreamEvents) throws -> Bool {
        let headerSize = format == .caf ? 12 : 8
        guard let head = input.peek(headerSize).map(Array.init) else { return false }
        let id = String(decoding: head[0..<4].map { (32...126).contains($0) ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
        let at = input.offset
        var size: Int
        if format == .caf {
            let raw = head[4..<12].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            if raw == UInt64.max, id == "data" {
                input.consume(headerSize)
                stage = .editCount(size: nil)
                return true
            }
            guard raw <= UInt64(Int.max / 2) else {
                throw AudioError(.corruptData, "the CAF '\(id)' chunk at byte \(at) claims \(Int64(bitPattern: raw)) bytes")
            }
            size = Int(raw)
        } else {
            size = isLittleEndian
                ? Int(head[4]) | Int(head[5]) << 8 | Int(head[6]) << 16 | Int(head[7]) << 24
                : Int(head[7]) | Int(head[6]) << 8 | Int(head[5]) << 16 | Int(head[4]) << 24
        }
        input.consume(headerSize)
        let pad = format == .caf ? 0 : size & 1
        if audioDone {
            // After the audio only text chunks are read; the rest is skipped.
            if isText(id), size <= Self.textChunkLimit { stage = .body(id: id, size: size, pad: pad) } else { input.skip(size + pad) }
            return true
        }
        switch id {
        case "data" where format == .wave || format == .caf:
            if format == .caf {
                guard size >= 4 else { throw AudioError(.corruptData, "the CAF 'data' chunk at byte \(at) has \(size) bytes, too few for its edit count") }
                stage = .editCount(size: size)
                return true
            }
            if isRF64, let claimed = ds64DataBytes { size = claimed }
            dataPad = size & 1
            try beginAudio(at: input.offset, bytes: size, &events)
        case "SSND" where format == .aiff || format == .aifc:
            stage = .soundHeader(size: size)
        case "fmt " where format == .wave, "COMM" where format != .wave && format != .caf,
             "desc" where format == .caf, "ds64" where isRF64:
            guard size <= Self.formatChunkLimit else {
                throw AudioError(.corruptData, "the '\(id)' chunk at byte \(at) claims \(size) bytes, more than any such chunk holds")
            }
            stage = .body(id: id, size: size, pad: pad)
        default:
            if isText(id), size <= Self.textChunkLimit {
                stage = .body(id: id, size: size, pad: pad)
            } else {
                input.skip(size + pad)
            }
        }
        return true
    }

    /// Whether a chunk is one whose text becomes tags.
    private func isText(_ id: String) -> Bool {
        switch format {
        case .wave: id == "LIST"
        case .caf: id == "info"
        default: ChunkStreamFormat.aiffTagKey(id) != nil
        }
    }

    /// Reads a chunk that is held whole.
    private mutating func readChunk(_ id: String, _ body: ArraySlice<UInt8>, _ events: inout StreamEvents) throws {
        switch id {
        case "fmt ": layout = try ChunkStreamFormat.wave(body)
        case "COMM": layout = try ChunkStreamFormat.aiff(body, isAIFC: format == .aifc)
        case "desc": layout = try ChunkStreamFormat.caf(body)
        case "ds64":
            let b = Array(body)
            guard b.count >= 16 else { throw AudioError(.corruptData, "the RF64 'ds64' chunk has \(b.count) bytes, fewer than 16") }
            let claim = (0..<8).reduce(UInt64(0)) { $0 | UInt64(b[8 + $1]) << (8 * UInt64($1)) }
            guard claim <= UInt64(Int.max) else {
                throw AudioError(.corruptData, "the RF64 ds64 chunk claims \(claim) bytes of audio, more than any stream holds")
            }
            ds64DataBytes = Int(claim)
        case "LIST": ChunkStreamFormat.infoTags(body, into: &tags)
        case "info": ChunkStreamFormat.cafInfoTags(body, into: &tags)
        default:
            if let key = ChunkStreamFormat.aiffTagKey(id) { tags.merge(key, ChunkStreamFormat.text(body)) }
        }
        if !tags.fields.isEmpty { events.set(.tags, \.tags, tags) }
    }

    /// The data chunk begins at stream byte `start`: every property is known.
    private mutating func beginAudio(at start: Int, bytes: Int?, _ events: inout StreamEvents) throws {
        guard let layout else {
            throw AudioError(.corruptData, "the stream's audio begins at byte \(start) before any format chunk says what it is")
        }
        dataStart = start
        dataBytes = bytes
        delivered = 0
        events.set(.dataFormat, \.dataFormat, layout.dataFormat)
        events.set(.dataOffset, \.dataOffset, start)
        events.set(.bitRate, \.bitRate, layout.bitRate)
        events.set(.maximumPacketSize, \.maximumPacketSize, packetBytes(layout, remaining: bytes))
        if let bytes { report(bytes: bytes, layout, &events) }
        events.beginPackets()
        stage = .audio
    }

    /// Reports the counts that `bytes` of audio give.
    private func report(bytes: Int, _ layout: ChunkStreamFormat, _ events: inout StreamEvents) {
        let frames = layout.frames(inBytes: bytes)
        events.set(.audioDataByteCount, \.audioDataByteCount, bytes)
        events.set(.audioDataPacketCount, \.audioDataPacketCount, layout.packets(inBytes: bytes))
        events.set(.duration, \.duration, StreamDuration(frames: frames, seconds: Double(frames) / layout.dataFormat.sampleRate,
                                                         basis: .frameCount))
    }

    /// Bytes of a full packet, or of all there is when less.
    private func packetBytes(_ layout: ChunkStreamFormat, remaining: Int?) -> Int {
        let full: Int
        if case .imaADPCM = layout.dataFormat.codec {
            full = layout.unitBytes
        } else {
            // At most 1 MiB per packet, whatever the frame size.
            full = max(1, min(Self.packetFrames, (1 << 20) / layout.unitBytes)) * layout.unitBytes
        }
        return min(full, remaining ?? full)
    }

    /// Cuts the held audio into packets.
    private mutating func audio(_ input: inout StreamInput, _ events: inout StreamEvents) throws -> Bool {
        guard let layout, let dataStart else { return false }
        let remaining = dataBytes.map { max(0, $0 - delivered) }
        if remaining == 0 {
            finishAudio(&input)
            return true
        }
        let isADPCM = if case .imaADPCM = layout.dataFormat.codec { true } else { false }
        let want = packetBytes(layout, remaining: remaining)
        var take: Int
        if input.count >= want {
            take = want
        } else if input.isFinished {
            take = input.count
        } else {
            return false
        }
        // PCM packets hold whole frames; an ADPCM block cut short still decodes to a whole block.
        if !isADPCM { take -= take % layout.unitBytes }
        guard take > 0 else {
            // Less than a frame: the data chunk's odd tail, or the stream's cut-off end.
            if input.isFinished { return false }
            input.skip(want)
            delivered += want
            return true
        }
        let startFrame = delivered / layout.unitBytes * layout.framesPerUnit
        let frames = isADPCM ? layout.framesPerUnit : take / layout.unitBytes
        events.packet(StreamPacket(byteOffset: dataStart + delivered, bytes: input.take(take), frameCount: frames, startFrame: startFrame))
        delivered += take
        return true
    }

    /// The data chunk is done: skip its pad byte and read any chunk after it.
    private mutating func finishAudio(_ input: inout StreamInput) {
        input.skip(dataPad)
        dataPad = 0
        audioDone = true
        stage = .chunkHeader
    }

    mutating func finish(_ input: inout StreamInput, _ events: inout StreamEvents) throws {
        guard let layout, dataStart != nil, events.properties.readyToProducePackets else { return }
        if stage == .audio, dataBytes.map({ delivered < $0 }) ?? true {
            // The stream ended inside the data (or, for CAF's "to the end", at its end):
            // what arrived is all there is.
            var present = delivered
            if case .imaADPCM = layout.dataFormat.codec {} else { present -= present % layout.unitBytes }
            dataBytes = present
            report(bytes: present, layout, &events)
        }
    }

    // MARK: - Seeking

    func seekPoint(toFrame frame: Int, _ properties: StreamProperties) throws -> StreamSeekPoint {
        guard let layout, let dataStart else {
            throw AudioError(.invalidState, "the stream's audio has not begun, so there is nowhere to seek to")
        }
        var unit = frame / layout.framesPerUnit
        if let dataBytes { unit = min(unit, layout.packets(inBytes: dataBytes)) }
        let (bytes, overflow) = unit.multipliedReportingOverflow(by: layout.unitBytes)
        guard !overflow, dataStart <= Int.max - bytes else { throw AudioError(.outOfRange, "frame \(frame) lies past any stream") }
        let start = unit * layout.framesPerUnit
        return StreamSeekPoint(byteOffset: dataStart + bytes, frame: start, targetFrame: max(start, frame), isEstimated: false)
    }

    mutating func discontinuity(at point: StreamSeekPoint?) {
        guard let layout, let dataStart else { return }
        if let point, point.byteOffset >= dataStart {
            delivered = point.byteOffset - dataStart
            audioDone = false
            stage = .audio
        } else if stage == .audio {
            // An unknown gap: go on at the next whole unit of where the bytes now start.
            delivered += heldAtReturn
            let misaligned = delivered % layout.unitBytes
            if misaligned > 0 { delivered += layout.unitBytes - misaligned }
        }
    }
}
