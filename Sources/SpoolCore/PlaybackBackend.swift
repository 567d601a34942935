/// The seam both back-ends implement: everything above it (the players, the sound effects,
/// the benchmarks, the tests that compare back-ends) is written once against it.
///
/// A back-end makes *voices*. A voice takes PCM buffers in order, plays them, and tells when
/// each has been consumed so a `VoiceFeeder` can send the next.
///
/// A back-end owns its output device: it starts it when made and stops it when it goes. Its
/// voices hold it, so it goes once the program has let go of it and of every voice it made.
public protocol PlaybackBackend: AnyObject, Sendable {
    /// `queue` or `openal`.
    var name: String { get }
    /// The format the back-end mixes to.
    var outputFormat: AudioFormat { get }
    /// Seconds of audio the output holds ahead of the speaker: what a sound playing is heard
    /// behind, and what a newly started one waits behind unless the output rewinds (the
    /// buffer queue on a device that does starts it within a few milliseconds).
    var outputLatency: Double { get }

    /// Makes a voice for audio of `format`, in the `.stopped` state, with nothing queued, at
    /// volume 1, pan 0 and playback rate 1.
    ///
    /// - Parameter format: The rate and channel count of the buffers it will take; any rate
    ///   is converted to the back-end's, any channel count mapped to its channels.
    /// - Returns: The voice.
    /// - Throws: `AudioError` when the back-end has no voice left or cannot take the format.
    func makeVoice(format: AudioFormat) throws -> any PlaybackVoice

    /// Makes a voice as `makeVoice(format:)` does, converting its audio to the back-end's rate
    /// at `quality` rather than at the back-end's own level.
    func makeVoice(format: AudioFormat, quality: ResamplingQuality) throws -> any PlaybackVoice

    /// Whether the mix goes through a soft limiter (`SoftLimiter`: samples at or below −1 dBFS
    /// untouched, a knee above that never passes full scale). Off unless set; `SoundEffects`
    /// sets it on its back-end.
    var outputLimiter: Bool { get }

    /// Turns the output limiter on or off, from the next period mixed.
    ///
    /// - Throws: The back-end's error when its output cannot change (OpenAL resets a sound
    ///   server's device with `alcResetDeviceSOFT`); `.unsupported` for a back-end without one.
    func setOutputLimiter(_ enabled: Bool) throws

    /// What renders the back-end's output on demand when it plays offline (an offline device,
    /// OpenAL's loopback device): render it to hear what its voices play, as fast as the CPU
    /// allows; nil for an output that plays in real time. The corresponding Apple call is
    /// `AudioQueueOfflineRender`.
    var offlineRenderer: (any OfflineRendering & Sendable)? { get }

    // The optional capability of shared buffers (SharedBuffers.swift): the defaults there
    // answer that the back-end has none.

    /// Whether the back-end can hold one buffer for many voices (`makeSharedBuffer(_:)`).
    var supportsSharedBuffers: Bool { get }

    /// Holds `buffer` once on the back-end for any number of `SharedBufferVoice`s.
    /// - Parameter buffer: The audio.
    /// - Returns: The shared buffer.
    /// - Throws: `AudioError.Code.unsupported` where `supportsSharedBuffers` is false.
    func makeSharedBuffer(_ buffer: PCMBuffer) throws -> any SharedBuffer

    /// Makes a voice that plays `buffer`, made by this back-end.
    /// - Parameters:
    ///   - buffer: The shared buffer.
    ///   - priority: Its claim on the device's voices when they run out; higher keeps its voice.
    /// - Returns: The voice, stopped.
    /// - Throws: `AudioError.Code.unsupported` where `supportsSharedBuffers` is false;
    ///   `AudioError.Code.invalidParameter` for a buffer another back-end made.
    func makeVoice(playing buffer: any SharedBuffer, priority: Int) throws -> any SharedBufferVoice

    // What the output says about itself (OutputEvents.swift has the defaults: a back-end whose
    // output reports nothing).

    /// The output the back-end plays to, by name: `pulse`, `pulse:SINK`, `alsa:default`,
    /// `null`, `offline`, or OpenAL Soft's device name.
    var outputName: String { get }

