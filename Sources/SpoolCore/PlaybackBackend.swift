/// The seam both back-ends implement: everything above it (the players, the sound effects,
/// the benchmarks, the tests that compare back-ends) is written once against it.
///
/// A back-end makes *voices*. A voice takes PCM buffers in order, plays them, and tells when
/// each has been consumed so a `VoiceFeeder` can send the next.
public protocol PlaybackBackend: AnyObject, Sendable {
    /// `queue` or `openal`.
    var name: String { get }
    /// The format the back-end mixes to.
    var outputFormat: AudioFormat { get }
    /// Seconds of audio the output holds ahead of the speaker: what a newly started sound
    /// waits behind.
    var outputLatency: Double { get }

    /// Makes a voice for audio of `format`.
    /// - Throws: `AudioError` when the back-end has no voice left or cannot take the format.
    func makeVoice(format: AudioFormat) throws -> any PlaybackVoice
}

/// One sound playing on a back-end: buffers in, played in order, handed back when consumed.
///
/// On the buffer-queue back-end a voice is a `BufferQueue`; on the OpenAL back-end an
/// OpenAL source with queued buffers.
public protocol PlaybackVoice: AnyObject, Sendable {
    /// The format of the buffers it takes.
    var format: AudioFormat { get }
    /// Buffers enqueued and not yet consumed.
    var queuedBufferCount: Int { get }
    /// Whether it is playing (started, not paused, not stopped or played out).
    var isPlaying: Bool { get }
    /// Frames of enqueued audio played since `start`.
    var framesPlayed: Int { get }
    /// Times it ran dry while playing.
    var underrunCount: Int { get }
    /// Seconds from a frame being rendered by this voice to its being heard.
    var outputLatency: Double { get }

    /// Sets what to call (never on a render thread) with each buffer once it is consumed.
    func setBufferConsumedHandler(_ handler: (@Sendable (PCMBuffer) -> Void)?)
    /// Sets what to call when the voice stops by itself, having played everything after `stop(immediately: false)`.
    func setFinishedHandler(_ handler: (@Sendable () -> Void)?)
    /// Queues a buffer after those already queued.
    /// - Throws: `.invalidParameter` for another format, `.invalidState` when stopping or disposed.
    func enqueue(_ buffer: PCMBuffer) throws
    /// Starts or resumes, now or at a `HostTime`.
    func start(atHostTime hostTime: UInt64?) throws
    /// Pauses; `start` resumes at the same frame.
    func pause() throws
    /// Stops: `immediately` drops what is queued (handing it back); otherwise what is queued
    /// plays out first and the finished handler runs.
    func stop(immediately: Bool) throws
    /// Gain 0…1, ramped so nothing clicks.
    func setVolume(_ volume: Float, rampSeconds: Double) throws
    /// Stereo position −1…1 (constant-power law for mono sources, balance for stereo).
    func setPan(_ pan: Float) throws
    /// Playback rate 0.5…2 (varispeed).
    func setPlaybackRate(_ rate: Float) throws
    /// Stops at once and frees the voice.
    func dispose()
}

extension PlaybackVoice {
    /// Starts or resumes now.
    public func start() throws { try start(atHostTime: nil) }
}
