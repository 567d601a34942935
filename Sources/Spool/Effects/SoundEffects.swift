import Dispatch
import Foundation
import SpoolCore
import SpoolDecoding

/// The output short sounds play on (System Sound Services' one shared output): a back-end,
/// voices at the back-end's own format kept for reuse, and a limit on how many sounds play at
/// once.
///
/// Every `SystemSound` is converted once, when it is made, to this output's rate and channel
/// layout (and kept so in `cache`, keyed by file and output format), so playing one only
/// copies frames into the mix: no resampling, no decoding. A sound may overlap itself any
/// number of times, up to the limit.
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
        let voice: any PlaybackVoice
        let done: @Sendable () -> Void
    }

    /// Makes an output for sound effects.
    /// - Parameters:
    ///   - backend: Where to play; `nil` for `AudioPlayer.defaultBackend()`.
    ///   - voiceLimit: Sounds playing at once, 1…256 (default 32).
    ///   - cacheBudgetBytes: What the converted sounds may hold in memory (default 64 MiB).
    ///   - eventQueue: Where completions run; `nil` for a serial queue of its own.
    /// - Throws: `.invalidParameter` for a limit out of range; the back-end's error.
    public init(backend: (any PlaybackBackend)? = nil, voiceLimit: Int = 32, cacheBudgetBytes: Int = 64 << 20,
                eventQueue: DispatchQueue? = nil) throws {
        guard (1...256).contains(voiceLimit) else {
            throw AudioError(.invalidParameter, "voiceLimit must be within 1...256, not \(voiceLimit)")
        }
        self.backend = try backend ?? AudioPlayer.defaultBackend()
        self.voiceLimit = voiceLimit
        cache = try BufferCache(budgetBytes: cacheBudgetBytes)
        self.eventQueue = eventQueue ?? DispatchQueue(label: "spool.effects.events")
    }

    private static let sharedOutput = Locked<SoundEffects?>(nil)

    /// The output `SystemSound`s use when none is given: on `AudioPlayer.defaultBackend()`,
    /// made on first use.
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
    /// - Returns: The play, to follow or stop.
    func play(_ buffer: PCMBuffer, priority: Int, done: @escaping @Sendable () -> Void) throws -> SoundPlay {
        let (victim, reused) = try state.withLock { s -> ((any PlaybackVoice)?, (any PlaybackVoice)?) in
            var victim: (any PlaybackVoice)?
            if s.playing.count >= voiceLimit {
                guard let oldest = s.playing.values.min(by: { ($0.priority, $0.serial) < ($1.priority, $1.serial) }),
                      oldest.priority <= priority else {
                    throw AudioError(.deviceUnavailable,
                        "all \(voiceLimit) sound effect voices play sounds of a higher priority than \(priority)")
                }
                victim = oldest.voice
                let id = ObjectIdentifier(oldest.voice)
                s.stopping[id] = s.playing.removeValue(forKey: id)
            }
            return (victim, s.idle.popLast())
        }
        // The stolen play stops (its finish hands it back and runs its completion).
        if let victim { try? victim.stop(immediately: true) }
        let voice = try reused ?? makeVoice()
        do {
            state.withLock { s in
                s.serial += 1
                s.playing[ObjectIdentifier(voice)] = Play(serial: s.serial, priority: priority, voice: voice, done: done)
            }
            try voice.setVolume(1)
            try voice.enqueue(buffer)
            try voice.stop(immediately: false)
            let play = SoundPlay(voice: voice)
            try voice.start()
            return play
        } catch {
            _ = state.withLock { $0.playing.removeValue(forKey: ObjectIdentifier(voice)) }
            voice.dispose()
            throw error
        }
    }

    private func makeVoice() throws -> any PlaybackVoice {
        let voice = try backend.makeVoice(format: format)
        voice.addFinishedHandler { [weak self, weak voice] finish in
            guard let self, let voice else { return }
            self.finished(voice, finish)
        }
        return voice
    }

    private func finished(_ voice: any PlaybackVoice, _ finish: VoiceFinish) {
        let play = state.withLock { s -> Play? in
            let id = ObjectIdentifier(voice)
            let play = s.playing.removeValue(forKey: id) ?? s.stopping.removeValue(forKey: id)
            // A voice the back-end took away is not reused.
            if case .ended = finish {} else if s.idle.count < voiceLimit { s.idle.append(voice) }
            return play
        }
        if let play { eventQueue.async { play.done() } }
    }
}

/// One play of a `SystemSound`: what `play()` returns, to follow it or stop it early.
public struct SoundPlay: Sendable {
    fileprivate let voice: any PlaybackVoice

    /// Frames of the sound taken into the output so far (0 until it starts; the whole sound
    /// once it has played, until its voice plays another).
    public var framesPlayed: Int { voice.framesPlayed }
    /// Whether it is still playing (false once it has played out or was stopped).
    public var isPlaying: Bool { voice.isPlaying }
    /// Seconds from a frame being mixed to its being heard.
    public var outputLatency: Double { voice.outputLatency }

    /// Stops this play with the back-end's 5 ms fade; its completion runs.
    /// - Throws: The back-end's error.
    public func stop() throws {
        if voice.isPlaying { try voice.stop(immediately: true) }
    }
}
