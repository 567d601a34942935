import SpoolCore

/// What a look at the held bytes of an MP3 stream found: the thing looked for, not it, or
/// nothing decided until more bytes arrive.
enum MP3Look<Value> {
    case yes(Value)
    case no
    case more
}

/// Where a Lyrics3 search stands: the stream offset of its `LYRICSBEGIN` and how far past
/// it the search has looked, so that bytes fed one at a time are searched once.
struct MP3LyricsSearch {
    var offset: Int
    var searched: Int
}

/// Looks at the bytes an `MP3StreamParser` holds, as `MPEGStream` looks at a file: frame
/// headers, chains of frames and the tags between and after them. Indexes count from the
/// first held byte; nothing past the last held byte is read, and where the answer depends
/// on bytes not yet fed the answer is `.more` (unless the stream has ended).
extension StreamInput {

    /// The frame header at `i` when it continues `first` (any header when `first` is nil).
    func mpegHeader(at i: Int, continuing first: MPEGAudioHeader?) -> MP3Look<MPEGAudioHeader> {
        guard i >= 0 else { return .no }
        guard count - i >= 4 else { return isFinished ? .no : .more }
        guard let h = MPEGAudioHeader(self[i], self[i + 1], self[i + 2], self[i + 3]) else { return .no }
        if let first, !h.continues(first) { return .no }
        return .yes(h)
    }

    /// Three frames chained from `i`, or a shorter chain that ends at the end of the stream,
    /// at a tag, or in a last frame the stream ends inside (`MPEGStream`'s rule).
    func mpegChainStarts(at i: Int, continuing first: MPEGAudioHeader?, lyrics: inout MP3LyricsSearch?) -> MP3Look<MPEGAudioHeader> {
        let start: MPEGAudioHeader
        switch mpegHeader(at: i, continuing: first) {
        case .yes(let h): start = h
        case .more: return .more
        case .no: return .no
        }
        var p = i
        var h = start
        for _ in 0..<3 {
            guard h.frameBytes <= count - p else {
                if !isFinished { return .more }
                return p > i ? .yes(start) : .no
            }
            p += h.frameBytes
            if p == count && isFinished { return .yes(start) }
            switch mp3TagSize(at: p, lyrics: &lyrics) {
            case .yes: return .yes(start)
            case .more: return .more
            case .no: break
            }
            switch mpegHeader(at: p, continuing: start) {
            case .yes(let next): h = next
            case .more: return .more
            case .no: return .no
            }
        }
        return .yes(start)
    }

    /// Bytes of the tag that starts at `i`: ID3v2, APEv2 with its header, ID3v1 (and the
    /// enhanced tag before one), Lyrics3 v1 or v2. `lyrics` keeps a Lyrics3 search's place
    /// between calls, so bytes fed one at a time are searched once.
    func mp3TagSize(at i: Int, lyrics: inout MP3LyricsSearch?) -> MP3Look<Int> {
        guard i >= 0 else { return .no }
        guard i < count else { return isFinished ? .no : .more }
        switch self[i] {
        case UInt8(ascii: "I"):
            guard let head = mp3Bytes(at: i, count: 10) else { return isFinished ? .no : .more }
            return ID3v2Tag.size(header: head).map { mp3Fits($0, at: i) } ?? .no
        case UInt8(ascii: "A"):
            guard let head = mp3Bytes(at: i, count: APETagFrame.size) else { return mp3Prefix(at: i, "APETAGEX") }
            guard let ape = APETagFrame(head), ape.isHeader else { return .no }
            return mp3Fits(ape.totalSize, at: i)
        case UInt8(ascii: "T"):
            guard let head = mp3Bytes(at: i, count: 4) else { return mp3Prefix(at: i, "TAG") }
            guard head.matches("TAG") else { return .no }
            let size = head.matches("TAG+") ? ID3v1Tag.enhancedSize : ID3v1Tag.size
            return count - i >= size ? .yes(size) : isFinished ? .no : .more
        case UInt8(ascii: "L"):
            return mp3LyricsSize(at: i, &lyrics)
        default:
            return .no
        }
    }

    /// A tag of `size` bytes at `i`, unless the stream has ended before its end (then, as
    /// in `MPEGStream`, its header is taken for damage).
    private func mp3Fits(_ size: Int, at i: Int) -> MP3Look<Int> {
        isFinished && size > count - i ? .no : .yes(size)
    }

    private func mp3LyricsSize(at i: Int, _ memo: inout MP3LyricsSearch?) -> MP3Look<Int> {
        let begin = Lyrics3Tag.begin
        guard let head = mp3Bytes(at: i, count: begin.utf8.count) else { return mp3Prefix(at: i, begin) }
        guard head.matches(begin) else { return .no }
        let start = offset + i
        // v2: a 6-digit size (of everything from LYRICSBEGIN) then LYRICS200; v1: LYRICSEND
        // within 5100 bytes.
        var k = memo?.offset == start ? memo?.searched ?? 11 : 11
        let limit = Lyrics3Tag.v2Limit + 15
        while k + 9 <= limit {
            guard count - i >= k + 9 else {
                if isFinished { return .no }
                memo = MP3LyricsSearch(offset: start, searched: k)
                return .more
            }
            if self[i + k] == UInt8(ascii: "L") {
                let window = Array(peek(9, from: i + k) ?? [])
                if window.matches("LYRICS200"), let digits = mp3Bytes(at: i + k - 6, count: 6),
                   Lyrics3Tag.sixDigits(digits, at: 0) == k - 6 {
                    return .yes(k + 9)
                }
                if k <= Lyrics3Tag.v1Limit + 11, window.matches("LYRICSEND") { return .yes(k + 9) }
            }
            k += 1
        }
        return .no
    }

    /// `count` held bytes from `i`, or nil when fewer are held.
    func mp3Bytes(at i: Int, count: Int) -> [UInt8]? {
        peek(count, from: i).map(Array.init)
    }

    /// Whether the held bytes from `i` (fewer than `text`) begin `text`: then more bytes decide.
    private func mp3Prefix(at i: Int, _ text: String) -> MP3Look<Int> {
        guard !isFinished else { return .no }
        let held = held.dropFirst(i).prefix(text.utf8.count)
        return text.utf8.starts(with: held) ? .more : .no
    }
}
