import SpoolCore

/// The tags an MP3 file carries around (never inside) its frames, and their text.
///
/// Every parser here reads a byte array of the file and only ever indexes inside it: sizes
/// come from the file and may be anything, so each is checked against the bytes there are
/// before it is used, and no array is made larger than the bytes actually read.
enum MP3Tags {
    /// Most bytes of one tag read for its text: text comes first in practice, pictures after.
    static let textBytesLimit = 1 << 20

    static func littleEndian32(_ b: [UInt8], _ i: Int) -> Int {
        guard i >= 0, b.count - i >= 4 else { return 0 }
        return Int(b[i]) | Int(b[i + 1]) << 8 | Int(b[i + 2]) << 16 | Int(b[i + 3]) << 24
    }

    static func bigEndian(_ b: [UInt8], _ i: Int, bytes: Int) -> Int {
        guard i >= 0, bytes <= 4, b.count - i >= bytes else { return 0 }
        var value = 0
        for k in 0..<bytes { value = value << 8 | Int(b[i + k]) }
        return value
    }

    /// A 28-bit "synchsafe" integer (7 bits per byte), or nil when a byte has its top bit set.
    static func synchsafe(_ b: [UInt8], _ i: Int) -> Int? {
        guard i >= 0, b.count - i >= 4, b[i] < 0x80, b[i + 1] < 0x80, b[i + 2] < 0x80, b[i + 3] < 0x80 else { return nil }
        return Int(b[i]) << 21 | Int(b[i + 1]) << 14 | Int(b[i + 2]) << 7 | Int(b[i + 3])
    }

    /// ISO-8859-1 bytes, up to the first NUL.
    static func latin1(_ bytes: ArraySlice<UInt8>) -> String {
        var s = String.UnicodeScalarView()
        for b in bytes.prefix(while: { $0 != 0 }) { s.append(Unicode.Scalar(b)) }
        return String(s)
    }
}

// MARK: - ID3v2

/// ID3v2.2, 2.3 and 2.4 (id3.org): a 10-byte header (`ID3`, version, revision, flags,
/// synchsafe size of what follows), frames, padding, and in 2.4 an optional 10-byte footer
/// (`3DI`) that lets the tag be found from the end of a file.
enum ID3v2Tag {
    /// Size of the whole tag whose header is at the start of `h`, or nil when `h` is not a
    /// valid ID3v2 header.
    static func size(header h: [UInt8]) -> Int? {
        guard h.matches("ID3"), h.count >= 10, (2...4).contains(h[3]), h[4] != 0xFF,
              let body = MP3Tags.synchsafe(h, 6) else { return nil }
        return 10 + body + (h[3] == 4 && h[5] & 0x10 != 0 ? 10 : 0)
    }

    /// Size of the whole tag (header, body, footer) whose 10-byte footer is `f`, or nil.
    static func size(footer f: [UInt8]) -> Int? {
        guard f.matches("3DI"), f.count >= 10, f[3] == 4, f[4] != 0xFF, f[5] & 0x10 != 0,
              let body = MP3Tags.synchsafe(f, 6) else { return nil }
        return 20 + body
    }

