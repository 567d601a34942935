import Dispatch
import Foundation
import SpoolCore
import SpoolDecoding
import SpoolResampling

/// The output short sounds play on (System Sound Services' one shared output): a back-end,
/// voices at the back-end's own format kept for reuse, and a limit on how many sounds play at
/// once.
///
/// Every `SystemSound` is converted once, when it is made, to this output's rate and channel
/// layout (and kept so in `cache`, keyed by file and output format), so playing one only
/// copies frames into the mix: no resampling, no decoding. A sound may overlap itself any
/// number of times, up to the limit.
///
/// On the OpenAL back-end each sound is uploaded once into a static OpenAL buffer, shared by
/// every source that plays it; on the buffer queue each play is a voice of the seam, kept for
/// reuse, fed the sound's own frames (no copy).
///
/// **Voice limit and stealing.** At most `voiceLimit` plays sound at once. A play past the limit
/// takes the voice of the oldest play among those of the lowest priority, if that priority is
/// not above its own; that play stops (with the back-end's 5 ms fade) and its completion runs.
/// When every playing sound has a higher priority, the new play throws `.deviceUnavailable`.
public final class SoundEffects: Sendable {
    /// Where the sounds play.
    public let backend: any PlaybackBackend
    /// Sounds playing at once, at most.
    public let voiceLimit: Int
    /// The decoded and converted sounds, keyed by file and output format.
    public let cache: BufferCache
    /// Where completions run: a serial queue of its own unless one is given.
    public let eventQueue: DispatchQueue
    private let state = Locked(State())

    private struct State: @unchecked Sendable {
        // Sendable: voices are Sendable; the completions are only called on `eventQueue`.
        var idle: [any PlaybackVoice] = []
        var playing: [ObjectIdentifier: Play] = [:]
        /// Plays stopped to make room, until their voice reports the stop.
        var stopping: [ObjectIdentifier: Play] = [:]
        var serial = 0
    }

    private struct Play {
        let serial: Int
        let priority: Int
        let voice: EffectVoice
        let done: @Sendable () -> Void
    }

    /// Makes an output for sound effects.
    ///
    /// - Parameters:
    ///   - backend: Where to play; `nil` for `AudioPlayer.defaultBackend()`.
    ///   - voiceLimit: Sounds playing at once, 1…256 (default 32).
    ///   - cacheBudgetBytes: What the converted sounds may hold in memory (default 64 MiB).
    ///   - eventQueue: Where completions run; `nil` for a serial queue of its own.
    ///   - outputLimiter: Whether to turn on the back-end's output limiter (on by default:
    ///     sounds that overlap would pass full scale, and a device clips them); it limits the
    ///     back-end's whole mix, players on it included. `false` leaves the back-end as it is.
    /// - Throws: `.invalidParameter` for a limit out of range; the back-end's error.
    public init(backend: (any PlaybackBackend)? = nil, voiceLimit: Int = 32, cacheBudgetBytes: Int = 64 << 20,
                eventQueue: DispatchQueue? = nil, outputLimiter: Bool = true) throws {
        guard (1...256).contains(voiceLimit) else {
            throw AudioError(.invalidParameter, "voiceLimit must be within 1...256, not \(voiceLimit)")
        }
        self.backend = try backend ?? AudioPlayer.defaultBackend()
        if outputLimiter {
            // A back-end without a limiter plays on as it is.
            do { try self.backend.setOutputLimiter(true) } catch let error as AudioError where error.code == .unsupported {}
        }
        self.voiceLimit = voiceLimit
        cache = try BufferCache(budgetBytes: cacheBudgetBytes)
        self.eventQueue = eventQueue ?? DispatchQueue(label: "spool.effects.events")
        membership.join(self)
        prepareRateConverters(wait: true)  // not on the first trigger
    }

