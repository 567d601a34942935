/// Turns one encoded stream into Float32 interleaved PCM, frame-exact.
///
/// Spool's decoders (MP3, Ogg Vorbis, libsndfile's formats) conform to it; a program adds a
/// format of its own by conforming a type and registering a factory with `DecoderRegistry`.
/// A decoder is used from one thread at a time.
/// The closest Apple API is `ExtAudioFile` (`ExtAudioFileRead`, `ExtAudioFileSeek`).
public protocol AudioDecoder: AnyObject {
    /// The PCM this decoder produces.
    var format: AudioFormat { get }
    /// Number of frames in the stream (after any gapless trimming): exact when
    /// `isFrameCountExact`, otherwise what a header claims, until decoding reaches the end.
    var frameCount: Int { get }
    /// Whether `frameCount` is known to be what decoding produces (from a scan, an index or
    /// a header checked against the bytes), rather than a header's unverified claim.
    /// Decoders whose every count is exact need not implement it: the default is `true`.
    var isFrameCountExact: Bool { get }
    /// The next frame `read(into:)` will produce.
    var position: Int { get }
    /// Container, codec, stream facts and tags.
    var info: AudioFileInfo { get }
    /// Problems found while decoding that did not stop it (a truncated end, a resync).
    var warnings: [DecodeWarning] { get }

    /// Decodes up to `buffer.count / format.channelCount` frames into `buffer`.
    ///
    /// - Parameter buffer: Room for whole interleaved frames.
    /// - Returns: Frames written; 0 only at the end of the stream.
    /// - Throws: `AudioError` when the stream cannot be decoded further.
    func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int

    /// Moves to `frame`, so that the next read starts exactly there.
    ///
    /// - Parameter frame: A frame in `0...frameCount`.
    /// - Throws: `AudioError.Code.outOfRange` past the end, or a decoding failure.
    func seek(toFrame frame: Int) throws
}

/// What a decoder knows about the stream it reads.
public struct AudioFileInfo: Sendable, Equatable {
    /// The container, e.g. `MP3`, `Ogg`, `WAV`, `AIFF`, `AIFF-C`, `CAF`, `FLAC`.
    public var container: String
    /// The encoding, e.g. `MPEG-1 Layer III`, `Vorbis`, `PCM 16-bit integer`.
    public var codec: String
    /// Average bits per second of the encoded stream, 0 when unknown.
    public var bitRate: Int
    /// Whether the bit rate varies from frame to frame.
    public var isVBR: Bool
    /// Textual metadata.
    public var tags: AudioTags

    /// Makes an info value.
    public init(container: String, codec: String, bitRate: Int = 0, isVBR: Bool = false, tags: AudioTags = AudioTags()) {
        self.container = container
        self.codec = codec
        self.bitRate = bitRate
        self.isVBR = isVBR
        self.tags = tags
    }
}

/// Textual metadata read from a file's tags, keyed by lower-case field name
/// (`title`, `artist`, `album`, `date`, `genre`, `tracknumber`, `comment`, …).
public struct AudioTags: Sendable, Equatable {
    /// All fields, keys lower-case.
    public private(set) var fields: [String: String] = [:]

    /// Makes an empty set of tags.
    public init() {}

    /// A field's value, or `nil`; keys are matched without regard to case.
    public subscript(key: String) -> String? {
        get { fields[key.lowercased()] }
        set { fields[key.lowercased()] = newValue }
    }

    /// Adds a field unless it is already set or the value is blank.
    public mutating func merge(_ key: String, _ value: String?) {
        guard let value = value?.trimmingCharacters(in: .whitespacesAndNewlines.union(.controlCharacters)),
              !value.isEmpty, self[key] == nil else { return }
        self[key] = value
    }

    /// The title, when tagged.
    public var title: String? { self["title"] }
    /// The artist, when tagged.
    public var artist: String? { self["artist"] }
    /// The album, when tagged.
    public var album: String? { self["album"] }
}

/// A problem a decoder met and decoded past.
public struct DecodeWarning: Sendable, Equatable, CustomStringConvertible {
    /// What kind of problem.
    public enum Kind: Sendable, Equatable {
        /// The data ends before its header says it should; decoding stopped at `byteOffset`.
        case truncated
        /// Undecodable bytes were skipped; `byteCount` of them, starting near `byteOffset`.
        case skippedCorruptData
        /// Part of the stream is missing (pages lost, told by their sequence numbers, with no
        /// bytes in their place); decoding went on at `byteOffset`.
        case missingData
        /// The stream changes sample rate, channel count or codec at `byteOffset` (a chained
        /// Ogg link): decoding ends there. `formatChange` says at which frame and to what;
        /// `byteCount` bytes from there on are not decoded.
        case formatChanged
    }

