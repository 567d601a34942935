import Dispatch
import Foundation
import SpoolCore
import SpoolDecoding
import SpoolResampling

/// Plays one sound, from a file, encoded bytes in memory or PCM a program made, on either
/// back-end: the AVAudioPlayer model.
///
/// It is written once against `PlaybackBackend`: the same calls, the same samples on the
/// buffer queue and on OpenAL. It streams: a file is decoded as it plays, a little ahead on a
/// prefetch queue of its own (about 0.4 s), so memory stays small whatever the file's length
/// and no refill of the voice waits on the disk. A sound from a `BufferCache` plays from the
/// cached PCM.
///
/// **States** (`state`):
/// - `.stopped`: made, or stopped, or played to the end. Nothing is queued. `play()` and
///   `prepareToPlay()` start from `currentTime`.
/// - `.prepared`: `prepareToPlay()` opened the voice and queued the first buffers, so `play()`
///   starts on the next device period.
/// - `.playing`, `.paused`.
/// - `.buffering`: playing an http(s) URL whose audio ran out before the download (or, after
///   `play()` or a seek, had not arrived yet): every frame decoded before the stall played,
///   the output plays silence (the voice counts an underrun), and play goes on from the next
///   frame, with nothing faded or lost, by itself once about a second of audio is decoded
///   ahead (or the stream's end; after `play()` or a seek, as soon as the first chunk is).
///   `isPlaying` is false meanwhile. Offline (a back-end's `offlineRenderer`) a render waits
///   for the bytes instead, so it renders exactly what the file renders however slow the link.
///
/// | call | `.stopped` | `.prepared` | `.playing` | `.paused` |
/// | --- | --- | --- | --- | --- |
/// | `prepareToPlay()` | → `.prepared` | nothing | nothing | nothing |
/// | `play()` | prepares, → `.playing` | → `.playing` | nothing | resumes where it paused |
/// | `play(atTime:)` | as `play()`, heard at the time | as `play()` | nothing | resumes at the time |
/// | `pause()` | nothing | nothing | → `.paused` (5 ms fade-out) | nothing |
/// | `stop()` | nothing | → `.stopped` | fades out, → `.stopped` | → `.stopped` |
/// | `setCurrentTime(_:)` | sets where play starts | re-primes there | plays on from there | resumes there |
///
/// `.buffering` takes calls as `.playing` does (`pause()` → `.paused`, `stop()` → `.stopped`,
/// `play()` does nothing, a seek plays on from the new frame once its audio is there).
///
/// As in AVAudioPlayer, `stop()` keeps `currentTime` (a later `play()` goes on from there) and
/// undoes `prepareToPlay()`; playing to the end sets `currentTime` to 0. Calls that mean
/// nothing in a state do nothing, as AVAudioPlayer's do; parameters out of range throw
/// `.invalidParameter` and change nothing. Properties are read-only and change through the
/// throwing `set…` methods, so a bad value is an error at the call, never a silent clamp.
///
/// **Events** go to `delegate` and to every `events` stream, on `eventQueue`, never on a
/// render or callback thread. A decode error mid-file plays every frame decoded before it,
/// then sends `.decodeError` and `.finishedPlaying(successfully: false)`.
///
/// **Position.** `currentTime` is the source frame the voice has taken into the output,
/// exact to the frame at equal rates (under rate conversion it leads what is heard by the
/// converter's look-ahead, under 30 ms; with the pitch-preserving rate it is interpolated from
/// the time-stretcher's record, within a few milliseconds). While paused it is the frame play
/// resumes on, from the moment `pause()` returns.
public final class AudioPlayer: Sendable {
    /// Where the player's transport is; see the table above.
    public enum State: Sendable, Equatable, CustomStringConvertible {
        case stopped, prepared, playing, paused, buffering

        public var description: String {
            switch self {
            case .stopped: "stopped"
            case .prepared: "prepared"
            case .playing: "playing"
            case .paused: "paused"
            case .buffering: "buffering"
            }
        }
    }

    /// How `rate` changes speed.
    public enum RateMode: Sendable, Equatable {
        /// Pitch is kept (time-stretch through libsoundtouch): AVAudioPlayer's `rate`.
        case timeStretch
        /// Pitch follows speed, as a tape or OpenAL's `AL_PITCH`.
        case varispeed
    }

    /// The file played, when it came from one. The corresponding Apple property is `url`.
    public let url: URL?
    /// The encoded bytes played, when they came from memory. The corresponding Apple property
    /// is `data`.
    public let data: Data?
    /// The format of the source: its rate and channel count.
    public let format: AudioFormat
    /// The back-end it plays on: the one it was made with, or, once that output was lost,
    /// the one its session opened again for the next `play()`.
    public var backend: any PlaybackBackend { backendBox.withLock { $0 } }
    private let backendBox: Locked<any PlaybackBackend>
    /// Where events are delivered: the queue given at creation, or a serial queue of the
    /// player's own.
    public let eventQueue: DispatchQueue
    /// Container, codec and tags of the source.
    public let info: AudioFileInfo

    let listeners = Locked(PlayerListeners())
    private let stream: PlayerStream
    /// For an http(s) URL (or a playlist, whose items may be): the audio as it arrives, which
    /// says when there is some to play on.
    private let streaming: Streaming?
    private let control: Locked<Control>
    private let ending = Locked(Ending())
    /// The voice as the feeding thread reaches it (`whenPlayed`), which may run inside
    /// `control`; with what was asked before there was a voice.
    private let positions = Locked(Positions())

