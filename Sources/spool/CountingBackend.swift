import Spool

/// A back-end that hands out the voices of another and counts what they play: the frames and
/// underruns `spool play` reports for each file. `AudioPlayer` keeps its voice to itself, so
/// the tool gives each player one of these over the shared back-end.
final class CountingBackend: PlaybackBackend {
    let inner: any PlaybackBackend
    private let voices = Locked<[CountingVoice]>([])

    init(_ inner: any PlaybackBackend) { self.inner = inner }

    var name: String { inner.name }
    var outputFormat: AudioFormat { inner.outputFormat }
    var outputLatency: Double { inner.outputLatency }

    func makeVoice(format: AudioFormat) throws -> any PlaybackVoice {
        let voice = CountingVoice(try inner.makeVoice(format: format))
        voices.withLock { $0.append(voice) }
        return voice
    }

    /// Source frames every voice made here took into the output, over all its runs.
    var framesPlayed: Int { voices.withLock { $0.reduce(0) { $0 + $1.totalFramesPlayed } } }
    /// Times the voices made here ran dry while playing.
    var underrunCount: Int { voices.withLock { $0.reduce(0) { $0 + $1.underrunCount } } }
}

/// A voice that passes every call to another and keeps the frames of runs that ended:
/// `framesPlayed` starts again from 0 at each start from `.stopped`, and a player restarts
/// its voice at every seek.
final class CountingVoice: PlaybackVoice {
    private let inner: any PlaybackVoice
    private let earlierRuns = Locked(EarlierRuns())

    private struct EarlierRuns {
        var frames = 0
        /// What the count read when the voice was last started from stopped.
        var countAtLastStart = -1
    }

    init(_ inner: any PlaybackVoice) { self.inner = inner }

    /// Frames taken into the output since the voice was made.
    var totalFramesPlayed: Int { earlierRuns.withLock { $0.frames } + inner.framesPlayed }

    var format: AudioFormat { inner.format }
    var state: VoiceState { inner.state }
    var isDraining: Bool { inner.isDraining }
    var queuedBufferCount: Int { inner.queuedBufferCount }
    var isPlaying: Bool { inner.isPlaying }
    var framesPlayed: Int { inner.framesPlayed }
    var underrunCount: Int { inner.underrunCount }
    var outputLatency: Double { inner.outputLatency }

    @discardableResult
    func addBufferConsumedHandler(_ handler: @escaping @Sendable (PCMBuffer) -> Void) -> VoiceHandlerToken {
        inner.addBufferConsumedHandler(handler)
    }

    @discardableResult
    func addFinishedHandler(_ handler: @escaping @Sendable (VoiceFinish) -> Void) -> VoiceHandlerToken {
        inner.addFinishedHandler(handler)
    }

    func removeHandler(_ token: VoiceHandlerToken) { inner.removeHandler(token) }
    func enqueue(_ buffer: PCMBuffer) throws { try inner.enqueue(buffer) }

    func start(atHostTime hostTime: UInt64?) throws {
        // A start from stopped counts from 0 again: keep what the run before it played. The
        // buffer queue restarts its count on the render thread, so a start soon after another
        // may still read the count the earlier start is about to clear: that is no new run.
        // (The player calls its voice under its own lock, one call at a time.)
        let fromStopped = inner.state == .stopped
        let count = inner.framesPlayed
        try inner.start(atHostTime: hostTime)
        guard fromStopped else { return }
        earlierRuns.withLock { runs in
            if count != runs.countAtLastStart { runs.frames += count }
            runs.countAtLastStart = count
        }
    }

    func pause() throws { try inner.pause() }
    func stop(immediately: Bool) throws { try inner.stop(immediately: immediately) }
    func setVolume(_ volume: Float, rampSeconds: Double) throws { try inner.setVolume(volume, rampSeconds: rampSeconds) }
    func setPan(_ pan: Float) throws { try inner.setPan(pan) }
    func setPlaybackRate(_ rate: Float) throws { try inner.setPlaybackRate(rate) }
    func dispose() { inner.dispose() }
}
