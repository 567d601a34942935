import Foundation
import Spool

/// The commands' input: a file, `-` for standard input, read once, in order, as a stream
/// (`cat song.mp3 | spool play -`) through `StreamingDecoder`, or an http(s) URL, decoded as
/// it downloads (`RemoteAudio`).
enum StandardInput {
    /// What messages call standard input.
    static let name = "standard input"

    /// Whether `path` names standard input.
    static func names(_ path: String) -> Bool { path == "-" }

    /// The http(s) URL `path` spells, if it spells one.
    static func remoteURL(_ path: String) -> URL? {
        guard let url = URL(string: path), url.host != nil, RemoteAudio.handles(url) else { return nil }
        return url
    }

    /// The URL a playlist item of `path` has: the http(s) URL, or the file.
    static func url(_ path: String) -> URL { remoteURL(path) ?? URL(fileURLWithPath: path) }

    /// A decoder of `path`, of standard input for `-`, or of an http(s) URL.
    /// - Throws: The decoder's `AudioError`.
    static func open(_ path: String) throws -> any AudioDecoder {
        if names(path) { return try StreamingDecoder(fileDescriptor: 0, name: name) }
        if let url = remoteURL(path) { return try RemoteAudio.open(url).decoder }
        return try DecoderRegistry.shared.open(path: path)
    }

    /// Decodes the rest of a stream and drops it, so that its frame count is the count
    /// decoding gives (a stream has no end to look at before it is read).
    static func readToEnd(_ decoder: any AudioDecoder) throws {
        var scratch = [Float](repeating: 0, count: 8192 * decoder.format.channelCount)
        while try scratch.withUnsafeMutableBufferPointer({ try decoder.read(into: $0) }) > 0 {}
    }
}