    /// Reads the text frames of a tag (its first bytes, header included) into `tags`.
    static func read(_ tag: [UInt8], into tags: inout AudioTags) {
        guard let total = size(header: tag) else { return }
        let major = tag[3], flags = tag[5]
        let bodyEnd = min(tag.count, total - (major == 4 && flags & 0x10 != 0 ? 10 : 0))
        guard bodyEnd > 10 else { return }
        var body = Array(tag[10..<bodyEnd])
        let tagUnsynchronised = flags & 0x80 != 0
        // Before 2.4 unsynchronisation applies to the whole tag, frame headers included.
        if major < 4 && tagUnsynchronised { body = resynchronised(body[...]) }
        // 2.2's compression flag has no defined scheme; unknown flags make a tag unreadable.
        if major == 2 && flags & 0x40 != 0 { return }
        if (major == 3 && flags & 0x1F != 0) || (major == 4 && flags & 0x0F != 0) { return }
        var position = 0
        if major >= 3 && flags & 0x40 != 0 {
            // Extended header: 2.3 gives the size after the size field, 2.4 the whole size.
            if major == 3 {
                position = 4 + MP3Tags.bigEndian(body, 0, bytes: 4)
            } else {
                guard let size = MP3Tags.synchsafe(body, 0) else { return }
                position = size
            }
        }
        let headerBytes = major == 2 ? 6 : 10
        var framesRead = 0
        while position >= 0, body.count - position >= headerBytes, framesRead < 4096 {
            framesRead += 1
            guard body[position] != 0 else { break }  // padding
            let idBytes = major == 2 ? 3 : 4
            let id = String(decoding: body[position..<(position + idBytes)], as: UTF8.self)
            let size: Int
            switch major {
            case 2: size = MP3Tags.bigEndian(body, position + 3, bytes: 3)
            // Some writers put plain 32-bit sizes in 2.4 tags; a size that is not synchsafe
            // can only be one of those.
            case 4: size = MP3Tags.synchsafe(body, position + 4) ?? MP3Tags.bigEndian(body, position + 4, bytes: 4)
            default: size = MP3Tags.bigEndian(body, position + 4, bytes: 4)
            }
            let frameFlags = major == 2 ? 0 : MP3Tags.bigEndian(body, position + 8, bytes: 2)
            let start = position + headerBytes
            guard size <= body.count - start else { break }
            position = start + size
            var data = body[start..<(start + size)]
            switch major {
            case 3:
                if frameFlags & 0x00C0 != 0 { continue }  // compressed or encrypted
                if frameFlags & 0x0020 != 0 { data = data.dropFirst() }  // group id
            case 4:
                if frameFlags & 0x000C != 0 { continue }  // compressed or encrypted
                if frameFlags & 0x0040 != 0 { data = data.dropFirst() }  // group id
                if frameFlags & 0x0001 != 0 { data = data.dropFirst(4) }  // data length
                if frameFlags & 0x0002 != 0 || tagUnsynchronised { data = resynchronised(data)[...] }
            default:
                break
            }
            store(id: id, data: data, into: &tags)
        }
    }

    /// The field each text frame fills (2.3/2.4 and 2.2 identifiers).
    private static let fields: [String: String] = [
        "TIT2": "title", "TT2": "title", "TPE1": "artist", "TP1": "artist", "TALB": "album", "TAL": "album",
        "TDRC": "date", "TYER": "date", "TYE": "date", "TCON": "genre", "TCO": "genre",
        "TRCK": "tracknumber", "TRK": "tracknumber", "TPE2": "albumartist", "TP2": "albumartist",
    ]

    private static func store(id: String, data: ArraySlice<UInt8>, into tags: inout AudioTags) {
        if let field = fields[id] {
            guard let encoding = data.first else { return }
            tags.merge(field, text(data.dropFirst(), encoding: encoding))
        } else if id == "COMM" || id == "COM" {
            // Encoding, language (3 bytes), a description ending in NUL, the comment.
            guard let encoding = data.first, data.count >= 4 else { return }
            let rest = data.dropFirst(4)
            let wide = encoding == 1 || encoding == 2
            var cut = rest.startIndex
            while cut < rest.endIndex {
                if wide {
                    guard rest.endIndex - cut >= 2 else { cut = rest.endIndex; break }
                    if rest[cut] == 0 && rest[cut + 1] == 0 { cut += 2; break }
                    cut += 2
                } else {
                    if rest[cut] == 0 { cut += 1; break }
                    cut += 1
                }
            }
            tags.merge("comment", text(rest[cut...], encoding: encoding))
        }
    }

    /// The first value of a text field in the given ID3v2 text encoding.
    static func text(_ bytes: ArraySlice<UInt8>, encoding: UInt8) -> String {
        switch encoding {
        case 0:
            return MP3Tags.latin1(bytes)
        case 1, 2:
            var units: [UInt16] = []
            var bigEndian = encoding == 2
            var i = bytes.startIndex
            if encoding == 1, bytes.count >= 2 {
                if bytes[i] == 0xFE && bytes[i + 1] == 0xFF { bigEndian = true; i += 2 }
                else if bytes[i] == 0xFF && bytes[i + 1] == 0xFE { i += 2 }
            }
            while bytes.endIndex - i >= 2 {
                let unit = bigEndian ? UInt16(bytes[i]) << 8 | UInt16(bytes[i + 1]) : UInt16(bytes[i + 1]) << 8 | UInt16(bytes[i])
                if unit == 0 { break }
                units.append(unit)
                i += 2
            }
            return String(decoding: units, as: UTF16.self)
        default:
            return String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
    }

    /// Undoes unsynchronisation: every 0xFF 0x00 pair becomes 0xFF.
    static func resynchronised(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var previous: UInt8 = 0
        for b in bytes {
            if !(previous == 0xFF && b == 0) { out.append(b) }
            previous = b
        }
        return out
    }
}

// MARK: - ID3v1

/// ID3v1 and v1.1: the last 128 bytes, `TAG`, fixed ISO-8859-1 fields.
enum ID3v1Tag {
    static let size = 128
    /// The "enhanced" tag some players put before ID3v1 (`TAG+`, 227 bytes).
    static let enhancedSize = 227