    private struct Positions: @unchecked Sendable {
        // Sendable: the voice is Sendable; reached only through the lock.
        var voice: (any PlaybackVoice)?
        var waiting: [(framesPlayed: Int, body: @Sendable (UInt64) -> Void)] = []
    }

    /// The transport and settings; every public call holds this lock for its whole length, so
    /// calls are serialised. Voice handlers never take it (they record in `ending`).
    private struct Control: @unchecked Sendable {
        // Sendable: the voice and feeder are Sendable; reached only through the lock.
        var state: State = .stopped
        var voice: (any PlaybackVoice)?
        var feeder: VoiceFeeder?
        /// Where `.stopped` and `.prepared` stand: the frame the next play starts from.
        var startFrame = 0
        /// Set by a seek while paused: the voice restarts there, `framesPlayed` is stale.
        var heldFrame: Int?
        /// Numbers each run from a start to its end, so a late report of an old one is ignored.
        var run = 0
        var volume: Float = 1
        /// What the session scales the volume by (ducking).
        var sessionGain: Float = 1
        var pan: Float = 0
        var rate: Float = 1
        var enableRate = false
        var rateMode = RateMode.timeStretch
        var numberOfLoops = 0
        var isMeteringEnabled = false
        /// Nil: the back-end's own level.
        var quality: ResamplingQuality?
        /// Underruns of voices the player no longer has.
        var underrunsBefore = 0
        /// The last voice ended because its device went away: the output is lost, whether or
        /// not the session has heard so yet.
        var outputLost = false
        var meters: [(average: Float, peak: Float)] = []
    }

    /// How the current run ended, as the voice's callback thread reported it.
    private struct Ending: Sendable {
        var run = 0
        var ended = false
        /// The back-end took the voice away: the next run needs a new one.
        var voiceLost = false
        /// The voice's device went away (`.deviceLost`): the player pauses where it was heard,
        /// as iOS pauses when headphones are pulled, rather than ending the run.
        var deviceLost = false
        /// The voice played every frame it was sent (the feed finished, or failed after them).
        var playedOut = false
    }

    // MARK: Making a player

    /// Makes a player for a file, decoded as it plays.
    ///
    /// - Parameters:
    ///   - url: A file in a format Spool decodes (MP3, Ogg Vorbis, Ogg Opus, WAV, AIFF, CAF, FLAC).
    ///   - backend: Where to play; `nil` for `AudioPlayer.defaultBackend()`.
    ///   - eventQueue: Where events are delivered; `nil` for a serial queue of the player's own
    ///     (pass `.main` in a program whose main queue runs).
    /// - Throws: The decoder's `AudioError` (`.fileNotFound`, `.unsupportedFormat`, …), or the
    ///   back-end's when it has no voice for the format.
    ///
    /// The corresponding Apple call is `AVAudioPlayer(contentsOf:)`.
    public convenience init(contentsOf url: URL, backend: (any PlaybackBackend)? = nil,
                            eventQueue: DispatchQueue? = nil) throws {
        guard RemoteAudio.handles(url) else {
            let decoder = try DecoderRegistry.shared.open(.file(url))
            try self.init(source: PrefetchingDecoder(decoder), url: url, data: nil, backend: backend, eventQueue: eventQueue)
            return
        }
        // A radio station's titles come with the first bytes, before the player exists.
        let titles = Streaming.TitleRelay()
        let prefetcher = try Streaming.open(url, onTitle: { title, _ in titles.receive(title) })
        try self.init(source: prefetcher, url: url, data: nil, backend: backend, eventQueue: eventQueue,
                      streaming: Streaming(audio: prefetcher, titles: titles))
    }

    /// Makes a player for a file by path; see `init(contentsOf:backend:eventQueue:)`.
    public convenience init(contentsOfFile path: String, backend: (any PlaybackBackend)? = nil,
                            eventQueue: DispatchQueue? = nil) throws {
        try self.init(contentsOf: URL(fileURLWithPath: path), backend: backend, eventQueue: eventQueue)
    }

    /// Makes a player for encoded audio in memory, decoded as it plays.
    ///
    /// - Parameters:
    ///   - data: The bytes of a file in a format Spool decodes.
    ///   - typeHint: A file extension or MIME type; it only breaks ties, the bytes decide.
    ///   - backend: As `init(contentsOf:backend:eventQueue:)`.
    ///   - eventQueue: As `init(contentsOf:backend:eventQueue:)`.
    /// - Throws: As `init(contentsOf:backend:eventQueue:)`; `.emptyInput` for no bytes.
    ///
    /// The corresponding Apple call is `AVAudioPlayer(data:fileTypeHint:)`.
    public convenience init(data: Data, typeHint: String? = nil, backend: (any PlaybackBackend)? = nil,
                            eventQueue: DispatchQueue? = nil) throws {
        let decoder = try DecoderRegistry.shared.open(.memory(data, name: "<memory>", typeHint: typeHint))
        try self.init(source: PrefetchingDecoder(decoder), url: nil, data: data, backend: backend, eventQueue: eventQueue)
    }

    /// Makes a player for PCM a program made or decoded itself.
    ///
    /// - Parameters:
    ///   - buffer: At least one frame.
    ///   - backend: As `init(contentsOf:backend:eventQueue:)`.
    ///   - eventQueue: As `init(contentsOf:backend:eventQueue:)`.
    /// - Throws: `.emptyInput` for an empty buffer; the back-end's error.
    public convenience init(buffer: PCMBuffer, backend: (any PlaybackBackend)? = nil,
                            eventQueue: DispatchQueue? = nil) throws {
        guard buffer.frameCount > 0 else { throw AudioError(.emptyInput, "the player's buffer holds no frames") }
        try self.init(source: PCMBufferDecoder(buffer), url: nil, data: nil, backend: backend, eventQueue: eventQueue)
    }

