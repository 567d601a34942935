import Foundation
import Spool

/// The commands' input: a file, or `-` for standard input, read once, in order, as a stream
/// (`cat song.mp3 | spool play -`) through `StreamingDecoder`.
enum StandardInput {
    /// What messages call standard input.
    static let name = "standard input"

    /// Whether `path` names standard input.
    static func names(_ path: String) -> Bool { path == "-" }

    /// A decoder of `path`, or of standard input for `-`.
    /// - Throws: The decoder's `AudioError`.
    static func open(_ path: String) throws -> any AudioDecoder {
        names(path) ? try StreamingDecoder(fileDescriptor: 0, name: name) : try DecoderRegistry.shared.open(path: path)
    }

    /// Decodes the rest of a stream and drops it, so that its frame count is the count
    /// decoding gives (a stream has no end to look at before it is read).
    static func readToEnd(_ decoder: any AudioDecoder) throws {
        var scratch = [Float](repeating: 0, count: 8192 * decoder.format.channelCount)
        while try scratch.withUnsafeMutableBufferPointer({ try decoder.read(into: $0) }) > 0 {}
    }
}
