/// Audio a back-end holds once for any number of voices: uploaded when made, played by each
/// `SharedBufferVoice` made on it without a copy. OpenAL's static buffers are one (an AL
/// buffer, `alBufferData` once, any number of sources on it with `AL_BUFFER`).
///
/// A back-end that has them says so with `PlaybackBackend.supportsSharedBuffers`; the others
/// answer `makeSharedBuffer(_:)` with `AudioError.Code.unsupported`.
public protocol SharedBuffer: AnyObject, Sendable {
    /// The format it holds its frames in.
    var format: AudioFormat { get }
    /// Frames it holds.
    var frameCount: Int { get }
}

/// One play of a `SharedBuffer`: started with `play()`, from its first frame to its last,
/// once. The corresponding OpenAL notion is a static source (`AL_STATIC`).
public protocol SharedBufferVoice: AnyObject, Sendable {
    /// Sets what to call, once, when a play reaches the buffer's last frame (not when
    /// `stop()` ends it). It runs on the back-end's callback thread, never on a render thread.
    /// - Parameter handler: The handler, or `nil` to stop listening.
    func setFinishedHandler(_ handler: (@Sendable () -> Void)?)
    /// Plays the buffer from its first frame. The corresponding OpenAL call is `alSourcePlay`.
    /// - Throws: `AudioError.Code.invalidState` once the voice is disposed or its device gone.
    func play() throws
    /// Stops at once; the finished handler is not called. The corresponding OpenAL call is
    /// `alSourceStop`.
    /// - Throws: `AudioError.Code.invalidState` once the voice is disposed or its device gone.
    func stop() throws
    /// Lets go of what the voice holds on the device; later calls throw.
    func dispose()
    /// Whether a play is under way.
    var isPlaying: Bool { get }
    /// Frames of the buffer taken into the output since the last `play()` (0 once it stopped).
    var framesPlayed: Int { get }
    /// Seconds the output holds ahead of the speaker: what a play waits behind.
    var outputLatency: Double { get }
}

// The optional capability, cubeb's way: a back-end that lacks it leaves the defaults, which
// say so, and callers ask before they use it.
extension PlaybackBackend {
    /// Whether `makeSharedBuffer(_:)` and `makeVoice(playing:priority:)` work on this back-end.
    public var supportsSharedBuffers: Bool { false }

    /// Holds `buffer` once on the back-end for any number of voices.
    /// - Parameter buffer: The audio, in `outputFormat`'s rate.
    /// - Returns: The shared buffer.
    /// - Throws: `AudioError.Code.unsupported` where `supportsSharedBuffers` is false.
    public func makeSharedBuffer(_ buffer: PCMBuffer) throws -> any SharedBuffer {
        throw AudioError(.unsupported, "\(name): the back-end has no shared buffers")
    }

    /// Makes a voice that plays `buffer`.
    /// - Parameters:
    ///   - buffer: A shared buffer this back-end made.
    ///   - priority: Its claim on the device's voices when they run out; higher keeps its voice.
    /// - Returns: The voice, stopped.
    /// - Throws: `AudioError.Code.unsupported` where `supportsSharedBuffers` is false.
    public func makeVoice(playing buffer: any SharedBuffer, priority: Int) throws -> any SharedBufferVoice {
        throw AudioError(.unsupported, "\(name): the back-end has no shared buffers")
    }
}