    /// Makes a player for a file through a buffer cache: decoded once, whole, and kept in the
    /// cache for every player of the same file.
    ///
    /// - Parameters:
    ///   - url: The file.
    ///   - cache: The cache to take the decoded buffer from, or to decode it into.
    ///   - backend: As `init(contentsOf:backend:eventQueue:)`.
    ///   - eventQueue: As `init(contentsOf:backend:eventQueue:)`.
    /// - Throws: The cache's or decoder's `AudioError`; the back-end's error.
    public convenience init(contentsOf url: URL, cache: BufferCache, backend: (any PlaybackBackend)? = nil,
                            eventQueue: DispatchQueue? = nil) throws {
        let buffer = try cache.buffer(for: url)
        guard buffer.frameCount > 0 else { throw AudioError(.emptyInput, "\(url.path): holds no frames") }
        try self.init(source: PCMBufferDecoder(buffer, container: "cache"), url: url, data: nil, backend: backend,
                      eventQueue: eventQueue)
    }

    /// Makes a player for any decoder (a playlist's stream).
    init(source: sending any AudioDecoder, url: URL?, data: Data?, backend: (any PlaybackBackend)?,
         eventQueue: DispatchQueue?, streaming: Streaming? = nil) throws {
        let backend = try backend ?? Self.defaultBackend()
        format = source.format
        info = source.info
        self.url = url
        self.data = data
        backendBox = Locked(backend)
        self.eventQueue = eventQueue ?? DispatchQueue(label: "spool.player.events")
        EventDelivery.mark(self.eventQueue)
        stream = PlayerStream(source, numberOfLoops: 0, makeStage: Self.makeTimeStretch)
        control = Locked(Control())
        self.streaming = streaming
        membership.join(self)
        if let streaming {
            // Offline, a render waits for the bytes: what it renders is the file, however slow
            // the link. In real time the feed starves instead, and the player buffers.
            streaming.audio.waitsForData = backend.offlineRenderer != nil
            // The audio holds this closure: it holds the queue, never `streaming` (a cycle).
            let queue = streaming.queue
            streaming.audio.onChunk = { [weak self] in
                queue.async { [weak self] in self?.audioArrived() }
            }
            streaming.titles.deliver(to: { [weak self] title in self?.deliver([.streamTitle(title)]) })
        }
    }

    /// The session the player belongs to (`AudioSession.shared` until set), which pauses it on
    /// interruptions and lost outputs and is activated by its `play()`; `nil` for none.
    public var session: AudioSession? {
        get { membership.session }
        set { membership.move(self, to: newValue) }
    }
    let membership = SessionMembership()

    deinit {
        positions.withLock { $0 = Positions() }
        let voice = control.withLock { $0.voice }
        guard let voice else { return }
        // A playing voice fades out rather than stopping on a click.
        if voice.state == .playing { try? voice.stop(immediately: true) }
        voice.dispose()
        listeners.withLock { l in
            for continuation in l.continuations.values { continuation.finish() }
        }
    }

    // MARK: Facts

    /// Channels of the source. The corresponding Apple property is `numberOfChannels`.
    public var numberOfChannels: Int { format.channelCount }

    /// Seconds of the source, one pass: its exact frame count over its rate (from a scan, an
    /// index or a checked header; `info` says when a damaged file's count is only a header's
    /// claim). The corresponding Apple property is `duration`.
    public var duration: TimeInterval { format.seconds(forFrames: stream.frameCount) }

    /// Where the transport is.
    public var state: State { control.withLock { c in reconcile(&c); return c.state } }

    /// Whether it is playing. The corresponding Apple property is `isPlaying`.
    public var isPlaying: Bool { state == .playing }

    /// Whether `duration` is an estimate: an http(s) stream whose length is not stated (an
    /// average bit rate's guess, refined as it downloads; exact once the end is decoded).
    public var isDurationEstimated: Bool { !stream.isSourceFrameCountExact }

    /// The last `StreamTitle` of a radio stream (Icecast/SHOUTcast metadata), as it arrived;
    /// nil before one, and for anything but a station.
    public var streamTitle: String? { streaming?.titles.last }

    /// How much of an http(s) URL is held ahead of what plays; nil for a file or memory.
    public var bufferFill: BufferFill? {
        guard let audio = streaming?.audio, let download = audio.download else { return nil }
        return BufferFill(bytes: download.bufferedBytes, budgetBytes: download.budgetBytes,
                          decodedSeconds: format.seconds(forFrames: audio.framesReady))
    }

    /// The delegate, held weakly; called on `eventQueue`.
    public var delegate: (any AudioPlayerDelegate)? {
        get { listeners.withLock { $0.delegate } }
        set { listeners.withLock { $0.delegate = newValue } }
    }

    /// The device clock, in seconds: the time base of `play(atTime:)` (`HostTime`, the
    /// monotonic clock, as seconds). The corresponding Apple property is `deviceCurrentTime`.
    public var deviceCurrentTime: TimeInterval { Double(HostTime.now()) / 1e9 }

    /// Times the voice ran dry while playing (a refill came too late), over the player's life.
    public var underrunCount: Int {
        control.withLock { c in c.underrunsBefore + (c.voice?.underrunCount ?? 0) }
    }

    /// Seconds from a frame being taken into the output to its being heard: the device's and
    /// the back-end's buffering (what `AVAudioSession.outputLatency` reports on iOS).
    public var outputLatency: TimeInterval {
        control.withLock { $0.voice?.outputLatency } ?? backend.outputLatency
    }

