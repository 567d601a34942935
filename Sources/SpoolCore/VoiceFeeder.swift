import Synchronization

/// Keeps a voice fed from a decoder or from a decoded buffer: sends a few buffers ahead and
/// one more each time the voice hands one back, loops when asked, and lets the voice play
/// out at the end. Decoding happens on the thread that reports consumed buffers (a callback
/// thread), never on a render thread.
public final class VoiceFeeder: Sendable {
    /// Where the audio comes from.
    public enum Source: @unchecked Sendable {
        // Sendable: a decoder is only touched with the feeder's lock held.
        /// Decoded as it plays, one chunk per buffer.
        case decoder(any AudioDecoder)
        /// Already decoded (a cached sound): sent as zero-copy slices.
        case buffer(PCMBuffer)
    }

    /// The voice being fed.
    public let voice: any PlaybackVoice
    private let state: Mutex<State>
    private let bufferFrames: Int
    private let aheadCount: Int

    private struct State: @unchecked Sendable {
        // Sendable: only reached through the feeder's Mutex.
        var source: Source
        var position = 0
        var loopsLeft: Int
        var ended = false
        var stopSent = false
        var error: AudioError?
        var onFinish: (@Sendable (AudioError?) -> Void)?
    }

    /// Makes a feeder.
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
        state = Mutex(State(source: source, loopsLeft: numberOfLoops))
        voice.addBufferConsumedHandler { [weak self] _ in self?.sendNext() }
    }

    /// Sets what to call once everything has played (with the error that ended decoding, if any).
    public func setCompletion(_ handler: (@Sendable (AudioError?) -> Void)?) {
        state.withLock { $0.onFinish = handler }
        voice.addFinishedHandler { [weak self] _ in
            guard let self else { return }
            let (handler, error) = state.withLock { ($0.onFinish, $0.error) }
            handler?(error)
        }
    }

    /// Queues the first buffers; call before starting the voice.
    /// - Throws: A decoding error from the first chunk.
    public func prime() throws {
        for _ in 0..<aheadCount { try sendOne(stopAtEnd: false) }
    }

    /// Frames of the source sent so far in the current pass.
    public var position: Int { state.withLock { $0.position } }

    private func sendNext() {
        do { try sendOne(stopAtEnd: true) } catch let error as AudioError {
            state.withLock { $0.error = error; $0.ended = true }
            try? voice.stop(immediately: false)
        } catch {}
    }

    /// Sends the next chunk; at the end, asks the voice to play out and stop (not while
    /// priming: the voice has not started, and stopping it then would drop what is queued).
    private func sendOne(stopAtEnd: Bool) throws {
        let next: PCMBuffer? = try state.withLock { s in
            guard !s.ended else { return nil }
            while true {
                let chunk = try Self.read(&s, frames: bufferFrames)
                if let chunk { return chunk }
                // End of the source: loop, or finish.
                if s.loopsLeft == 0 {
                    s.ended = true
                    return nil
                }
                if s.loopsLeft > 0 { s.loopsLeft -= 1 }
                s.position = 0
                if case .decoder(let decoder) = s.source { try decoder.seek(toFrame: 0) }
            }
        }
        if let next {
            try voice.enqueue(next)
        } else if stopAtEnd, state.withLock({ s in defer { s.stopSent = true }; return s.ended && !s.stopSent }) {
            try voice.stop(immediately: false)
        }
    }

    private static func read(_ s: inout State, frames: Int) throws -> PCMBuffer? {
        switch s.source {
        case .buffer(let buffer):
            guard s.position < buffer.frameCount else { return nil }
            let end = min(buffer.frameCount, s.position + frames)
            defer { s.position = end }
            return try buffer.slice(frames: s.position..<end)
        case .decoder(let decoder):
            let chunk = try decoder.decodeAll(maximumFrames: frames)
            guard chunk.frameCount > 0 else { return nil }
            s.position += chunk.frameCount
            return chunk
        }
    }
}
