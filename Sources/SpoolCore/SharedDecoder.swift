/// An `AudioDecoder` any thread may call: each call takes a lock around the decoder it owns.
///
/// A decoder is used from one thread at a time and is not `Sendable`, so a `@Sendable`
/// closure (a `BufferQueue` refill callback, a `DispatchQueue` block) cannot capture one.
/// Hand it to a `SharedDecoder` instead (`sending`: the caller gives it up), and capture that:
/// calls from any thread are then serialised by a real lock, no unchecked wrapper needed.
/// (`VoiceFeeder(voice:decoder:)` takes a decoder the same way.)
public final class SharedDecoder: AudioDecoder, Sendable {
    private let decoder: Locked<any AudioDecoder>
    /// The PCM the decoder produces.
    public let format: AudioFormat
    /// Container, codec, stream facts and tags, as the decoder read them at open.
    public let info: AudioFileInfo

    /// Takes over `decoder`.
    ///
    /// - Parameter decoder: A decoder nobody else keeps.
    public init(_ decoder: sending any AudioDecoder) {
        format = decoder.format
        info = decoder.info
        self.decoder = Locked(decoder)
    }

    /// The decoder's frame count.
    public var frameCount: Int { decoder.withLock { $0.frameCount } }
    /// Whether the decoder's frame count is exact.
    public var isFrameCountExact: Bool { decoder.withLock { $0.isFrameCountExact } }
    /// The next frame `read(into:)` produces.
    public var position: Int { decoder.withLock { $0.position } }
    /// The decoder's warnings so far.
    public var warnings: [DecodeWarning] { decoder.withLock { $0.warnings } }

    /// Decodes into `buffer` under the lock (`AudioDecoder.read(into:)`).
    public func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int {
        // The caller's memory crosses into the locked region as plain numbers: the decoder
        // only writes through it for the length of this call.
        let address = UInt(bitPattern: buffer.baseAddress), count = buffer.count
        return try decoder.withLock { decoder in
            try decoder.read(into: UnsafeMutableBufferPointer(start: UnsafeMutablePointer(bitPattern: address), count: count))
        }
    }

    /// Seeks under the lock (`AudioDecoder.seek(toFrame:)`).
    public func seek(toFrame frame: Int) throws {
        try decoder.withLock { try $0.seek(toFrame: frame) }
    }
}