    /// Adds a handler for what the output reports (`OutputDeviceEvent`: an underrun, its
    /// loss, the sound server's cork requests and route changes), called on a queue of the
    /// output's own, never the render thread.
    /// - Returns: The token that removes it.
    func addOutputEventHandler(_ handler: @escaping @Sendable (OutputDeviceEvent) -> Void) -> VoiceHandlerToken

    /// Frames per period the output really runs with (0 where it has none to say).
    var outputPeriodFrames: Int { get }

    /// Removes a handler `addOutputEventHandler(_:)` added.
    func removeOutputEventHandler(_ token: VoiceHandlerToken)

    /// Tells the sound server what the output's stream plays (`media.role`: `music`, `game`,
    /// `event`, `phone`…), so its policies (a call corking music) see it; ignored by outputs
    /// without a stream role.
    func setOutputRole(_ role: String)

    /// Pauses the output's stream on the sound server (`true`) or plays it again: what a
    /// session does when the server asks it to cork (`OutputDeviceEvent.corkRequested`), so
    /// that the server sees the stream paused and asks for it again once the call ends.
    /// Ignored by outputs without a server stream.
    func setOutputCorked(_ corked: Bool)
}

extension PlaybackBackend {
    /// A back-end that plays in real time only has no offline renderer.
    public var offlineRenderer: (any OfflineRendering & Sendable)? { nil }

    /// A back-end without a limiter never limits.
    public var outputLimiter: Bool { false }

    /// A back-end without a limiter refuses to turn one on.
    public func setOutputLimiter(_ enabled: Bool) throws {
        guard !enabled else { throw AudioError(.unsupported, "the \(name) back-end has no output limiter") }
    }

    /// A back-end with one way of converting: every level is that one.
    public func makeVoice(format: AudioFormat, quality: ResamplingQuality) throws -> any PlaybackVoice {
        try makeVoice(format: format)
    }
}

/// Where a voice's transport is. The corresponding Apple notions are an Audio Queue's
/// `kAudioQueueProperty_IsRunning` and paused state, and OpenAL's `AL_SOURCE_STATE`.
public enum VoiceState: Sendable, Equatable, CustomStringConvertible {
    /// Made, or stopped: plays nothing; `start` plays from the first queued frame.
    case stopped
    /// Started (now, or at a scheduled host time) and not paused: plays what is queued,
    /// and silence while nothing is (an underrun once it has played something).
    case playing
    /// Paused: holds its position; `start` resumes there.
    case paused

    public var description: String {
        switch self {
        case .stopped: "stopped"
        case .playing: "playing"
        case .paused: "paused"
        }
    }
}

/// Why a started voice stopped: what its finished handlers receive.
public enum VoiceFinish: Sendable, CustomStringConvertible {
    /// It played every frame queued before `stop(immediately: false)` (the end of its input).
    case playedOut
    /// `stop(immediately: true)` stopped it; what was queued was handed back unplayed.
    case stopped
    /// `dispose()` stopped it.
    case disposed
    /// The back-end took it away: its source was taken by a voice of higher priority, or the
    /// device closed or went away. Later calls throw this error.
    case ended(AudioError)

    /// Whether the voice played to the end of its input.
    public var isPlayedOut: Bool { if case .playedOut = self { true } else { false } }

    public var description: String {
        switch self {
        case .playedOut: "played out"
        case .stopped: "stopped"
        case .disposed: "disposed"
        case .ended(let error): "ended: \(error.message)"
        }
    }
}

/// Names a handler added to a voice, to remove it later with `removeHandler(_:)`.
public struct VoiceHandlerToken: Hashable, Sendable {
    /// A number unique among the handlers of one voice.
    public let rawValue: Int
    /// Makes a token; back-ends number their handlers with it.
    public init(rawValue: Int) { self.rawValue = rawValue }
}