    /// Where playback is, in seconds of the source within the current loop pass; see
    /// Position above. The corresponding Apple property is `currentTime`.
    public var currentTime: TimeInterval { format.seconds(forFrames: currentFrame) }

    /// Where playback is, in frames of the source within the current loop pass.
    public var currentFrame: Int {
        control.withLock { c in
            reconcile(&c)
            return frame(c)
        }
    }

    // MARK: Transport

    /// Opens the voice and queues the first buffers, so `play()` starts on the next device
    /// period. Does nothing unless stopped. The corresponding Apple call is `prepareToPlay()`.
    ///
    /// - Throws: The back-end's error (no voice left), or the decoder's when nothing decodes.
    public func prepareToPlay() throws {
        try control.withLock { c in
            reconcile(&c)
            guard c.state == .stopped else { return }
            try prepare(&c)
        }
    }

    /// Plays from `currentTime`, or resumes a paused player where it paused (with a 5 ms
    /// fade-in). Does nothing while playing. The corresponding Apple call is `play()`.
    ///
    /// - Throws: As `prepareToPlay()`.
    public func play() throws { try start(atHostTime: nil) }

    /// Plays, or resumes, so that the first frame is heard at `time` on the device clock
    /// (`deviceCurrentTime`); a time already past means now. Until then the voice plays
    /// silence. Does nothing while playing. The corresponding Apple call is `play(atTime:)`.
    ///
    /// - Parameter time: Seconds on the device clock.
    /// - Throws: `.invalidParameter` for a negative or non-finite time; as `prepareToPlay()`.
    public func play(atTime time: TimeInterval) throws {
        guard time.isFinite, time >= 0 else {
            throw AudioError(.invalidParameter, "play(atTime:) needs a time on the device clock, not \(time)")
        }
        try start(atHostTime: HostTime.nanoseconds(time))
    }

    private func start(atHostTime hostTime: UInt64?) throws {
        if state != .playing { try session?.participantWillPlay(self) }
        // A voice that ended with its device tells the session of the loss, in case the
        // output's own report is still on its way: the session then opens the output anew.
        if let session, let lost = control.withLock({ c in c.outputLost ? backend : nil }) { session.outputLost(lost) }
        var events: [AudioPlayerEvent] = []
        try control.withLock { c in
            reconcile(&c)
            if c.voice != nil, let replacement = session?.replacement(for: backend) {
                // The output went away under the voice (the server died): play on from the
                // frame last heard, on the output the session opened anew.
                let heard = frame(c)
                dropVoice(&c)
                backendBox.withLock { $0 = replacement }
                c.state = .stopped
                c.startFrame = heard
                c.heldFrame = nil
                c.run += 1
            }
            switch c.state {
            case .playing, .buffering: return
            case .paused, .stopped, .prepared:
                // Stopped, or paused by a lost device (its voice gone): a new voice from where it stood.
                if c.state == .stopped || c.voice == nil { try prepare(&c) }
                if let feeder = c.feeder, feeder.isStarved, (c.voice?.framesPlayed ?? 0) >= feeder.framesSent {
                    // A stream whose audio has not arrived: the voice starts when it has.
                    c.state = .buffering
                    c.heldFrame = nil
                    events = [.bufferingBegan]
                    return
                }
                try c.voice?.start(atHostTime: hostTime)
                c.heldFrame = nil
            }
            c.state = .playing
        }
        if !events.isEmpty { deliver(events) }
    }

    /// Pauses a playing player: a 5 ms fade-out, then it holds the frame the fade ends on,
    /// which `currentTime` reads from the moment this returns and `play()` resumes on. Does
    /// nothing otherwise. The corresponding Apple call is `pause()`.
    ///
    /// - Throws: The back-end's error.
    public func pause() throws {
        try control.withLock { c in
            reconcile(&c)
            guard c.state == .playing || c.state == .buffering else { return }
            if c.voice?.state == .playing { try c.voice?.pause() }
            c.state = .paused
        }
    }

    /// Stops and undoes `prepareToPlay()`: a playing player fades out (5 ms), what is queued
    /// is dropped. `currentTime` stays where it stopped, as in AVAudioPlayer; no event is
    /// sent. Does nothing when stopped. The corresponding Apple call is `stop()`.
    ///
    /// - Throws: The back-end's error.
    public func stop() throws {
        try control.withLock { c in
            reconcile(&c)
            guard c.state != .stopped else { return }
            c.startFrame = frame(c)
            c.heldFrame = nil
            c.run += 1
            c.state = .stopped
            try c.voice?.stop(immediately: true)
        }
    }

    /// Moves playback to `time` seconds of the source, exact to the frame: a playing player
    /// plays on from there, a paused one resumes there, a stopped one starts there. A time
    /// past the end is clamped to the end (a playing player then finishes, or loops, at once).
    /// The corresponding Apple property is `currentTime`.
    ///
    /// - Parameter time: Seconds from the start, 0 or more.
    /// - Throws: `.invalidParameter` for a negative or non-finite time; the decoder's error.
    public func setCurrentTime(_ time: TimeInterval) throws {
        guard time.isFinite, time >= 0 else {
            throw AudioError(.invalidParameter, "currentTime must be 0 or more seconds, not \(time)")
        }
        try seek(toFrame: format.frames(forSeconds: time))
    }

