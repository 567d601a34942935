import Synchronization

/// A decoder whose frames arrive over time (audio still downloading): a `VoiceFeeder` reads
/// it only while frames are ready, and otherwise waits for `VoiceFeeder.resume()` rather than
/// block the thread that refills the voice.
public protocol ProgressiveDecoder: AudioDecoder {
    /// Whether a read now would wait for frames that have not arrived.
    var wouldWait: Bool { get }
}

/// Keeps a voice fed from a decoder or from a decoded buffer: sends a few buffers ahead and
/// one more each time the voice hands one back, loops when asked, marks the end
/// (`stop(immediately: false)`) as soon as the last buffer is sent, and reports once how the
/// feed ended. Decoding happens on the thread that reports consumed buffers (a callback
/// thread), never on a render thread.
///
/// The feeder observes the voice with handlers of its own, beside any the program adds. It
/// stops feeding when the voice is stopped or disposed (what it queued is handed back and
/// nothing refills it); `seek(toFrame:)` starts it again at another frame. When the decoder
/// fails, every frame decoded before the failure plays, then the completion reports it.
///
/// A `ProgressiveDecoder` whose frames have not arrived *starves* the feed: nothing is read,
/// the buffers owed are remembered, the starved handler is told how many frames were sent,
/// and `resume()` sends what is owed once frames are there.
public final class VoiceFeeder: Sendable {
    /// Where the audio comes from.
    public enum Source: @unchecked Sendable {
        // Sendable: a decoder is only touched with the feeder's lock held.
        /// Decoded as it plays, one chunk per buffer.
        case decoder(any AudioDecoder)
        /// Already decoded (a cached sound): sent as zero-copy slices.
        case buffer(PCMBuffer)
    }

    /// How a feed ended: what the completion receives, once.
    public enum Outcome: Sendable, CustomStringConvertible {
        /// Every frame of the source played (every loop).
        case finished
        /// Decoding failed; every frame decoded before the failure played.
        case failed(AudioError)
        /// The voice stopped before the end of the source (`stop(immediately: true)`,
        /// `dispose()`, or the back-end took it away).
        case stopped(VoiceFinish)

        public var description: String {
            switch self {
            case .finished: "finished"
            case .failed(let error): "failed: \(error.message)"
            case .stopped(let finish): "stopped (\(finish))"
            }
        }
    }

    /// The voice being fed.
    public let voice: any PlaybackVoice
    private let state: Locked<State>
    private let bufferFrames: Int
    private let aheadCount: Int

    private struct State: @unchecked Sendable {
        // Sendable: only reached through the feeder's lock.
        var source: Source
        var position = 0
        var loopsLeft: Int
        /// The source is exhausted (or failed): nothing more to send this pass.
        var ended = false
        /// `stop(immediately: false)` went to the voice after the last buffer.
        var endSent = false
        var error: AudioError?
        /// The voice stopped: refill nothing until a seek.
        var halted = false
        /// Buffers to send, and whether a thread is sending them.
        var owed = 0
        var sending = false
        /// Buffers the voice holds from this feeder.
        var outstanding = 0
        /// Hand-backs and stops the feeder caused itself (a seek), to let pass.
        var staleHandBacks = 0
        var ignoredStops = 0
        var onFinish: (@Sendable (Outcome) -> Void)?
        /// The source had no frames ready when a buffer was owed.
        var starved = false
        /// Frames sent to the voice since the last seek (the voice's `framesPlayed` scale).
        var framesSent = 0
        var onStarved: (@Sendable (Int) -> Void)?
    }

