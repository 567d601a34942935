import Foundation

/// Where encoded audio comes from: a file, or bytes already in memory.
public struct AudioSource: Sendable, CustomStringConvertible {
    /// The bytes behind a source.
    public enum Location: Sendable {
        /// A file on disk.
        case file(URL)
        /// Encoded bytes in memory.
        case memory(Data)
    }

    /// Where the bytes are.
    public let location: Location
    /// A name for messages: the file path, or the name given to in-memory data.
    public let name: String
    /// A hint at the type (a file extension such as `mp3`, or a MIME type); it only breaks
    /// ties between decoders, the bytes decide.
    public let typeHint: String?

    /// A file source; its extension becomes the type hint.
    public static func file(_ url: URL) -> AudioSource {
        AudioSource(location: .file(url), name: url.path, typeHint: url.pathExtension.isEmpty ? nil : url.pathExtension)
    }

    /// A file source from a path.
    public static func file(path: String) -> AudioSource { .file(URL(fileURLWithPath: path)) }

    /// Encoded audio held in memory.
    ///
    /// - Parameters:
    ///   - data: The encoded bytes, exactly as a file would hold them.
    ///   - name: A name for messages.
    ///   - typeHint: A file extension or MIME type, only used to break ties.
    public static func memory(_ data: Data, name: String = "<memory>", typeHint: String? = nil) -> AudioSource {
        AudioSource(location: .memory(data), name: name, typeHint: typeHint)
    }

    public var description: String { name }
}