    /// Moves playback to source frame `frame`; see `setCurrentTime(_:)`.
    ///
    /// - Parameter frame: A frame from 0; past the end is clamped to the end.
    /// - Throws: `.invalidParameter` for a negative frame; the decoder's error.
    public func seek(toFrame frame: Int) throws {
        guard frame >= 0 else { throw AudioError(.invalidParameter, "cannot seek to frame \(frame)") }
        try control.withLock { c in
            reconcile(&c)
            let target = min(frame, stream.frameCount)
            try move(&c, to: target)
        }
    }

    // MARK: Settings

    /// The gain, 0…1. The corresponding Apple property is `volume`.
    public var volume: Float { control.withLock { $0.volume } }

    /// Scales the volume by the session's gain (its ducking), gliding over 50 ms.
    func applySessionGain(_ gain: Float) {
        control.withLock { c in
            c.sessionGain = gain
            try? c.voice?.setVolume(c.volume * gain, rampSeconds: 0.05)
        }
    }

    /// Sets the gain, ramping to it over `fadeDuration` seconds while playing (at least the
    /// back-end's 5 ms declick ramp, so a change never clicks).
    ///
    /// - Parameters:
    ///   - volume: 0…1 (linear).
    ///   - fadeDuration: Seconds, 0 or more.
    /// - Throws: `.invalidParameter` outside those ranges.
    ///
    /// The corresponding Apple call is `setVolume(_:fadeDuration:)`.
    public func setVolume(_ volume: Float, fadeDuration: TimeInterval = 0) throws {
        guard VoiceParameters.volume.contains(volume) else {
            throw AudioError(.invalidParameter, "volume must be within 0...1, not \(volume)")
        }
        guard fadeDuration.isFinite, fadeDuration >= 0 else {
            throw AudioError(.invalidParameter, "fadeDuration must be 0 or more seconds, not \(fadeDuration)")
        }
        try control.withLock { c in
            try c.voice?.setVolume(volume * c.sessionGain, rampSeconds: fadeDuration)
            c.volume = volume
        }
    }

    /// How the source is converted to the output's rate when the two differ: the back-end's
    /// level (`ResamplingQuality.default` unless it was set) until `setResamplingQuality(_:)`.
    public var resamplingQuality: ResamplingQuality {
        control.withLock { c in c.voice?.resamplingQuality ?? c.quality ?? .default }
    }

    /// Chooses how the source is converted to the output's rate; while playing, the change
    /// crossfades without a click (see `ResamplingQuality`).
    ///
    /// - Throws: The voice's error (a back-end with one way of converting refuses the others).
    public func setResamplingQuality(_ quality: ResamplingQuality) throws {
        try control.withLock { c in
            try c.voice?.setResamplingQuality(quality)
            c.quality = quality
        }
    }

    /// The stereo position, −1 (left) … 1 (right). The corresponding Apple property is `pan`.
    public var pan: Float { control.withLock { $0.pan } }

    /// Sets the stereo position by the shared `PanLaw` (a mono source at 0 plays at unity on
    /// both channels); it glides over 5 ms while playing.
    ///
    /// - Parameter pan: −1…1.
    /// - Throws: `.invalidParameter` outside −1…1.
    public func setPan(_ pan: Float) throws {
        guard VoiceParameters.pan.contains(pan) else {
            throw AudioError(.invalidParameter, "pan must be within -1...1, not \(pan)")
        }
        try control.withLock { c in
            try c.voice?.setPan(pan)
            c.pan = pan
        }
    }

    /// Extra passes after the first: 0 plays once, n plays n + 1 times, −1 loops until
    /// stopped. Each seam joins the last frame to the first with nothing between (a gapless
    /// MP3 loops without its encoder delay or padding). The corresponding Apple property is
    /// `numberOfLoops`.
    public var numberOfLoops: Int { control.withLock { $0.numberOfLoops } }

    /// Sets `numberOfLoops`; while playing, it counts from the pass playing now.
    ///
    /// - Parameter loops: −1 or more.
    /// - Throws: `.invalidParameter` below −1.
    public func setNumberOfLoops(_ loops: Int) throws {
        guard loops >= -1 else { throw AudioError(.invalidParameter, "numberOfLoops must be -1 or more, not \(loops)") }
        control.withLock { c in
            c.numberOfLoops = loops
            stream.setLoopsLeft(loops)
        }
    }

    /// Whether `rate` applies. The corresponding Apple property is `enableRate`.
    public var enableRate: Bool { control.withLock { $0.enableRate } }

    /// The playback speed, 0.5…2 (1 is normal); it applies while `enableRate` is true.
    /// The corresponding Apple property is `rate`.
    public var rate: Float { control.withLock { $0.rate } }

    /// How `rate` changes speed: pitch kept (the default, as in AVAudioPlayer) or varispeed.
    public var rateMode: RateMode { control.withLock { $0.rateMode } }

    /// Turns `rate` on or off. Unlike AVAudioPlayer, which reads it once at `prepareToPlay()`,
    /// it applies at any time.
    ///
    /// - Throws: The back-end's or decoder's error.
    public func setEnableRate(_ enabled: Bool) throws {
        try control.withLock { c in try changeRate(&c) { $0.enableRate = enabled } }
    }

    /// Sets the speed. With the pitch kept, a change from or to 1 restarts the stream at the
    /// current frame (a 5 ms fade), one between two other speeds applies from the next chunk
    /// stretched (about 90 ms ahead); varispeed glides at once.
    ///
    /// - Parameter rate: 0.5…2.
    /// - Throws: `.invalidParameter` outside 0.5…2; the back-end's or decoder's error.
    public func setRate(_ rate: Float) throws {
        guard VoiceParameters.playbackRate.contains(rate) else {
            throw AudioError(.invalidParameter, "rate must be within 0.5...2, not \(rate)")
        }
        try control.withLock { c in try changeRate(&c) { $0.rate = rate } }
    }