    static func read(_ b: [UInt8], into tags: inout AudioTags) {
        guard b.count >= size, b.matches("TAG") else { return }
        tags.merge("title", MP3Tags.latin1(b[3..<33]))
        tags.merge("artist", MP3Tags.latin1(b[33..<63]))
        tags.merge("album", MP3Tags.latin1(b[63..<93]))
        tags.merge("date", MP3Tags.latin1(b[93..<97]))
        // v1.1: a zero byte before the last byte of the comment makes that byte a track number.
        if b[125] == 0 && b[126] != 0 {
            tags.merge("comment", MP3Tags.latin1(b[97..<125]))
            tags.merge("tracknumber", String(b[126]))
        } else {
            tags.merge("comment", MP3Tags.latin1(b[97..<127]))
        }
    }
}

// MARK: - APEv2

/// APEv1/v2: items between an optional 32-byte header and a 32-byte footer, both
/// `APETAGEX`, version, size (items + footer, little-endian), item count and flags.
struct APETagFrame {
    static let size = 32
    let tagSize: Int  // items + footer
    let itemCount: Int
    let hasHeader: Bool
    let isHeader: Bool

    init?(_ b: [UInt8], at offset: Int = 0) {
        guard b.matches("APETAGEX", at: offset), b.count - offset >= Self.size else { return nil }
        let version = MP3Tags.littleEndian32(b, offset + 8)
        guard version == 1000 || version == 2000 else { return nil }
        tagSize = MP3Tags.littleEndian32(b, offset + 12)
        itemCount = MP3Tags.littleEndian32(b, offset + 16)
        let flags = MP3Tags.littleEndian32(b, offset + 20)
        // APEv1 has neither a header nor these flags.
        hasHeader = version == 2000 && flags & (1 << 31) != 0
        isHeader = version == 2000 && flags & (1 << 29) != 0
        guard tagSize >= Self.size else { return nil }
    }

    /// Bytes of the whole tag, header included.
    var totalSize: Int { tagSize + (hasHeader ? Self.size : 0) }

    /// Reads the items (the bytes between header and footer, perhaps cut short) into `tags`.
    static func read(items: [UInt8], count: Int, into tags: inout AudioTags) {
        var cursor = 0
        // Item: value size, flags, NUL-terminated key, value.
        for _ in 0..<min(max(count, 0), 1024) {
            guard items.count - cursor >= 8 else { break }
            let valueSize = MP3Tags.littleEndian32(items, cursor)
            let flags = MP3Tags.littleEndian32(items, cursor + 4)
            var keyEnd = cursor + 8
            while keyEnd < items.count, items[keyEnd] != 0 { keyEnd += 1 }
            guard keyEnd < items.count, valueSize <= items.count - keyEnd - 1 else { break }
            let key = String(decoding: items[(cursor + 8)..<keyEnd], as: UTF8.self).lowercased()
            if (flags >> 1) & 3 == 0 {  // UTF-8 text (not binary or an external link)
                let value = items[(keyEnd + 1)..<(keyEnd + 1 + valueSize)]
                let text = String(decoding: value.prefix { $0 != 0 }, as: UTF8.self)
                tags.merge(key == "year" ? "date" : key == "track" ? "tracknumber" : key, text)
            }
            cursor = keyEnd + 1 + valueSize
        }
    }
}

// MARK: - Lyrics3

/// Lyrics3 v1 (`LYRICSBEGIN` … `LYRICSEND`, at most 5100 bytes of lyrics) and v2
/// (`LYRICSBEGIN`, fields, a 6-digit size, `LYRICS200`); both sit before an ID3v1 tag.
enum Lyrics3Tag {
    static let begin = "LYRICSBEGIN"
    static let v1Limit = 5100
    static let v2Limit = 999_999

    /// The value of the 6 decimal digits at `offset`, or nil.
    static func sixDigits(_ b: [UInt8], at offset: Int) -> Int? {
        guard offset >= 0, b.count - offset >= 6 else { return nil }
        var value = 0
        for i in offset..<(offset + 6) {
            guard (0x30...0x39).contains(b[i]) else { return nil }
            value = value * 10 + Int(b[i] - 0x30)
        }
        return value
    }
}
