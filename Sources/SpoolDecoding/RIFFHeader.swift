import SpoolCore

/// Just enough of the RIFF/WAVE and AIFF chunk layout for what Spool checks before
/// libsndfile reads a file: whether the sound-data chunk claims more bytes than the file
/// holds (a truncated file, or a header that claims gigabytes), whether a chunk before it
/// runs past the end, and what format tag a WAV's data carries.
enum RIFFHeader {
    /// One chunk's place: its four-character id, where its header starts, its claimed size.
    struct Chunk {
        let id: [UInt8]
        let offset: Int
        let size: Int
        var bodyStart: Int { offset + 8 }
        func isNamed(_ name: String) -> Bool { id.elementsEqual(name.utf8) }
        var name: String { String(decoding: id.map { (32...126).contains($0) ? $0 : UInt8(ascii: "?") }, as: UTF8.self) }
    }

    /// The chunks of a RIFF/WAVE or AIFF file in order, each as its header claims, with the
    /// name of the sound-data chunk (`data` or `SSND`); `nil` for any other layout. The walk
    /// is bounded by the real size: each step moves forward at least 8 bytes, and it ends
    /// after the first chunk that claims more bytes than remain.
    static func chunks(reader: ByteReader) -> (chunks: [Chunk], dataID: String)? {
        let head = reader.bytes(at: 0, count: 12)
        let isRIFF = head.matches("RIFF") && head.matches("WAVE", at: 8)
        let isAIFF = head.matches("FORM") && (head.matches("AIFF", at: 8) || head.matches("AIFC", at: 8))
        guard isRIFF || isAIFF else { return nil }
        var chunks: [Chunk] = []
        var offset = 12
        while offset + 8 <= reader.totalSize {
            let header = reader.bytes(at: offset, count: 8)
            guard header.count == 8 else { break }
            let size = isRIFF
                ? Int(header[4]) | Int(header[5]) << 8 | Int(header[6]) << 16 | Int(header[7]) << 24
                : Int(header[7]) | Int(header[6]) << 8 | Int(header[5]) << 16 | Int(header[4]) << 24
            chunks.append(Chunk(id: Array(header[0..<4]), offset: offset, size: size))
            if offset + 8 + size > reader.totalSize { break }
            offset += 8 + size + (size & 1)
        }
        return (chunks, isRIFF ? "data" : "SSND")
    }

    /// Bytes the data chunk claims beyond the end of the input, or `nil` when it fits or the
    /// layout is not RIFF/AIFF.
    static func missingDataBytes(reader: ByteReader) -> Int? {
        if let claim = rf64DataBytes(reader: reader) {
            let available = UInt64(max(0, reader.totalSize - 12))
            return claim > available ? Int(clamping: claim - available) : nil
        }
        guard let (chunks, dataID) = chunks(reader: reader), let data = chunks.first(where: { $0.isNamed(dataID) }) else {
            return nil
        }
        let available = reader.totalSize - data.bodyStart
        return data.size > available ? data.size - available : nil
    }

    /// The data size an RF64 file's `ds64` chunk claims (EBU Tech 3306: it follows `WAVE`,
    /// holding the RIFF size, data size and sample count as 64-bit little-endian values), or
    /// `nil` when the file is not RF64.
    static func rf64DataBytes(reader: ByteReader) -> UInt64? {
        let head = reader.bytes(at: 0, count: 36)
        guard head.count == 36, head.matches("RF64"), head.matches("WAVE", at: 8), head.matches("ds64", at: 12) else { return nil }
        return (0..<8).reduce(UInt64(0)) { $0 | UInt64(head[28 + $1]) << (8 * UInt64($1)) }
    }

    /// The `fmt ` chunk's format tag and the data chunk's byte range of a RIFF/WAVE file (the
    /// range clamped to the bytes present), or `nil` for anything else.
    static func wavePayload(reader: ByteReader) -> (formatTag: Int, data: Range<Int>)? {
        guard let (chunks, dataID) = chunks(reader: reader), dataID == "data",
              let fmt = chunks.first(where: { $0.isNamed("fmt ") }), fmt.size >= 2,
              let data = chunks.first(where: { $0.isNamed("data") }), fmt.offset < data.offset else { return nil }
        let tag = reader.bytes(at: fmt.bodyStart, count: 2)
        guard tag.count == 2 else { return nil }
        return (Int(tag[0]) | Int(tag[1]) << 8, data.bodyStart..<min(reader.totalSize, data.bodyStart + data.size))
    }

    /// A chunk before the sound data whose size runs past the end of the file: the header
    /// cannot be walked to its data, and libsndfile 1.2 spins for ever on such a `LIST`
    /// chunk, so Spool refuses it first. `nil` when every chunk up to the data chunk fits (a
    /// cut-off data chunk or trailing chunk is a truncation, not this).
    static func chunkOverrunningTheFile(reader: ByteReader) -> (id: String, offset: Int, size: Int)? {
        guard let (chunks, dataID) = chunks(reader: reader) else { return nil }
        for chunk in chunks {
            if chunk.isNamed(dataID) { return nil }
            if chunk.bodyStart + chunk.size > reader.totalSize { return (chunk.name, chunk.offset, chunk.size) }
        }
        return nil
    }
}
