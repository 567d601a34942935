import Foundation
import SpoolCore
import Synchronization

/// Makes decoders of one format: how to recognise its bytes and how to open it.
public struct DecoderFactory: Sendable {
    /// A short name for messages and `spool info`, e.g. `mp3`.
    public let name: String
    /// File extensions (lower-case, no dot) and MIME types that hint at this format.
    public let typeHints: Set<String>
    /// Whether the first bytes of a source (up to 4 KiB) look like this format.
    public let sniff: @Sendable (_ prefix: [UInt8]) -> Bool
    /// Opens a decoder over the source.
    public let open: @Sendable (_ source: AudioSource) throws -> any AudioDecoder

    /// Makes a factory.
    /// - Parameters:
    ///   - name: A short name for the format.
    ///   - typeHints: Extensions and MIME types that hint at it.
    ///   - sniff: Recognises the format's first bytes.
    ///   - open: Opens a decoder.
    public init(name: String, typeHints: Set<String>,
                sniff: @escaping @Sendable ([UInt8]) -> Bool,
                open: @escaping @Sendable (AudioSource) throws -> any AudioDecoder) {
        self.name = name
        self.typeHints = Set(typeHints.map { $0.lowercased() })
        self.sniff = sniff
        self.open = open
    }
}

/// Chooses a decoder for any `AudioSource` by its bytes; a type hint or file extension only
/// breaks ties, so a file with the wrong extension still plays.
///
/// The closest Apple API is `AudioFileOpenURL` with a file-type hint.
public final class DecoderRegistry: Sendable {
    /// The registry with Spool's decoders: MP3 (libmpg123), Ogg Opus (libopusfile), Ogg
    /// Vorbis (libvorbisfile) and WAV/AIFF/CAF/FLAC (libsndfile). An Ogg stream goes to the
    /// decoder of what it carries, told by its first packet: the Vorbis decoder claims only
    /// Vorbis, so Ogg FLAC, Speex and the rest get an error that names them.
    public static let shared = DecoderRegistry(factories: [.mp3, .opus, .vorbis.claimingOnlyOgg(.vorbis), .sndfile])

    private let factories: Locked<[DecoderFactory]>

    /// Makes a registry with the given factories, tried in order.
    public init(factories: [DecoderFactory]) {
        self.factories = Locked(factories)
    }

    /// Adds a format; it is tried before the ones already registered.
    public func register(_ factory: DecoderFactory) {
        factories.withLock { $0.insert(factory, at: 0) }
    }

    /// The factories that claim the source, best first: those whose sniff matches, the
    /// type hint ordering ties; with no sniff match, those the hint names.
    public func candidates(for source: AudioSource) throws -> [DecoderFactory] {
        let prefix = try Self.prefix(of: source)
        let all = factories.withLock { $0 }
        let hint = source.typeHint?.lowercased()
        let sniffed = all.filter { $0.sniff(prefix) }
        if !sniffed.isEmpty {
            guard let hint else { return sniffed }
            return sniffed.filter { $0.typeHints.contains(hint) } + sniffed.filter { !$0.typeHints.contains(hint) }
        }
        if prefix.isEmpty { throw AudioError(.emptyInput, "\(source.name): the input is empty") }
        if prefix.count < 12 {
            throw AudioError(.truncated, "\(source.name): only \(prefix.count) bytes, too few to hold any audio header")
        }
        // An Ogg stream says what it carries in its first page, so when no decoder claims it
        // there is nothing to try by extension: name the payload.
        if OggPayload.isOgg(prefix) {
            throw AudioError(.unsupportedFormat, "\(source.name): \(OggPayload.describe(prefix)), which Spool does not decode")
        }
        guard let hint else { return [] }
        // Named as Ogg but without an Ogg page anywhere near the start: say what it is not,
        // rather than let an Ogg decoder call it "an Ogg stream that is not Vorbis". (A page
        // further on, after junk, is left to the decoders, which resynchronise.)
        if Self.oggTypeHints.contains(hint), !Self.containsOggPage(prefix) {
            throw AudioError(.unsupportedFormat,
                "\(source.name): not an Ogg stream (no Ogg page in its first \(prefix.count) bytes) although named as one, and no other format Spool recognises")
        }
        return all.filter { $0.typeHints.contains(hint) }
    }

    /// Extensions and MIME types that promise an Ogg container.
    static let oggTypeHints: Set<String> = [
        "ogg", "oga", "ogv", "ogx", "opus", "spx", "vorbis",
        "audio/ogg", "audio/opus", "audio/vorbis", "video/ogg", "application/ogg",
    ]

    private static func containsOggPage(_ bytes: [UInt8]) -> Bool {
        var i = 0
        while i + 4 <= bytes.count {
            if bytes[i] == 0x4F, bytes.matches("OggS", at: i) { return true }
            i += 1
        }
        return false
    }

    /// Opens a decoder for the source.
    /// - Parameter source: A file or in-memory encoded audio.
    /// - Returns: A decoder positioned at frame 0.
    /// - Throws: `AudioError` with `.emptyInput`, `.unsupportedFormat` when nothing
    ///   recognises the bytes, or the decoder's own error.
    public func open(_ source: AudioSource) throws -> any AudioDecoder {
        let candidates = try candidates(for: source)
        guard let first = candidates.first else {
            throw AudioError(.unsupportedFormat, "\(source.name): not a recognised audio format (MP3, Ogg Vorbis, Ogg Opus, WAV, AIFF, CAF or FLAC)")
        }
        var firstError: (any Error)?
        for factory in candidates {
            do { return try factory.open(source) } catch { firstError = firstError ?? error }
        }
        if let error = firstError as? AudioError { throw error }
        throw AudioError(.unsupportedFormat, "\(source.name): cannot be decoded as \(first.name)", underlying: firstError)
    }

    private static func prefix(of source: AudioSource) throws -> [UInt8] {
        switch source.location {
        case .memory(let data): return [UInt8](data.prefix(4096))
        case .file: return try ByteReader(source: source).bytes(at: 0, count: 4096)
        }
    }
}

extension DecoderFactory {
    /// This factory, claiming a source only when it is an Ogg stream that carries `payload`
    /// (one of the streams its first pages open) and its own sniff agrees.
    ///
    /// For a decoder whose own sniff takes any Ogg page, e.g. `.vorbis`.
    func claimingOnlyOgg(_ payload: OggPayload) -> DecoderFactory {
        let sniff = self.sniff
        return DecoderFactory(name: name, typeHints: typeHints,
                              sniff: { OggPayload.streams(in: $0).contains(payload) && sniff($0) },
                              open: open)
    }
}

extension DecoderRegistry {
    /// Opens a decoder for a file path.
    public func open(path: String) throws -> any AudioDecoder { try open(.file(path: path)) }
}

/// Opens a decoder for the source with the shared registry.
public func openDecoder(_ source: AudioSource) throws -> any AudioDecoder {
    try DecoderRegistry.shared.open(source)
}

extension [UInt8] {
    /// Whether the bytes at `offset` spell `ascii`.
    func matches(_ ascii: String, at offset: Int = 0) -> Bool {
        let pattern = Array(ascii.utf8)
        guard offset >= 0, count >= offset + pattern.count else { return false }
        return self[offset..<(offset + pattern.count)].elementsEqual(pattern)
    }
}