    /// Chooses pitch-preserving or varispeed `rate`.
    ///
    /// - Throws: The back-end's or decoder's error.
    public func setRateMode(_ mode: RateMode) throws {
        try control.withLock { c in try changeRate(&c) { $0.rateMode = mode } }
    }

    // MARK: Metering

    /// Whether `updateMeters()` measures. The corresponding Apple property is `isMeteringEnabled`.
    public var isMeteringEnabled: Bool { control.withLock { $0.isMeteringEnabled } }

    /// Turns metering on or off; off, the meters read −160.
    public func setMeteringEnabled(_ enabled: Bool) {
        control.withLock { c in
            c.isMeteringEnabled = enabled
            if !enabled { c.meters = [] }
        }
    }

    /// Frames the meters measure over: the whole 256-frame blocks nearest 50 ms at the
    /// source's rate (2304 frames at 44.1 and 48 kHz).
    public var meteringWindowFrames: Int { meteringBlocks * PowerMeter.blockFrames }

    private var meteringBlocks: Int {
        max(1, Int((0.05 * format.sampleRate / Double(PowerMeter.blockFrames)).rounded()))
    }

    /// Measures the meters over the `meteringWindowFrames` frames of the source that end at
    /// the frame being played (`currentTime`, counted in whole 256-frame blocks of the source),
    /// for `averagePower(forChannel:)` and `peakPower(forChannel:)` to read: the frames heard,
    /// so that after a play or a seek began less than a window ago, only those since. Does
    /// nothing unless metering is enabled. The corresponding Apple call is `updateMeters()`.
    public func updateMeters() {
        control.withLock { c in
            guard c.isMeteringEnabled else { return }
            reconcile(&c)
            let streamFrame: Int = switch c.state {
            case .playing, .paused, .buffering: c.heldFrame == nil ? (c.voice?.framesPlayed ?? 0) : 0
            case .stopped, .prepared: 0
            }
            c.meters = (0..<format.channelCount).map { stream.power(channel: $0, endingAt: streamFrame, blocks: meteringBlocks) }
        }
    }

    /// The average power of `channel` when `updateMeters()` last measured, in dBFS: 10·log10
    /// of the mean square of its samples over the window, so a full-scale square wave reads 0
    /// and a full-scale sine −3.01; −160 for silence or before any measurement. The
    /// corresponding Apple call is `averagePower(forChannel:)`.
    ///
    /// - Throws: `.invalidParameter` for a channel the source does not have.
    public func averagePower(forChannel channel: Int) throws -> Float { try meter(channel).average }

    /// The peak power of `channel` when `updateMeters()` last measured, in dBFS: 20·log10 of
    /// the largest magnitude over the window, clamped to −160…0. The corresponding Apple call
    /// is `peakPower(forChannel:)`.
    ///
    /// - Throws: `.invalidParameter` for a channel the source does not have.
    public func peakPower(forChannel channel: Int) throws -> Float { try meter(channel).peak }

    private func meter(_ channel: Int) throws -> (average: Float, peak: Float) {
        guard (0..<format.channelCount).contains(channel) else {
            throw AudioError(.invalidParameter, "channel \(channel) is outside the source's 0..<\(format.channelCount)")
        }
        return control.withLock { c in
            c.meters.indices.contains(channel) ? c.meters[channel] : (PowerMeter.silence, PowerMeter.silence)
        }
    }

    // MARK: Inside

    /// Where playback stands, in source frames of the current pass.
    private func frame(_ c: Control) -> Int {
        switch c.state {
        case .stopped, .prepared: return c.startFrame
        case .playing, .paused, .buffering:
            if let held = c.heldFrame { return held }
            let played = c.voice?.framesPlayed ?? 0
            let frame = stream.sourceFrame(atStreamFrame: played)
            // A stream's count is an estimate (a live one's is 0): no clamp to it.
            return stream.isSourceFrameCountExact ? min(frame, stream.frameCount) : frame
        }
    }

    /// Takes in what the voice's thread reported: a run that ended by itself leaves the
    /// player stopped at the start; a run whose device went away leaves it paused at the frame
    /// last heard, with a new voice to be made by the next `play()`.
    private func reconcile(_ c: inout Control) {
        let run = c.run
        guard let (lost, deviceLost) = ending.withLock({ $0.run == run && $0.ended ? ($0.voiceLost, $0.deviceLost) : nil })
        else { return }
        let heard = frame(c)
        if lost { dropVoice(&c) }
        c.state = deviceLost ? .paused : .stopped
        c.startFrame = deviceLost ? heard : 0
        c.heldFrame = deviceLost ? heard : nil
        c.outputLost = deviceLost
        c.run += 1
    }

    /// Lets go of a voice its output took away; the next run makes a new one.
    private func dropVoice(_ c: inout Control) {
        c.underrunsBefore += c.voice?.underrunCount ?? 0
        c.voice?.dispose()
        c.voice = nil
        c.feeder = nil
        positions.withLock { $0.voice = nil }
    }