    /// Makes a feeder.
    ///
    /// - Parameters:
    ///   - voice: A voice in the source's format.
    ///   - source: A decoder at the frame to start from, or a decoded buffer.
    ///   - bufferFrames: Frames per buffer sent to the voice.
    ///   - buffersAhead: Buffers kept queued on the voice.
    ///   - numberOfLoops: Extra times to play the source after the first; −1 loops until stopped
    ///     (`AVAudioPlayer.numberOfLoops`).
    /// - Throws: `.invalidParameter` when the source's format differs from the voice's or a count is out of range.
    public init(voice: any PlaybackVoice, source: Source, bufferFrames: Int = 4096, buffersAhead: Int = 3,
                numberOfLoops: Int = 0) throws {
        let format: AudioFormat = switch source {
        case .decoder(let decoder): decoder.format
        case .buffer(let buffer): buffer.format
        }
        guard format == voice.format else {
            throw AudioError(.invalidParameter, "the source is \(format) but the voice plays \(voice.format)")
        }
        guard bufferFrames >= 16, (1...64).contains(buffersAhead), numberOfLoops >= -1 else {
            throw AudioError(.invalidParameter, "feeder needs bufferFrames ≥ 16, buffersAhead 1...64, numberOfLoops ≥ -1")
        }
        self.voice = voice
        self.bufferFrames = bufferFrames
        aheadCount = buffersAhead
        state = Locked(State(source: source, loopsLeft: numberOfLoops))
        voice.addBufferConsumedHandler { [weak self] _ in self?.bufferCameBack() }
        voice.addFinishedHandler { [weak self] finish in self?.voiceFinished(finish) }
    }

    /// Makes a feeder that decodes as the voice plays. The decoder is handed over (`sending`):
    /// from now on only the feeder uses it, under its lock, on whichever thread refills the
    /// voice, so no wrapper is needed to use it from the voice's `@Sendable` callbacks.
    ///
    /// - Parameters: As `init(voice:source:bufferFrames:buffersAhead:numberOfLoops:)`.
    /// - Throws: As that initializer.
    public convenience init(voice: any PlaybackVoice, decoder: sending any AudioDecoder, bufferFrames: Int = 4096,
                            buffersAhead: Int = 3, numberOfLoops: Int = 0) throws {
        try self.init(voice: voice, source: .decoder(decoder), bufferFrames: bufferFrames,
                      buffersAhead: buffersAhead, numberOfLoops: numberOfLoops)
    }

    /// Sets what to call, once, when the feed ends (see `Outcome`); after a `seek(toFrame:)`
    /// it can end, and be reported, again. It runs where the voice's handlers run.
    public func setCompletion(_ handler: (@Sendable (Outcome) -> Void)?) {
        state.withLock { $0.onFinish = handler }
    }

    /// Sets what to call when the feed starves (a `ProgressiveDecoder` with no frames ready),
    /// with the frames sent since the last seek: the voice plays dry once its `framesPlayed`
    /// reaches that count. It runs on the thread that found the feed starved, outside the
    /// feeder's lock.
    public func setStarvedHandler(_ handler: (@Sendable (_ framesSent: Int) -> Void)?) {
        state.withLock { $0.onStarved = handler }
    }

    /// Whether the feed is waiting for frames of a `ProgressiveDecoder`.
    public var isStarved: Bool { state.withLock { $0.starved } }

    /// Frames sent to the voice since the last seek.
    public var framesSent: Int { state.withLock { $0.framesSent } }

    /// Sends the buffers a starved feed owes, reading what the source has ready now (it may
    /// starve again). Does nothing unless the feed is starved.
    public func resume() {
        let starved = state.withLock { s -> Bool in
            defer { s.starved = false }
            return s.starved
        }
        if starved { send(0) }
    }

    /// Queues the first buffers; call before starting the voice. A source shorter than that
    /// is queued whole, and its end marked.
    ///
    /// - Throws: The decoder's error when not a single frame decodes; the voice's error when
    ///   it takes no buffer.
    public func prime() throws {
        send(aheadCount)
        let failure = state.withLock { s -> AudioError? in
            guard let error = s.error, s.outstanding == 0 else { return nil }
            return error
        }
        if let failure { throw failure }
    }