/// One sound playing on a back-end: buffers in, played in order, handed back when consumed.
///
/// On the buffer-queue back-end a voice is a `BufferQueue`; on the OpenAL back-end an
/// OpenAL source with queued buffers. Both behave as described here, call by call and state
/// by state (`docs/ARCHITECTURE.md` has the same as one table); the seam conformance suite
/// checks every statement on both.
///
/// **States.** `state` is `.stopped`, `.playing` or `.paused`; independently of it,
/// `isDraining` says that `stop(immediately: false)` has marked the end of the input. A
/// disposed voice, or one the back-end took away (`VoiceFinish.ended`), is *ended*: every call
/// that changes it throws, and the properties read `.stopped`, nothing queued.
///
/// **Handlers.** Any number of handlers may observe a voice (`addBufferConsumedHandler`,
/// `addFinishedHandler`); each is called once per event, in the order they were added, never
/// on a render thread (nor on OpenAL's mixer thread) and never with a lock of the voice or the
/// device held, so a handler may call the voice (enqueue the next buffer, start it again). On a
/// device that renders in real time they run on the back-end's callback thread; on a device
/// rendered on demand (`OfflineRendering`) on the thread that renders, during its render call;
/// for a call that finishes its work at once (a stop while paused, `dispose`) on the calling
/// thread before the call returns. Buffers come back in the order they were enqueued, and a
/// stop hands back every buffer before the finished handlers hear of it.
///
/// **Position handlers** (`addPositionHandler`) run once `framesPlayed` reaches their frame:
/// offline during the render call that plays the frame before it, in real time on the
/// callback thread within a device period of its being rendered (`outputLatency` before it is
/// heard); before the finished handlers of a stop at or after it. Each belongs to one play
/// (a start from `.stopped` to the stop that ends it): one added while stopped counts from the
/// next start; one its play did not reach is dropped when that play ends.
///
/// **Finished.** The finished handlers run exactly once each time a started voice (playing
/// or paused) becomes stopped, with the reason: `.playedOut`, `.stopped`, `.disposed`, or
/// `.ended` (which is reported even when the voice was not started). A voice that was never
/// started, or is stopped already, reports nothing when it is stopped or disposed.
///
/// **Position.** `framesPlayed` counts source frames taken from the buffers since the last
/// start from `.stopped`: exact to the frame at equal rates; under rate conversion it runs
/// ahead of what is heard by the converter's look-ahead (under 30 ms). While paused it is the
/// frame `start` resumes on, steady from the moment `pause()` returns (also offline, where the
/// fade is rendered later). After a played-out stop it equals every frame that was enqueued:
/// no frame is dropped at either end.
///
/// | call | `.stopped` | `.playing` | `.paused` | draining | ended |
/// | --- | --- | --- | --- | --- | --- |
/// | `enqueue` | queued | queued; a starved voice plays it next | queued | throws `.invalidState` | throws |
/// | `start` | plays from the first queued frame; `framesPlayed` from 0 | nothing | resumes on the frame it paused on | playing: nothing; paused: resumes and plays out | throws |
/// | `pause` | nothing | fades out and holds the frame the fade ends on | nothing | pauses, still draining | throws |
/// | `stop(immediately: true)` | hands back what is queued | fades out, hands back, finished `.stopped` | hands back, finished `.stopped` | as playing or paused | throws |
/// | `stop(immediately: false)` | marks the end: `start` plays out and finishes | plays out, finished `.playedOut` | marks the end: `start` resumes, plays out | nothing | throws |
/// | `dispose` | hands back, ends | stops at once, hands back, finished `.disposed`, ends | as playing | as playing | nothing |
/// | `setVolume` | the first frame plays at it | ramps | the resumed frames play at it | as playing/paused | throws |
public protocol PlaybackVoice: AnyObject, Sendable {
    /// The format of the buffers it takes.
    var format: AudioFormat { get }
    /// How its audio is converted to the output's rate (when the rates differ).
    var resamplingQuality: ResamplingQuality { get }
    /// Changes how its audio is converted; while it plays, without a click.
    ///
    /// - Throws: `.invalidState` once disposed; `.invalidParameter` for a level a voice with
    ///   one way of converting does not have.
    func setResamplingQuality(_ quality: ResamplingQuality) throws
    /// Where its transport is (see the table above).
    var state: VoiceState { get }
    /// Whether `stop(immediately: false)` has marked the end of its input: it stops by
    /// itself once it has played what is queued (when playing), and takes no more buffers.
    var isDraining: Bool { get }
    /// Buffers enqueued and not yet handed back.
    var queuedBufferCount: Int { get }
    /// Whether it is playing: `state == .playing`.
    var isPlaying: Bool { get }
    /// Source frames taken from its buffers since the last start from `.stopped` (silence
    /// not counted; see Position above).
    var framesPlayed: Int { get }
    /// Times it ran dry while playing: it had played audio and had nothing more to play
    /// before the next buffer arrived. Not counted before the first buffer, nor while a
    /// draining voice plays out its end.
    var underrunCount: Int { get }
    /// Seconds from a frame being rendered by this voice to its being heard.
    var outputLatency: Double { get }