    /// The session the sounds belong to (`AudioSession.shared` until set). Short sounds mix
    /// and take the audio from no one; what stops them is what stops the session's audio from
    /// outside the process (a call corking the stream) and their output going away. Another
    /// session of the process does not interrupt them, as it does not interrupt iOS's system
    /// sounds.
    public var session: AudioSession? {
        get { membership.session }
        set { membership.move(self, to: newValue) }
    }
    private let membership = SessionMembership()

    /// Stops every sound playing (each with the back-end's fade); their completions run.
    public func stopAll() {
        let voices = state.withLock { $0.playing.values.map(\.voice) }
        for voice in voices { try? stop(voice) }
    }

    /// Whether any sound plays.
    var isPlayingAny: Bool { state.withLock { !$0.playing.isEmpty } }

    private static let sharedOutput = Locked<SoundEffects?>(nil)

    /// The output `SystemSound`s use when none is given: on `AudioPlayer.defaultBackend()`,
    /// made on first use.
    ///
    /// - Throws: The back-end's error.
    public static func shared() throws -> SoundEffects {
        try sharedOutput.withLock { shared in
            if let shared { return shared }
            let effects = try SoundEffects()
            shared = effects
            return effects
        }
    }

    /// The format every sound is kept in: the back-end's.
    public var format: AudioFormat { backend.outputFormat }

    /// Sounds playing now.
    public var playingCount: Int { state.withLock { $0.playing.count } }

    // MARK: Playing

    /// Plays `buffer` (in `format`) once, at unity gain; `done` runs on `eventQueue` once it
    /// has played its last frame, or was stopped to make room.
    ///
    /// - Returns: The play, to follow or stop.
    func play(_ buffer: PCMBuffer, sharedBuffer: (any SharedBuffer)?, priority: Int,
              done: @escaping @Sendable () -> Void) throws -> SoundPlay {
        let (victim, reused) = try state.withLock { s -> (EffectVoice?, (any PlaybackVoice)?) in
            var victim: EffectVoice?
            if s.playing.count >= voiceLimit {
                guard let oldest = s.playing.values.min(by: { ($0.priority, $0.serial) < ($1.priority, $1.serial) }),
                      oldest.priority <= priority else {
                    throw AudioError(.deviceUnavailable,
                        "all \(voiceLimit) sound effect voices play sounds of a higher priority than \(priority)")
                }
                victim = oldest.voice
                s.stopping[oldest.voice.id] = s.playing.removeValue(forKey: oldest.voice.id)
            }
            return (victim, sharedBuffer == nil ? s.idle.popLast() : nil)
        }
        // The stolen play stops; its completion runs when its voice reports the stop (a voice
        // on a shared buffer reports nothing when told to stop, so its finish is taken here).
        if let victim {
            switch victim {
            case .seam(let voice): try? voice.stop(immediately: true)
            case .shared(let source):
                try? source.stop()
                finished(victim, lost: false)
            }
        }
        let voice: EffectVoice
        if let sharedBuffer {
            let source = try backend.makeVoice(playing: sharedBuffer, priority: priority)
            voice = .shared(source)
            source.setFinishedHandler { [weak self, weak source] in
                guard let self, let source else { return }
                self.finished(.shared(source), lost: false)
            }
        } else {
            voice = .seam(try reused ?? makeVoice())
        }
        do {
            state.withLock { s in
                s.serial += 1
                s.playing[voice.id] = Play(serial: s.serial, priority: priority, voice: voice, done: done)
            }
            let play = SoundPlay(voice: voice, effects: self)
            switch voice {
            case .seam(let seamVoice):
                try seamVoice.setVolume(1)
                try seamVoice.enqueue(buffer)
                try seamVoice.stop(immediately: false)
                try seamVoice.start()
            case .shared(let source):
                try source.play()
            }
            return play
        } catch {
            _ = state.withLock { $0.playing.removeValue(forKey: voice.id) }
            voice.dispose()
            throw error
        }
    }

