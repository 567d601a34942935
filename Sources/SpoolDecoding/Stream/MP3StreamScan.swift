import SpoolCore

/// What a look at the held bytes of an MP3 stream found: the thing looked for, not it, or
/// nothing decided until more bytes arrive.
enum MP3Look<Value> {
    case yes(Value)
    case no
    case more
}

/// Looks at the bytes an `MP3StreamParser` holds, as `MPEGStream` looks at a file: frame
/// headers, chains of frames and the tags between and after them. Indexes count from the
/// first held byte; nothing past the last held byte is read, and where the answer depends
/// on bytes not yet fed the answer is `.more` (unless the stream has ended).
struct MP3StreamScan {
    /// The bytes held.
    let input: StreamInput

    /// Whether no more bytes will come.
    var isFinished: Bool { input.isFinished }

    /// The frame header at `i` when it continues `first` (any header when `first` is nil).
    func header(at i: Int, continuing first: MPEGAudioHeader?) -> MP3Look<MPEGAudioHeader> {
        guard i >= 0 else { return .no }
        guard input.count - i >= 4 else { return isFinished ? .no : .more }
        guard let h = MPEGAudioHeader(input[i], input[i + 1], input[i + 2], input[i + 3]) else { return .no }
        if let first, !h.continues(first) { return .no }
        return .yes(h)
    }

    /// Three frames chained from `i`, or a shorter chain that ends at the end of the stream,
    /// at a tag, or in a last frame the stream ends inside (`MPEGStream`'s rule).
    func chainStarts(at i: Int, continuing first: MPEGAudioHeader?, lyrics: inout LyricsSearch?) -> MP3Look<MPEGAudioHeader> {
        let start: MPEGAudioHeader
        switch header(at: i, continuing: first) {
        case .yes(let h): start = h
        case .more: return .more
        case .no: return .no
        }
        var p = i
        var h = start
        for _ in 0..<3 {
            guard h.frameBytes <= input.count - p else {
                if !isFinished { return .more }
                return p > i ? .yes(start) : .no
            }
            p += h.frameBytes
            if p == input.count && isFinished { return .yes(start) }
            switch tagSize(at: p, lyrics: &lyrics) {
            case .yes: return .yes(start)
            case .more: return .more
            case .no: break
            }
            switch header(at: p, continuing: start) {
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
    func tagSize(at i: Int, lyrics: inout LyricsSearch?) -> MP3Look<Int> {
        guard i >= 0 else { return .no }
        guard i < input.count else { return isFinished ? .no : .more }
        switch input[i] {
        case UInt8(ascii: "I"):
            guard let head = bytes(at: i, count: 10) else { return isFinished ? .no : .more }
            return ID3v2Tag.size(header: head).map(fits(at: i)) ?? .no
        case UInt8(ascii: "A"):
            guard let head = bytes(at: i, count: APETagFrame.size) else { return prefix(at: i, "APETAGEX") }
            guard let ape = APETagFrame(head), ape.isHeader else { return .no }
            return fits(at: i)(ape.totalSize)
        case UInt8(ascii: "T"):
            guard let head = bytes(at: i, count: 4) else { return prefix(at: i, "TAG") }
            guard head.matches("TAG") else { return .no }
            let size = head.matches("TAG+") ? ID3v1Tag.enhancedSize : ID3v1Tag.size
            return input.count - i >= size ? .yes(size) : isFinished ? .no : .more
        case UInt8(ascii: "L"):
            return lyricsSize(at: i, &lyrics)
        default:
            return .no
        }
    }

    /// A tag of `size` bytes at `i`, unless the stream has ended before its end (then, as
    /// in `MPEGStream`, its header is taken for damage).
    private func fits(at i: Int) -> (Int) -> MP3Look<Int> {
        { size in isFinished && size > input.count - i ? .no : .yes(size) }
    }

    /// Where a Lyrics3 search stands: the stream offset of its `LYRICSBEGIN` and how far
    /// past it the search has looked.
    struct LyricsSearch {
        var offset: Int
        var searched: Int
    }

    private func lyricsSize(at i: Int, _ memo: inout LyricsSearch?) -> MP3Look<Int> {
        let begin = Lyrics3Tag.begin
        guard let head = bytes(at: i, count: begin.utf8.count) else { return prefix(at: i, begin) }
        guard head.matches(begin) else { return .no }
        let offset = input.offset + i
        // v2: a 6-digit size (of everything from LYRICSBEGIN) then LYRICS200; v1: LYRICSEND
        // within 5100 bytes.
        var k = memo?.offset == offset ? memo?.searched ?? 11 : 11
        let limit = Lyrics3Tag.v2Limit + 15
        while k + 9 <= limit {
            guard input.count - i >= k + 9 else {
                if isFinished { return .no }
                memo = LyricsSearch(offset: offset, searched: k)
                return .more
            }
            if input[i + k] == UInt8(ascii: "L") {
                let window = Array(input.peek(9, from: i + k) ?? [])
                if window.matches("LYRICS200"), let digits = bytes(at: i + k - 6, count: 6),
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
    func bytes(at i: Int, count: Int) -> [UInt8]? {
        input.peek(count, from: i).map(Array.init)
    }

    /// Whether the held bytes from `i` (fewer than `text`) begin `text`: then more bytes decide.
    private func prefix(at i: Int, _ text: String) -> MP3Look<Int> {
        guard !isFinished else { return .no }
        let held = input.held.dropFirst(i).prefix(text.utf8.count)
        return text.utf8.starts(with: held) ? .more : .no
    }
}
