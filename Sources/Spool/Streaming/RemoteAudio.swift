import Foundation
import SpoolCore
import SpoolDecoding

/// Audio at an http(s) URL, decoded as it downloads: an `HTTPSource` read through a
/// `StreamingDecoder`, which seeks by `Range` requests where the server takes them.
public enum RemoteAudio {
    /// Whether `url` is one this opens (http or https) rather than a file.
    public static func handles(_ url: URL) -> Bool {
        guard let scheme = url.scheme?.lowercased() else { return false }
        return scheme == "http" || scheme == "https"
    }

    /// Opens `url` and reads until its format is known.
    /// - Parameters:
    ///   - url: An http or https URL of audio in a format Spool decodes.
    ///   - configuration: The source's read-ahead, request size, timeout and retries.
    ///   - onTitle: Called with a radio stream's titles and the audio byte each comes before.
    /// - Returns: The decoder and the source it reads, for its buffer fill.
    /// - Throws: The source's `AudioError` (an HTTP status, a text body, a broken connection)
    ///   or the stream parser's (`.unsupportedFormat`, `.truncated`, …).
    public static func open(_ url: URL, configuration: HTTPSource.Configuration = HTTPSource.Configuration(),
                            onTitle: (@Sendable (String, Int) -> Void)? = nil) throws -> (decoder: StreamingDecoder, source: HTTPSource) {
        let source = try HTTPSource(url: url, configuration: configuration, onTitle: onTitle)
        let hint = source.response.contentType ?? (url.pathExtension.isEmpty ? nil : url.pathExtension)
        let decoder = try StreamingDecoder(
            name: url.absoluteString, typeHint: hint,
            reader: { try source.read(into: $0) },
            seeker: source.response.acceptsRanges ? { try source.seek(toByte: $0) } : nil)
        if decoder.info.bitRate > 0 { source.byteRate = Double(decoder.info.bitRate) / 8 }
        return (decoder, source)
    }
}
