import Foundation

extension ICYServer {
    /// A metadata block: the length byte N, then N × 16 bytes of `StreamTitle='<title>';`
    /// padded with zero bytes; `[0]` for no title. A title longer than the 4080 bytes a block
    /// holds (N ≤ 255) is cut there.
    static func metadataBlock(title: String?) -> [UInt8] {
        guard let title else { return [0] }
        var text = Array("StreamTitle='\(title)';".utf8.prefix(255 * 16))
        let sixteens = (text.count + 15) / 16
        text += [UInt8](repeating: 0, count: sixteens * 16 - text.count)
        return [UInt8(sixteens)] + text
    }

    /// Takes an ICY stream apart, as a reference for a client's de-interleaving: after every
    /// `metaInterval` audio bytes that are followed by more bytes comes a length byte N and
    /// N × 16 bytes of metadata.
    /// - Parameters:
    ///   - bytes: The body of an answer to a request with `Icy-MetaData: 1`.
    ///   - metaInterval: The answer's `icy-metaint`.
    /// - Returns: The audio bytes, and for each block that is not empty, the audio byte count
    ///   before it and its `StreamTitle` (empty when the block names none).
    public static func stripMetadata(_ bytes: [UInt8], metaInterval: Int)
        -> (audio: [UInt8], titles: [(atByte: Int, title: String)])
    {
        var audio: [UInt8] = []
        var titles: [(atByte: Int, title: String)] = []
        var position = 0
        while position < bytes.count {
            let audioEnd = min(position + metaInterval, bytes.count)
            audio += bytes[position..<audioEnd]
            position = audioEnd
            guard position < bytes.count else { break }
            let blockLength = Int(bytes[position]) * 16
            position += 1
            let blockEnd = min(position + blockLength, bytes.count)
            if blockLength > 0 {
                let text = String(decoding: bytes[position..<blockEnd].filter { $0 != 0 }, as: UTF8.self)
                titles.append((audio.count, streamTitle(in: text)))
            }
            position = blockEnd
        }
        return (audio, titles)
    }

    /// The value of `StreamTitle='…';` in a metadata block's text, or "" when it has none.
    private static func streamTitle(in text: String) -> String {
        guard let start = text.range(of: "StreamTitle='") else { return "" }
        let rest = text[start.upperBound...]
        guard let end = rest.range(of: "';") else { return String(rest) }
        return String(rest[..<end.lowerBound])
    }
}