    /// Adds a handler to call with each buffer once the voice is done with it: its frames
    /// have been taken into the output (mixed, or converted on their way there), or a stop or
    /// `dispose` handed it back unplayed. See Handlers above.
    ///
    /// - Parameter handler: Called once per buffer, in the order the buffers were enqueued.
    /// - Returns: A token for `removeHandler(_:)`.
    @discardableResult
    func addBufferConsumedHandler(_ handler: @escaping @Sendable (PCMBuffer) -> Void) -> VoiceHandlerToken

    /// Adds a handler to call each time the started voice stops, with the reason. See
    /// Finished above.
    ///
    /// - Parameter handler: Called once per stop.
    /// - Returns: A token for `removeHandler(_:)`.
    ///
    /// The corresponding Apple call is `AudioQueueAddPropertyListener` on
    /// `kAudioQueueProperty_IsRunning`.
    @discardableResult
    func addFinishedHandler(_ handler: @escaping @Sendable (VoiceFinish) -> Void) -> VoiceHandlerToken

    /// Adds a handler to call once, when `framesPlayed` reaches `frame`: the frame before it
    /// has been taken into the output. See Position handlers above.
    ///
    /// - Parameters:
    ///   - frame: A count of `framesPlayed`, of the play under way or (while stopped) the next.
    ///   - handler: Called once, unless that play ends before it reaches `frame`.
    /// - Returns: A token for `removeHandler(_:)`.
    ///
    /// The corresponding Apple call is AVPlayer's `addBoundaryTimeObserver(forTimes:queue:using:)`.
    @discardableResult
    func addPositionHandler(atFramesPlayed frame: Int, _ handler: @escaping @Sendable () -> Void) -> VoiceHandlerToken

    /// Removes a handler added with `addBufferConsumedHandler`, `addFinishedHandler` or
    /// `addPositionHandler`; a call under way still completes. Unknown tokens are ignored.
    func removeHandler(_ token: VoiceHandlerToken)

    /// Queues a buffer after those already queued.
    ///
    /// - Parameter buffer: Audio in the voice's format, at least one frame.
    /// - Throws: `.invalidParameter` for another format or an empty buffer; `.invalidState`
    ///   while draining or once disposed; the back-end's error once it took the voice away.
    func enqueue(_ buffer: PCMBuffer) throws

    /// Starts (from `.stopped`) or resumes (from `.paused`), now or so that the first frame
    /// is heard at `hostTime`; does nothing while playing. A start from `.stopped` plays from
    /// the first queued frame and counts `framesPlayed` from 0; with nothing queued it plays
    /// as soon as a buffer is enqueued.
    ///
    /// - Parameter hostTime: A `HostTime` at which the first frame should be heard, or `nil`
    ///   for now; a time already past means now. Until then the voice is `.playing` silence.
    /// - Throws: `.invalidState` once disposed, or the back-end's error.
    ///
    /// The corresponding Apple call is `AudioQueueStart`; OpenAL's is `alSourcePlay`.
    func start(atHostTime hostTime: UInt64?) throws