    /// Makes the voice on first use, and queues the first buffers from `startFrame`.
    private func prepare(_ c: inout Control) throws {
        c.run += 1
        let run = c.run
        ending.withLock { $0 = Ending(run: run, ended: false) }
        stream.setLoopsLeft(c.numberOfLoops)
        stream.setRequestedTempo(requestedTempo(c))
        if let feeder = c.feeder {
            watchStarvation(feeder, run: run)
            try feeder.seek(toFrame: c.startFrame)
        } else {
            // An output lost (the server went away) is opened again by the session that owns it.
            if let replacement = session?.replacement(for: backend) { backendBox.withLock { $0 = replacement } }
            let backend = self.backend
            let voice = try c.quality.map { try backend.makeVoice(format: format, quality: $0) } ?? backend.makeVoice(format: format)
            let waiting = positions.withLock { p in
                defer { (p.voice, p.waiting) = (voice, []) }
                return p.waiting
            }
            for (framesPlayed, body) in waiting { watch(voice, framesPlayed: framesPlayed, body) }
            do {
                try voice.setVolume(c.volume * c.sessionGain)
                try voice.setPan(c.pan)
                try voice.setPlaybackRate(varispeedRate(c))
                try stream.seek(toFrame: c.startFrame)
                let feeder = try VoiceFeeder(voice: voice, source: .decoder(stream), bufferFrames: 4096, buffersAhead: 3)
                watchStarvation(feeder, run: run)
                c.voice = voice
                c.feeder = feeder
                c.outputLost = false
            } catch {
                positions.withLock { $0.voice = nil }
                voice.dispose()
                throw error
            }
            try c.feeder?.prime()
        }
        c.feeder?.setCompletion { [weak self] outcome in self?.runEnded(run, outcome) }
        c.heldFrame = nil
        c.state = .prepared
    }

    /// Moves to `target` in whatever state the player is.
    private func move(_ c: inout Control, to target: Int) throws {
        switch c.state {
        case .stopped:
            c.startFrame = target
        case .prepared:
            c.startFrame = target
            try c.feeder?.seek(toFrame: target)
        case .playing:
            try c.feeder?.seek(toFrame: target)
            c.heldFrame = nil
        case .buffering:
            // Plays from the new frame once its audio is there.
            try c.feeder?.seek(toFrame: target)
            c.heldFrame = nil
            if let feeder = c.feeder, !feeder.isStarved {
                if c.voice?.state != .playing { try c.voice?.start() }
                c.state = .playing
                deliver([.bufferingEnded])
            }
        case .paused:
            try c.feeder?.seek(toFrame: target)
            c.heldFrame = target
            // Paused by a lost output, with no voice: the next play's new voice starts here.
            if c.feeder == nil { c.startFrame = target }
        }
    }

    private func requestedTempo(_ c: Control) -> Double? {
        guard c.enableRate, c.rateMode == .timeStretch, c.rate != 1 else { return nil }
        return Double(c.rate)
    }

    private func varispeedRate(_ c: Control) -> Float {
        c.enableRate && c.rateMode == .varispeed ? c.rate : 1
    }

    /// Changes a rate setting; when the change cannot be carried out, the settings before it
    /// are put back (and carried out again), so a refused change leaves the player as it was.
    private func changeRate(_ c: inout Control, _ change: (inout Control) -> Void) throws {
        let before = (c.enableRate, c.rate, c.rateMode)
        change(&c)
        do { try applyRate(&c) } catch {
            (c.enableRate, c.rate, c.rateMode) = before
            try? applyRate(&c)
            throw error
        }
    }

    /// Sends the rate settings to the voice and the stream; a time-stretch stage put in or
    /// taken out restarts the stream where it is.
    private func applyRate(_ c: inout Control) throws {
        let tempo = requestedTempo(c)
        let hadStage = stream.setRequestedTempo(tempo) != nil
        try c.voice?.setPlaybackRate(varispeedRate(c))
        guard c.state != .stopped, hadStage != (tempo != nil) else { return }
        try move(&c, to: frame(c))
    }

    /// Calls `body` where the voice's handlers run once the source frames before `frame` of
    /// the stream being fed have been played (taken into the output), with the `HostTime` at
    /// which the last of them is heard: offline during the render call that renders it, in
    /// real time within a device period of its being rendered. Nothing is called when the run
    /// ends first (a stop, a seek, an end before `frame`). Safe from inside the player's own
    /// calls and its feeding thread.
    func whenPlayed(upTo frame: Int, _ body: @escaping @Sendable (_ heardAt: UInt64) -> Void) {
        let framesPlayed = stream.streamFrame(ofSourceFrame: frame)
        let voice = positions.withLock { p -> (any PlaybackVoice)? in
            if p.voice == nil { p.waiting.append((framesPlayed, body)) }
            return p.voice
        }
        if let voice { watch(voice, framesPlayed: framesPlayed, body) }
    }

    /// Adds the position handler of `whenPlayed` to `voice`.
    private func watch(_ voice: any PlaybackVoice, framesPlayed: Int, _ body: @escaping @Sendable (UInt64) -> Void) {
        let rate = format.sampleRate
        voice.addPositionHandler(atFramesPlayed: framesPlayed) { [weak voice] in
            guard let voice else { return }
            // The frame was taken into the output `since` seconds ago (less than a period; at
            // the source's own speed, close enough under varispeed); it is heard once what the
            // output holds ahead of the speaker has played.
            let since = Double(voice.framesPlayed - framesPlayed) / rate
            let ahead = max(0, voice.outputLatency - max(0, since))
            body(HostTime.now() &+ HostTime.nanoseconds(ahead))
        }
    }

    /// Where the run stands after an offline render call: playing on, or over. A run that
    /// played out says on which of the renderer's frames its voice's last frame ended.
    enum OfflineRun {
        case playing
        case playedOut(onRenderedFrame: Int64?)
        case over
    }