    /// The sound held once on the back-end, where it has shared buffers (OpenAL's static
    /// buffers): every play of it is then a voice on that buffer, mixed without a copy.
    func sharedBuffer(for buffer: PCMBuffer) throws -> (any SharedBuffer)? {
        guard backend.supportsSharedBuffers else { return nil }
        return try backend.makeSharedBuffer(buffer)
    }

    /// Stops a play early (with the back-end's fade); its completion runs.
    func stop(_ voice: EffectVoice) throws {
        switch voice {
        case .seam(let seamVoice): if seamVoice.isPlaying { try seamVoice.stop(immediately: true) }
        case .shared(let source):
            let playing = state.withLock { $0.playing[voice.id] != nil }
            guard playing else { return }
            try source.stop()
            finished(voice, lost: false)
        }
    }

    private func makeVoice() throws -> any PlaybackVoice {
        let voice = try backend.makeVoice(format: format)
        voice.addFinishedHandler { [weak self, weak voice] finish in
            guard let self, let voice else { return }
            if case .ended = finish { self.finished(.seam(voice), lost: true) } else { self.finished(.seam(voice), lost: false) }
        }
        return voice
    }

    /// A play's voice reports its end (or, for a voice on a shared buffer told to stop, the stop
    /// itself): the play leaves the books, its completion runs, and a seam voice goes back to
    /// the idle ones (unless the back-end took it away); a voice on a shared buffer is disposed,
    /// giving back what it held on the device (OpenAL: its source).
    private func finished(_ voice: EffectVoice, lost: Bool) {
        let play = state.withLock { s -> Play? in
            let play = s.playing.removeValue(forKey: voice.id) ?? s.stopping.removeValue(forKey: voice.id)
            if case .seam(let seamVoice) = voice, !lost, s.idle.count < voiceLimit { s.idle.append(seamVoice) }
            return play
        }
        guard let play else { return }
        eventQueue.async {
            if case .shared(let source) = voice { source.dispose() }
            play.done()
        }
    }
}

/// What plays one sound: a voice of the seam (reused), or, on a back-end with shared buffers
/// (OpenAL's static buffers), a voice on the sound's own shared buffer (one per play).
enum EffectVoice: Sendable {
    case seam(any PlaybackVoice)
    case shared(any SharedBufferVoice)

    var id: ObjectIdentifier {
        switch self {
        case .seam(let voice): ObjectIdentifier(voice)
        case .shared(let source): ObjectIdentifier(source)
        }
    }

    func dispose() {
        switch self {
        case .seam(let voice): voice.dispose()
        case .shared(let source): source.dispose()
        }
    }
}

/// One play of a `SystemSound`: what `play()` returns, to follow it or stop it early.
public struct SoundPlay: Sendable {
    fileprivate let voice: EffectVoice
    fileprivate weak var effects: SoundEffects?

    /// Frames of the sound taken into the output so far (0 until it starts). Once it has
    /// played out it reads the whole sound on the buffer queue and 0 on OpenAL's static
    /// sources (`AL_SAMPLE_OFFSET` of a stopped source), until its voice plays another.
    public var framesPlayed: Int {
        switch voice {
        case .seam(let seamVoice): seamVoice.framesPlayed
        case .shared(let source): source.framesPlayed
        }
    }

    /// Whether it is still playing (false once it has played out or was stopped).
    public var isPlaying: Bool {
        switch voice {
        case .seam(let seamVoice): seamVoice.isPlaying
        case .shared(let source): source.isPlaying
        }
    }

    /// Seconds from a frame being mixed to its being heard.
    public var outputLatency: Double {
        switch voice {
        case .seam(let seamVoice): seamVoice.outputLatency
        case .shared(let source): source.outputLatency
        }
    }

    /// Stops this play with the back-end's fade; its completion runs.
    ///
    /// - Throws: The back-end's error.
    public func stop() throws { try effects?.stop(voice) }
}