    /// Pauses a playing voice: it fades out over `VoiceParameters.declickSeconds` (5 ms; on
    /// OpenAL playing to a sound server, one mixer update) and holds the frame the fade ends
    /// on, which `start` resumes from (fading in alike) and `framesPlayed` reads from when
    /// this returns. A scheduled start not yet reached is cancelled. Does nothing unless playing.
    ///
    /// - Throws: `.invalidState` once disposed, or the back-end's error.
    ///
    /// The corresponding Apple call is `AudioQueuePause`; OpenAL's is `alSourcePause`.
    func pause() throws

    /// Stops.
    ///
    /// `immediately: true`: a playing voice fades out (as `pause` does) and stops; a paused
    /// voice stops at once. Every buffer still queued is handed back, then the finished
    /// handlers run with `.stopped`. The state is `.stopped` when the call returns; on a
    /// device rendering in real time the fade has been heard by then, on one rendered on
    /// demand the next render call renders it and hands the buffers back. A stopped voice
    /// hands back what is queued and reports nothing.
    ///
    /// `immediately: false`: marks the end of the input. A playing voice plays every frame
    /// queued and then stops by itself (`.playedOut`); with nothing queued it stops at the
    /// next render. A paused or stopped voice keeps its state and plays out once started.
    /// Enqueueing throws until it has stopped.
    ///
    /// - Throws: `.invalidState` once disposed, or the back-end's error.
    ///
    /// The corresponding Apple call is `AudioQueueStop`; OpenAL's is `alSourceStop`.
    func stop(immediately: Bool) throws

    /// Sets the gain, 0…1 (linear). Before `start`, or while paused, the next frames play at
    /// it with no ramp; while playing it ramps linearly over `rampSeconds` (at least the
    /// back-end's declick time, 5 ms on the queue, one mixer update on OpenAL).
    ///
    /// - Throws: `.invalidParameter` outside 0…1 or for a negative or infinite ramp;
    ///   `.invalidState` once disposed.
    ///
    /// The corresponding Apple parameters are `kAudioQueueParam_Volume` and
    /// `kAudioQueueParam_VolumeRampTime`; OpenAL's is `AL_GAIN`.
    func setVolume(_ volume: Float, rampSeconds: Double) throws

    /// Sets the stereo position, −1 (left) … 1 (right), by `PanLaw`: a mono source at 0
    /// plays at unity on both channels, a stereo source is balanced. It applies from the first
    /// frame before `start`; while playing it glides (5 ms on the queue; on OpenAL over one
    /// mixer update for mono, from the next converted chunk for stereo).
    ///
    /// - Throws: `.invalidParameter` outside −1…1; `.invalidState` once disposed.
    ///
    /// The corresponding Apple parameter is `kAudioQueueParam_Pan`.
    func setPan(_ pan: Float) throws

    /// Sets the playback rate, 0.5…2: varispeed, so pitch follows speed, and every source
    /// frame still plays once. Before `start` it applies from the first frame; while playing
    /// the queue glides to it at once and OpenAL after the few milliseconds it has converted
    /// ahead.
    ///
    /// - Throws: `.invalidParameter` outside 0.5…2; `.invalidState` once disposed.
    ///
    /// The corresponding Apple parameter is `kAudioQueueParam_PlayRate`; OpenAL's is `AL_PITCH`.
    func setPlaybackRate(_ rate: Float) throws

    /// Stops at once (no fade), hands back every buffer, runs the finished handlers with
    /// `.disposed` when it was started, and frees the voice: later calls throw
    /// `.invalidState`, handlers are dropped. A second call does nothing.
    /// The corresponding Apple call is `AudioQueueDispose`; OpenAL's is `alDeleteSources`.
    func dispose()
}

extension PlaybackVoice {
    /// Starts or resumes now.
    ///
    /// - Throws: As `start(atHostTime:)`.
    public func start() throws { try start(atHostTime: nil) }

    /// Sets the gain with the back-end's shortest ramp.
    ///
    /// - Throws: As `setVolume(_:rampSeconds:)`.
    public func setVolume(_ volume: Float) throws { try setVolume(volume, rampSeconds: 0) }

    /// Stops at once (with the declick fade), handing back what is queued.
    ///
    /// - Throws: As `stop(immediately:)`.
    public func stop() throws { try stop(immediately: true) }
}