    /// A change of format part-way through a stream.
    public struct FormatChange: Sendable, Equatable {
        /// The first frame not decoded: every frame before it was.
        public var frame: Int
        /// The format decoded up to `frame`.
        public var from: AudioFormat
        /// The sample rate of what follows, in Hz, when it declares one.
        public var toSampleRate: Double?
        /// The channel count of what follows, when it declares one.
        public var toChannelCount: Int?
        /// The codec of what follows, e.g. `Vorbis`, `Opus`.
        public var toCodec: String

        /// Makes a format change.
        public init(frame: Int, from: AudioFormat, toSampleRate: Double?, toChannelCount: Int?, toCodec: String) {
            self.frame = frame
            self.from = from
            self.toSampleRate = toSampleRate
            self.toChannelCount = toChannelCount
            self.toCodec = toCodec
        }
    }

    /// What kind of problem.
    public var kind: Kind
    /// Where in the encoded bytes it was found.
    public var byteOffset: Int
    /// How many bytes it concerns (skipped bytes for corrupt data, missing bytes when known).
    public var byteCount: Int
    /// For `.formatChanged`: where and to what.
    public var formatChange: FormatChange?
    /// A sentence saying more, when the decoder knows more (e.g. what is wrong with a link).
    public var detail: String?

    /// Makes a warning.
    public init(kind: Kind, byteOffset: Int, byteCount: Int, detail: String? = nil) {
        self.kind = kind
        self.byteOffset = byteOffset
        self.byteCount = byteCount
        self.detail = detail
    }

    /// Makes a `.formatChanged` warning.
    public init(formatChange: FormatChange, byteOffset: Int, byteCount: Int, detail: String? = nil) {
        self.init(kind: .formatChanged, byteOffset: byteOffset, byteCount: byteCount, detail: detail)
        self.formatChange = formatChange
    }

    public var description: String {
        let text: String
        switch kind {
        case .truncated: text = "data ends early at byte \(byteOffset)"
        case .skippedCorruptData: text = "skipped \(byteCount) corrupt bytes near byte \(byteOffset)"
        case .missingData: text = "data missing before byte \(byteOffset)"
        case .formatChanged:
            if let change = formatChange {
                var to = change.toCodec
                if let rate = change.toSampleRate, let channels = change.toChannelCount,
                   let format = try? AudioFormat(sampleRate: rate, channelCount: channels) {
                    to = "\(format) (\(change.toCodec))"
                } else if let rate = change.toSampleRate, let channels = change.toChannelCount {
                    to = "\(rate) Hz, \(channels) ch (\(change.toCodec))"
                }
                text = "the stream changes from \(change.from) to \(to) at frame \(change.frame) (byte \(byteOffset)); its last \(byteCount) bytes are not decoded"
            } else {
                text = "the stream changes format at byte \(byteOffset); its last \(byteCount) bytes are not decoded"
            }
        }
        guard let detail else { return text }
        return "\(text): \(detail)"
    }
}

import Foundation

extension AudioDecoder {
    /// The counts of Spool's decoders are exact unless a decoder says otherwise.
    public var isFrameCountExact: Bool { true }

    /// Duration in seconds.
    public var duration: Double { format.seconds(forFrames: frameCount) }

    /// Decodes from the current position to the end into one buffer.
    ///
    /// Memory grows with the frames actually decoded, never with what a header claims.
    /// A stream that changes format part-way ends at the change: when `read(into:)` throws
    /// `.formatChanged` and the decoder has reported the change in `warnings` (a
    /// `.formatChanged` warning, as Spool's Ogg Vorbis decoder does), the frames before it
    /// are returned; an unreported change is still thrown.
    ///
    /// - Parameter maximumFrames: Stop after this many frames.
    /// - Returns: The decoded audio.
    /// - Throws: The decoder's error.
    public func decodeAll(maximumFrames: Int = .max) throws -> PCMBuffer {
        let channels = format.channelCount
        // Nothing is reserved from the header's claim: a corrupt header must not make Spool
        // allocate gigabytes. The memory grows by doubling with what really decodes, the
        // decoder writes straight into it, and the buffer adopts it without a copy.
        var capacity = min(maximumFrames, 4096)
        var samples = PCMStorage.allocate(capacity * channels)
        var total = 0
        do {
            while total < maximumFrames {
                if total == capacity {
                    capacity = min(maximumFrames, capacity * 2)
                    samples = PCMStorage.reallocate(samples, capacity * channels)
                }
                let want = min(capacity, maximumFrames) - total
                let got = try read(into: UnsafeMutableBufferPointer(start: samples + total * channels, count: want * channels))
                if got == 0 { break }
                total += got
            }
        } catch let error as AudioError where error.code == .formatChanged
                    && warnings.contains(where: { $0.kind == .formatChanged }) {
            // The end of what this format holds, reported in `warnings`: keep what was decoded.
        } catch {
            free(samples)
            throw error
        }
        if total < capacity { samples = PCMStorage.reallocate(samples, total * channels) }
        return PCMBuffer(format: format, storage: PCMStorage(adopting: samples, count: total * channels),
                         startFrame: 0, frameCount: total)
    }
}
