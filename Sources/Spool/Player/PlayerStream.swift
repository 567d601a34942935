import SpoolCore

/// A stage between the decoder and the voice that changes the tempo without changing the
/// pitch, and says which source frame an output frame came from.
protocol TempoStage: AudioDecoder {
    /// Source frames per output frame.
    var tempo: Double { get }
    /// Changes the tempo for the frames read next.
    func setTempo(_ tempo: Double) throws
    /// The source frame that output frame `frame` (counted since the last seek) came from.
    func sourceFrame(atOutputFrame frame: Int) -> Int
}

/// What `AudioPlayer` feeds its voice from: the source's frames, looped as many times as
/// `numberOfLoops` says (the seam joins the last frame to the first with nothing between),
/// through a time-stretch stage when the rate is pitch-preserving, with a record of which
/// source frame each frame sent came from and of its power for the meters.
///
/// *Stream frames* are the frames it has produced since the last seek, loops included: the
/// frames the voice counts in `framesPlayed`, since every seek restarts the voice.
///
/// The feeder reads and seeks it, one thread at a time; the player reads positions and meters
/// and sets loops and tempo from any thread, through `shared`.
final class PlayerStream: ProgressiveDecoder, @unchecked Sendable {
    // Sendable: `base`, `stage` and the counters below are touched only by the feeder, under
    // its lock; what other threads read or set is in `shared`.
    let format: AudioFormat
    let info: AudioFileInfo
    private let base: any AudioDecoder
    private let makeStage: (any AudioDecoder, Double) throws -> any TempoStage
    private var stage: (any TempoStage)?
    /// Frames the current stage (or `base`) produced since it was last sought.
    private var passOutputFrames = 0
    private var streamFrames = 0
    private let shared: Locked<Shared>

    /// Where a run of stream frames came from.
    struct Checkpoint: Sendable {
        var streamFrame: Int
        var sourceFrame: Int
        /// Source frames per stream frame from here on.
        var tempo: Double
    }

    private struct Shared: Sendable {
        var loopsLeft: Int
        /// The pitch-preserving tempo to use from the next seek; nil for none.
        var requestedTempo: Double?
        var checkpoints: [Checkpoint] = []
        /// The run being read, or sought, now: where the frames the source produces in the
        /// meantime go, before their checkpoint is recorded.
        var reading: Checkpoint?
        var seekFrame = 0
        var meter: PowerMeter
        /// Loop seams crossed since the last seek.
        var seams = 0
    }

    /// - Parameters:
    ///   - source: The source, at frame 0; only this object uses it from now on.
    ///   - numberOfLoops: Extra passes after the first; −1 for endless.
    ///   - makeStage: Makes the time-stretch stage over a decoder at a tempo.
    init(_ source: sending any AudioDecoder, numberOfLoops: Int,
         makeStage: @escaping (any AudioDecoder, Double) throws -> any TempoStage) {
        format = source.format
        info = source.info
        base = source
        self.makeStage = makeStage
        shared = Locked(Shared(loopsLeft: numberOfLoops, meter: PowerMeter(channels: source.format.channelCount)))
    }

    // MARK: What the player reads and sets

    /// Sets the loop passes left (−1: endless), from the pass being fed.
    func setLoopsLeft(_ loops: Int) { shared.withLock { $0.loopsLeft = loops } }

    /// Sets the pitch-preserving tempo: nil plays the source as it is. A change between nil and
    /// a tempo takes effect at the next seek; one between two tempos at the next read.
    ///
    /// - Returns: The tempo asked for before.
    @discardableResult
    func setRequestedTempo(_ tempo: Double?) -> Double? {
        shared.withLock { s in
            defer { s.requestedTempo = tempo }
            return s.requestedTempo
        }
    }

    /// The source frame that stream frame `frame` came from, within its loop pass.
    func sourceFrame(atStreamFrame frame: Int) -> Int {
        shared.withLock { s in
            guard let checkpoint = s.checkpoints.last(where: { $0.streamFrame <= frame }) else { return s.seekFrame }
            let offset = Int((Double(frame - checkpoint.streamFrame) * checkpoint.tempo).rounded(.down))
            return checkpoint.sourceFrame + offset
        }
    }