/// The handlers of one voice, for back-ends to keep: numbered, called in the order added;
/// position handlers by the play they belong to (a back-end numbers its plays, from one start
/// from `.stopped` to the stop after it) and in the order of their frames.
public struct VoiceHandlers: Sendable {
    private var next = 0
    private var consumed: [(VoiceHandlerToken, @Sendable (PCMBuffer) -> Void)] = []
    private var finished: [(VoiceHandlerToken, @Sendable (VoiceFinish) -> Void)] = []
    private var positioned: [Positioned] = []

    private struct Positioned: Sendable {
        let token: VoiceHandlerToken
        let frame: Int
        let play: Int
        let handler: @Sendable () -> Void
    }

    /// No handlers.
    public init() {}

    /// Adds a consumed-buffer handler.
    ///
    /// - Returns: Its token.
    public mutating func addConsumed(_ handler: @escaping @Sendable (PCMBuffer) -> Void) -> VoiceHandlerToken {
        next += 1
        consumed.append((VoiceHandlerToken(rawValue: next), handler))
        return VoiceHandlerToken(rawValue: next)
    }

    /// Adds a finished handler.
    ///
    /// - Returns: Its token.
    public mutating func addFinished(_ handler: @escaping @Sendable (VoiceFinish) -> Void) -> VoiceHandlerToken {
        next += 1
        finished.append((VoiceHandlerToken(rawValue: next), handler))
        return VoiceHandlerToken(rawValue: next)
    }

    /// Adds a position handler, called once `framesPlayed` of play `play` reaches `frame`.
    ///
    /// - Returns: Its token.
    public mutating func addPosition(atFramesPlayed frame: Int, play: Int,
                                     _ handler: @escaping @Sendable () -> Void) -> VoiceHandlerToken {
        next += 1
        let entry = Positioned(token: VoiceHandlerToken(rawValue: next), frame: frame, play: play, handler: handler)
        let index = positioned.firstIndex { $0.play > play || $0.play == play && $0.frame > frame } ?? positioned.endIndex
        positioned.insert(entry, at: index)
        return entry.token
    }

    /// Takes out the position handlers of play `play` that `framesPlayed` has reached, in the
    /// order of their frames, and drops those of the plays before it.
    ///
    /// - Returns: The handlers to call.
    public mutating func takePositionHandlers(reached framesPlayed: Int, play: Int) -> [@Sendable () -> Void] {
        positioned.removeAll { $0.play < play }
        let reached = positioned.prefix { $0.play == play && $0.frame <= framesPlayed }
        positioned.removeFirst(reached.count)
        return reached.map(\.handler)
    }

    /// Drops the position handlers of play `play` and of the plays before it: it ended.
    public mutating func dropPositionHandlers(through play: Int) {
        positioned.removeAll { $0.play <= play }
    }

    /// The frame the first position handler of play `play` waits for, if any.
    public func nextPositionFrame(play: Int) -> Int? {
        positioned.first { $0.play == play }?.frame
    }

    /// Removes the handler `token` names, if any.
    public mutating func remove(_ token: VoiceHandlerToken) {
        consumed.removeAll { $0.0 == token }
        finished.removeAll { $0.0 == token }
        positioned.removeAll { $0.token == token }
    }

    /// Drops every handler.
    public mutating func removeAll() {
        consumed = []
        finished = []
        positioned = []
    }

    /// The consumed-buffer handlers, in the order added.
    public var consumedHandlers: [@Sendable (PCMBuffer) -> Void] { consumed.map(\.1) }
    /// The finished handlers, in the order added.
    public var finishedHandlers: [@Sendable (VoiceFinish) -> Void] { finished.map(\.1) }
}

extension PlaybackVoice {
    /// A voice with one way of converting reports the default level.
    public var resamplingQuality: ResamplingQuality { .default }

    /// A voice with one way of converting takes only that level.
    public func setResamplingQuality(_ quality: ResamplingQuality) throws {
        guard quality == resamplingQuality else {
            throw AudioError(.invalidParameter, "this voice converts at \(resamplingQuality) only, not \(quality)")
        }
    }
}