    /// Reads how the run stands (see `OfflineRun`); a run that ended is taken in as any call
    /// takes it in.
    func offlineRun() -> OfflineRun {
        control.withLock { c in
            let run = c.run
            let playedOut = ending.withLock { $0.run == run && $0.ended && $0.playedOut }
            let end = playedOut ? (c.voice as? any PlayedOutFrameReporting)?.playedOutRenderedFrame : nil
            reconcile(&c)
            switch c.state {
            case .playing, .buffering: return .playing
            case .stopped, .prepared, .paused: return playedOut ? .playedOut(onRenderedFrame: end) : .over
            }
        }
    }

    // MARK: Buffering

    /// Whether a read of the stream waits for its audio (offline) or starves the feed and
    /// buffers (real time). Tests set it off offline, to render a real-time stall exactly.
    var streamWaitsForAudio: Bool {
        get { streaming?.audio.waitsForData ?? true }
        set { streaming?.audio.waitsForData = newValue }
    }

    /// Has a starved feed (an http(s) stream whose audio has not arrived) watched: once the
    /// voice has played every frame it was sent, the player buffers.
    private func watchStarvation(_ feeder: VoiceFeeder, run: Int) {
        guard let streaming else { return }
        feeder.setStarvedHandler { [weak self] framesSent in
            // May run inside the player's own calls (a prime): only the positions lock here.
            guard let self, let voice = positions.withLock({ $0.voice }) else { return }
            voice.addPositionHandler(atFramesPlayed: framesSent) { [weak self] in
                streaming.queue.async { [weak self] in self?.ranDry(run: run, framesSent: framesSent) }
            }
        }
    }

    /// The voice played the last frame it was sent before the feed starved: if the feed is still
    /// starved there, the player buffers. The voice plays on, dry (silence; an underrun), so
    /// that the next frame joins the last one played with no fade over either.
    private func ranDry(run: Int, framesSent: Int) {
        let began = control.withLock { c -> Bool in
            reconcile(&c)
            guard c.run == run, c.state == .playing, let feeder = c.feeder, feeder.isStarved,
                  feeder.framesSent == framesSent else { return false }
            c.state = .buffering
            return true
        }
        if began { deliver([.bufferingBegan]) }
    }

    /// A chunk of a stream was decoded: a starved feed takes it; a buffering player plays on
    /// once about a second is there (or the end); a fill report goes out at most every 250 ms.
    private func audioArrived() {
        guard let streaming else { return }
        var events = control.withLock { c -> [AudioPlayerEvent] in
            reconcile(&c)
            guard let feeder = c.feeder, feeder.isStarved else { return [] }
            switch c.state {
            case .buffering:
                // A start (or a seek) plays as soon as a chunk is there; after a stall the
                // player waits for a second, so that a slow link stalls now and then rather
                // than at every chunk.
                let audio = streaming.audio
                let starting = feeder.framesSent == 0
                guard audio.reachedEnd || audio.framesReady >= (starting ? 1 : streaming.resumeFrames(format)) else {
                    return []
                }
                feeder.resume()
                if c.voice?.state != .playing {
                    guard (try? c.voice?.start()) != nil else { return [] }
                }
                c.state = .playing
                return [.bufferingEnded]
            case .playing, .paused, .prepared:
                feeder.resume()
                return []
            case .stopped:
                return []
            }
        }
        if streaming.fillReportDue(), let fill = bufferFill { events.append(.bufferFill(fill)) }
        if !events.isEmpty { deliver(events) }
    }

    /// Called on the voice's callback thread when a run's feed ends: records it (the next
    /// call on the player takes it in) and sends the events. Stops the player caused itself
    /// send nothing.
    private func runEnded(_ run: Int, _ outcome: VoiceFeeder.Outcome) {
        let events: [AudioPlayerEvent]
        switch outcome {
        case .finished:
            // The decoders decode past damage and say so in their warnings; the player reports
            // the first as the decode error that ended (or marred) the run.
            if let warning = stream.warnings.first {
                events = [.decodeError(Self.error(for: warning, in: name)), .finishedPlaying(successfully: false)]
            } else {
                events = [.finishedPlaying(successfully: true)]
            }
        case .failed(let error): events = [.decodeError(error), .finishedPlaying(successfully: false)]
        case .stopped(.ended(let error)) where error.code == .deviceLost:
            // Paused where it was heard, not finished: the next play() goes on from there.
            events = [.outputLost(error)]
        case .stopped(.ended(let error)): events = [.outputLost(error), .finishedPlaying(successfully: false)]
        case .stopped: return
        }
        let current = ending.withLock { e -> Bool in
            guard e.run == run, !e.ended else { return false }
            e.ended = true
            switch outcome {
            case .finished, .failed: e.playedOut = true
            case .stopped(.ended(let error)):
                e.voiceLost = true
                e.deviceLost = error.code == .deviceLost
            case .stopped: break
            }
            return true
        }
        if current { deliver(events) }
    }
}

extension AudioPlayer {
    /// A name for messages: the file's path, or `<memory>`.
    var name: String { url?.path ?? "<memory>" }

    /// The error a decoder's warning stands for.
    static func error(for warning: DecodeWarning, in name: String) -> AudioError {
        let code: AudioError.Code = switch warning.kind {
        case .truncated: .truncated
        case .skippedCorruptData, .missingData: .corruptData
        case .formatChanged: .formatChanged
        }
        return AudioError(code, "\(name): \(warning)")
    }

    /// Makes the pitch-preserving stage over a decoder: libsoundtouch at its own settings
    /// (see `TimeStretcher.Settings`).
    static func makeTimeStretch(_ decoder: any AudioDecoder, tempo: Double) throws -> any TempoStage {
        try TimeStretchedDecoder(wrapping: decoder, tempo: tempo)
    }
}

extension TimeStretchedDecoder: TempoStage {
}