    /// The stream frame at which source frame `frame` is fed: in the run being read or sought
    /// now (a source may ask during its read or seek), else in the latest recorded run that
    /// began at or before it.
    func streamFrame(ofSourceFrame frame: Int) -> Int {
        shared.withLock { s in
            let run = s.reading ?? s.checkpoints.last { $0.sourceFrame <= frame }
                ?? Checkpoint(streamFrame: 0, sourceFrame: s.seekFrame, tempo: 1)
            return run.streamFrame + Int((Double(frame - run.sourceFrame) / run.tempo).rounded(.up))
        }
    }

    /// The power of `channel` over `blocks` meter blocks ending at stream frame `frame`.
    func power(channel: Int, endingAt frame: Int, blocks: Int) -> (average: Float, peak: Float) {
        shared.withLock { $0.meter.power(channel: channel, endingAt: frame, blocks: blocks) }
    }

    // MARK: AudioDecoder, for the feeder

    /// The frames of one pass of the source.
    var frameCount: Int { base.frameCount }
    /// Never exact: loops and tempo make the stream's length unknown ahead, so the feeder
    /// reads until the stream ends.
    var isFrameCountExact: Bool { false }
    var position: Int { sourceFrame(atStreamFrame: streamFrames) }
    var warnings: [DecodeWarning] { base.warnings }
    /// The source's: a stream still downloading has no frames ready (a time-stretch stage may
    /// still wait inside a read for the rest of a chunk it needs).
    var wouldWait: Bool { (base as? any ProgressiveDecoder)?.wouldWait ?? false }
    /// Whether the source's own length is exact (an estimate while a stream downloads).
    var isSourceFrameCountExact: Bool { base.isFrameCountExact }

    func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int {
        let channels = format.channelCount
        var emptyPasses = 0
        while true {
            let tempo = shared.withLock { $0.requestedTempo }
            if let stage, let tempo, tempo != stage.tempo { try stage.setTempo(tempo) }
            let from: Int, rate: Double
            if let stage {
                from = stage.sourceFrame(atOutputFrame: passOutputFrames)
                rate = stage.tempo
            } else {
                from = base.position
                rate = 1
            }
            let start = streamFrames
            shared.withLock { $0.reading = Checkpoint(streamFrame: start, sourceFrame: from, tempo: rate) }
            let n: Int
            do {
                defer { shared.withLock { $0.reading = nil } }
                n = try (stage ?? base).read(into: buffer)
            }
            if n > 0 {
                shared.withLock { s in
                    s.checkpoints.append(Checkpoint(streamFrame: start, sourceFrame: from, tempo: rate))
                    // Enough history for what the voice still holds (feeding runs < 1 s ahead).
                    if s.checkpoints.count > 64 { s.checkpoints.removeFirst(s.checkpoints.count - 64) }
                    s.meter.add(UnsafeBufferPointer(rebasing: buffer[0..<(n * channels)]), frames: n)
                }
                streamFrames += n
                passOutputFrames += n
                return n
            }
            // The end of a pass: loop, or end. A pass that yields nothing twice running is empty.
            emptyPasses += passOutputFrames == 0 ? 1 : 0
            let again = shared.withLock { s -> Bool in
                guard s.loopsLeft != 0, emptyPasses < 2 else { return false }
                if s.loopsLeft > 0 { s.loopsLeft -= 1 }
                s.seams += 1
                return true
            }
            guard again else { return 0 }
            try (stage ?? base).seek(toFrame: 0)
            passOutputFrames = 0
        }
    }

    /// Moves to source frame `frame` (a player seek): stream frames count from 0 again, and a
    /// change of stage asked for meanwhile takes effect.
    func seek(toFrame frame: Int) throws {
        let tempo = shared.withLock { $0.requestedTempo }
        switch (stage, tempo) {
        case (nil, let tempo?): stage = try makeStage(base, tempo)
        case (_?, nil): stage = nil
        case (let current?, let tempo?): if current.tempo != tempo { try current.setTempo(tempo) }
        case (nil, nil): break
        }
        shared.withLock { $0.reading = Checkpoint(streamFrame: 0, sourceFrame: frame, tempo: tempo ?? 1) }
        defer { shared.withLock { $0.reading = nil } }
        try (stage ?? base).seek(toFrame: frame)
        passOutputFrames = 0
        streamFrames = 0
        shared.withLock { s in
            s.checkpoints = []
            s.seekFrame = frame
            s.meter.reset(atSourceFrame: frame)
            s.seams = 0
        }
    }
}