    /// Moves the feed to `frame` of the source (of the current loop pass): what the voice
    /// holds is dropped (handed back, not reported), the first buffers from `frame` are
    /// queued, and a playing voice plays on from there; a paused or stopped voice is left
    /// stopped, ready to start at `frame`. It also starts a feed that had ended or stopped.
    ///
    /// - Parameter frame: A frame within `0...frameCount` of the source.
    /// - Throws: `.outOfRange` for a frame outside the source; the decoder's or the voice's error.
    public func seek(toFrame frame: Int) throws {
        let playing = voice.state == .playing
        try state.withLock { s in
            switch s.source {
            case .buffer(let buffer):
                guard (0...buffer.frameCount).contains(frame) else {
                    throw AudioError(.outOfRange, "frame \(frame) is outside the buffer's 0...\(buffer.frameCount)")
                }
            case .decoder(let decoder):
                guard frame >= 0 else { throw AudioError(.outOfRange, "frame \(frame) is before the start") }
                _ = decoder
            }
            s.halted = true
            s.owed = 0
            s.staleHandBacks += s.outstanding
            s.outstanding = 0
            if voice.state != .stopped { s.ignoredStops += 1 }
        }
        try voice.stop(immediately: true)
        try state.withLock { s in
            if case .decoder(let decoder) = s.source { try decoder.seek(toFrame: frame) }
            s.position = frame
            s.ended = false
            s.endSent = false
            s.error = nil
            s.halted = false
            s.starved = false
            s.framesSent = 0
        }
        try prime()
        if playing { try voice.start() }
    }

    /// Frames of the source sent so far in the current pass.
    public var position: Int { state.withLock { $0.position } }

    // MARK: Feeding

    private func bufferCameBack() {
        let refill = state.withLock { s -> Bool in
            if s.staleHandBacks > 0 {
                s.staleHandBacks -= 1
                return false
            }
            s.outstanding = max(0, s.outstanding - 1)
            return !s.halted
        }
        guard refill else { return }
        // A buffer handed back by a stop: the voice is done, nothing refills it.
        guard voice.state != .stopped else {
            state.withLock { $0.halted = true }
            return
        }
        send(1)
    }

    private func voiceFinished(_ finish: VoiceFinish) {
        let report = state.withLock { s -> (@Sendable (Outcome) -> Void, Outcome)? in
            if s.ignoredStops > 0 {
                s.ignoredStops -= 1
                return nil
            }
            s.halted = true
            let outcome: Outcome = if finish.isPlayedOut, s.ended {
                s.error.map { .failed($0) } ?? .finished
            } else {
                .stopped(finish)
            }
            return s.onFinish.map { ($0, outcome) }
        }
        if let (handler, outcome) = report { handler(outcome) }
    }

    /// Sends `count` more buffers, one thread at a time and in order: a call made while
    /// another thread (or this one, from inside a voice call) is sending adds to what that
    /// one sends.
    private func send(_ count: Int) {
        let leads = state.withLock { s -> Bool in
            s.owed += count
            guard !s.sending else { return false }
            s.sending = true
            return true
        }
        guard leads else { return }
        var starvedAt: (handler: (@Sendable (Int) -> Void)?, frames: Int)?
        defer { if let starvedAt { starvedAt.handler?(starvedAt.frames) } }
        while let (chunk, markEnd) = state.withLock({ s -> (PCMBuffer?, Bool)? in
            guard s.owed > 0, !s.halted, !s.endSent else {
                s.owed = 0
                s.sending = false
                return nil
            }
            if Self.wouldWait(s) {
                // Nothing ready: the buffers stay owed until `resume()`.
                if !s.starved { starvedAt = (s.onStarved, s.framesSent) }
                s.starved = true
                s.sending = false
                return nil
            }
            s.owed -= 1
            let chunk = Self.next(&s, frames: bufferFrames)
            let markEnd = s.ended && !s.endSent
            if markEnd { s.endSent = true }
            if let chunk {
                s.outstanding += 1
                s.framesSent += chunk.frameCount
                s.starved = false
            }
            return (chunk, markEnd)
        }) {
            do {
                if let chunk { try voice.enqueue(chunk) }
                if markEnd { try voice.stop(immediately: false) }
            } catch let error as AudioError {
                state.withLock { s in
                    if chunk != nil { s.outstanding -= 1 }
                    s.error = s.error ?? error
                    s.halted = true
                }
            } catch {}
        }
    }

