import SpoolCore

/// Just enough of the RIFF/WAVE and AIFF chunk layout to tell whether the sound-data chunk
/// claims more bytes than the file holds (a truncated file, or a header that claims
/// gigabytes). libsndfile decodes what is there; this lets Spool say so.
enum RIFFHeader {
    /// Bytes the data chunk claims beyond the end of the input, or `nil` when it fits or the
    /// layout is not RIFF/AIFF.
    static func missingDataBytes(reader: ByteReader) -> Int? {
        let head = reader.bytes(at: 0, count: 12)
        if let claim = rf64DataBytes(reader: reader) {
            let available = UInt64(max(0, reader.totalSize - 12))
            return claim > available ? Int(clamping: claim - available) : nil
        }
        let isRIFF = head.matches("RIFF") && head.matches("WAVE", at: 8)
        let isAIFF = head.matches("FORM") && (head.matches("AIFF", at: 8) || head.matches("AIFC", at: 8))
        guard isRIFF || isAIFF else { return nil }
        let dataID = isRIFF ? "data" : "SSND"
        var offset = 12
        // Chunk walk bounded by the real size: each step moves forward at least 8 bytes.
        while offset + 8 <= reader.totalSize {
            let header = reader.bytes(at: offset, count: 8)
            guard header.count == 8 else { return nil }
            let size = isRIFF
                ? Int(header[4]) | Int(header[5]) << 8 | Int(header[6]) << 16 | Int(header[7]) << 24
                : Int(header[7]) | Int(header[6]) << 8 | Int(header[5]) << 16 | Int(header[4]) << 24
            let available = reader.totalSize - (offset + 8)
            if header.matches(dataID) {
                return size > available ? size - available : nil
            }
            offset += 8 + size + (size & 1)
        }
        return nil
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
        let head = reader.bytes(at: 0, count: 12)
        guard head.matches("RIFF"), head.matches("WAVE", at: 8) else { return nil }
        var offset = 12
        var formatTag: Int?
        // Bounded by the real size: each step moves forward at least 8 bytes.
        while offset + 8 <= reader.totalSize {
            let header = reader.bytes(at: offset, count: 10)
            guard header.count >= 8 else { return nil }
            let size = Int(header[4]) | Int(header[5]) << 8 | Int(header[6]) << 16 | Int(header[7]) << 24
            if header.matches("fmt "), header.count == 10 { formatTag = Int(header[8]) | Int(header[9]) << 8 }
            if header.matches("data") {
                guard let formatTag else { return nil }
                let start = offset + 8
                return (formatTag, start..<min(reader.totalSize, start + size))
            }
            offset += 8 + size + (size & 1)
        }
        return nil
    }

    /// A chunk before the sound data whose size runs past the end of the file, in a RIFF/WAVE
    /// or AIFF file: the header cannot be walked to its data, and libsndfile 1.2 spins for
    /// ever on such a `LIST` chunk, so Spool refuses it first. `nil` when every chunk up to
    /// the data chunk fits (a cut-off data chunk or trailing chunk is a truncation, not this).
    static func chunkOverrunningTheFile(reader: ByteReader) -> (id: String, offset: Int, size: Int)? {
        let head = reader.bytes(at: 0, count: 12)
        let isRIFF = head.matches("RIFF") && head.matches("WAVE", at: 8)
        let isAIFF = head.matches("FORM") && (head.matches("AIFF", at: 8) || head.matches("AIFC", at: 8))
        guard isRIFF || isAIFF else { return nil }
        let dataID = isRIFF ? "data" : "SSND"
        var offset = 12
        while offset + 8 <= reader.totalSize {
            let header = reader.bytes(at: offset, count: 8)
            guard header.count == 8 else { return nil }
            if header.matches(dataID) { return nil }
            let size = isRIFF
                ? Int(header[4]) | Int(header[5]) << 8 | Int(header[6]) << 16 | Int(header[7]) << 24
                : Int(header[7]) | Int(header[6]) << 8 | Int(header[5]) << 16 | Int(header[4]) << 24
            if offset + 8 + size > reader.totalSize {
                return (String(decoding: header[0..<4].map { (32...126).contains($0) ? $0 : UInt8(ascii: "?") }, as: UTF8.self),
                        offset, size)
            }
            offset += 8 + size + (size & 1)
        }
        return nil
    }
}
