/// Takes Icecast/SHOUTcast metadata out of a radio stream's bytes.
///
/// With `icy-metaint: N` the server sends N audio bytes, then one length byte L, then L × 16
/// bytes of text (`StreamTitle='…';StreamUrl='…';`, padded with zero bytes), then N audio
/// bytes again. L is 0 when nothing changed. Only audio bytes reach the parser; each title
/// that differs from the last is reported with the number of audio bytes before it.
struct IcyMetadataReader {
    private enum Stage {
        case audio(left: Int)
        case length
        case text(left: Int)
    }

    private let interval: Int?
    private var stage: Stage
    private var text: [UInt8] = []
    private var lastTitle: String?

    /// A reader for `interval` audio bytes between blocks; nil: no metadata, every byte is audio.
    init(interval: Int?) {
        self.interval = interval
        stage = .audio(left: interval ?? 0)
    }

    /// Appends the audio bytes of `bytes` to `audio`, and each new title to `titles` with
    /// the count of audio bytes appended before it (counted from `audio`'s start in this call).
    mutating func split(_ bytes: UnsafeRawBufferPointer, audio: inout [UInt8], titles: inout [(String, Int)]) {
        guard let interval else {
            audio.append(contentsOf: bytes)
            return
        }
        let start = audio.count
        var i = 0
        while i < bytes.count {
            switch stage {
            case .audio(let left):
                let take = min(left, bytes.count - i)
                audio.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[i..<(i + take)]))
                i += take
                stage = take == left ? .length : .audio(left: left - take)
            case .length:
                let blocks = Int(bytes[i])
                i += 1
                text.removeAll(keepingCapacity: true)
                stage = blocks == 0 ? .audio(left: interval) : .text(left: blocks * 16)
            case .text(let left):
                let take = min(left, bytes.count - i)
                text.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[i..<(i + take)]))
                i += take
                if take < left {
                    stage = .text(left: left - take)
                } else {
                    stage = .audio(left: interval)
                    if let title = Self.title(in: text), title != lastTitle {
                        lastTitle = title
                        titles.append((title, audio.count - start))
                    }
                }
            }
        }
    }

    /// The `StreamTitle` of a metadata block: the text between `StreamTitle='` and the next
    /// `';` (a title may hold a quote), as UTF-8, or Latin-1 when it is not UTF-8.
    static func title(in block: [UInt8]) -> String? {
        let end = block.firstIndex(of: 0) ?? block.endIndex
        let bytes = Array(block[..<end])
        let key = Array("StreamTitle='".utf8)
        guard let keyStart = firstRange(of: key, in: bytes, from: 0) else { return nil }
        let valueStart = keyStart + key.count
        let valueEnd = firstRange(of: Array("';".utf8), in: bytes, from: valueStart)
            ?? (bytes.last == UInt8(ascii: "'") && bytes.count > valueStart ? bytes.count - 1 : bytes.count)
        let value = Array(bytes[valueStart..<max(valueStart, valueEnd)])
        if let text = String(validating: value, as: UTF8.self) { return text }
        return String(value.map { Character(Unicode.Scalar($0)) })
    }

    private static func firstRange(of pattern: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
        guard pattern.count <= bytes.count else { return nil }
        var i = start
        while i + pattern.count <= bytes.count {
            if bytes[i..<(i + pattern.count)].elementsEqual(pattern) { return i }
            i += 1
        }
        return nil
    }
}