    /// Whether the source is a progressive decoder with no frames ready.
    private static func wouldWait(_ s: State) -> Bool {
        guard !s.ended, case .decoder(let decoder) = s.source, let progressive = decoder as? any ProgressiveDecoder else {
            return false
        }
        return progressive.wouldWait
    }

    /// The next chunk of the source, looping at its end as asked; nil once it is exhausted
    /// or failed (`ended`).
    private static func next(_ s: inout State, frames: Int) -> PCMBuffer? {
        guard !s.ended else { return nil }
        var rewinds = 0
        while true {
            let chunk: PCMBuffer?
            do {
                chunk = try read(&s, frames: frames)
            } catch {
                s.error = error as? AudioError ?? AudioError(.libraryFailure, "decoding failed", underlying: error)
                s.ended = true
                return nil
            }
            if let chunk {
                if s.error != nil { s.ended = true }
                if s.loopsLeft == 0, atEnd(s) { s.ended = true }
                return chunk
            }
            // End of the source: loop, or finish. A source that yields nothing twice running is empty.
            guard s.loopsLeft != 0, rewinds == 0 else {
                s.ended = true
                return nil
            }
            rewinds += 1
            if s.loopsLeft > 0 { s.loopsLeft -= 1 }
            s.position = 0
            if case .decoder(let decoder) = s.source {
                do { try decoder.seek(toFrame: 0) } catch {
                    s.error = error as? AudioError ?? AudioError(.libraryFailure, "rewinding failed", underlying: error)
                    s.ended = true
                    return nil
                }
            }
        }
    }

    /// Whether the source is known to hold nothing after `position`.
    private static func atEnd(_ s: State) -> Bool {
        switch s.source {
        case .buffer(let buffer): s.position >= buffer.frameCount
        case .decoder(let decoder): decoder.isFrameCountExact && s.position >= decoder.frameCount
        }
    }

    /// Reads up to `frames` frames; nil at the end. A decoder that fails part-way leaves the
    /// frames decoded before it in the chunk and the error in `s.error`.
    private static func read(_ s: inout State, frames: Int) throws -> PCMBuffer? {
        switch s.source {
        case .buffer(let buffer):
            guard s.position < buffer.frameCount else { return nil }
            let end = min(buffer.frameCount, s.position + frames)
            defer { s.position = end }
            return try buffer.slice(frames: s.position..<end)
        case .decoder(let decoder):
            let channels = decoder.format.channelCount
            let samples = PCMStorage.allocate(frames * channels)
            var got = 0
            let progressive = decoder as? any ProgressiveDecoder
            do {
                while got < frames {
                    // A progressive source sends what it has rather than wait for the rest.
                    if got > 0, let progressive, progressive.wouldWait { break }
                    let n = try decoder.read(into: UnsafeMutableBufferPointer(start: samples + got * channels,
                                                                              count: (frames - got) * channels))
                    if n == 0 { break }
                    got += min(n, frames - got)
                }
            } catch {
                guard got > 0 else {
                    free(samples)
                    throw error
                }
                s.error = error as? AudioError ?? AudioError(.libraryFailure, "decoding failed", underlying: error)
            }
            guard got > 0 else {
                free(samples)
                return nil
            }
            s.position += got
            return PCMBuffer(format: decoder.format, storage: PCMStorage(adopting: samples, count: got * channels),
                             startFrame: 0, frameCount: got)
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif
