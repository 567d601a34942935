internal import CSoundTouch
import SpoolCore

/// Changes the tempo of interleaved Float32 audio and keeps its pitch (time-stretch), through
/// SoundTouch's WSOLA time-stretcher (libsoundtouch, LGPL-2.1, linked dynamically).
///
/// Audio goes in and comes out in `process(input:output:)`; at the end of the stream `flush()`
/// lets the last frames out, so that a whole stream of `N` frames played at one tempo `t`
/// comes out as `N / t` frames, rounded. `reset()` drops everything held (for a seek).
/// `sourcePosition(atOutputFrame:)` tells which input frame an output frame plays.
///
/// How it works, and what it costs: SoundTouch cuts the input into sequences and lays them
/// end to end with a short cross-fade, each one placed where it best matches the previous one
/// within a seek window; faster tempi skip input between sequences, slower ones repeat it.
/// Within a sequence the audio is the input untouched, so pitch stays; the seams (12 a second
/// at tempo 0.5 to 31 at tempo 2) are where artefacts live. The rate transposer inside
/// SoundTouch stays at rate 1, where its anti-alias filter is a 64-tap identity (a sinc cut at
/// Nyquist, sampled at whole frames): Spool turns it off, which saves about a fifth of the CPU
/// time and 32 frames of latency and changes no level (measured with tones of 1 to 21 kHz:
/// 0.00 dB either way).
///
/// Real-time safe after `init`: `process`, `setTempo`, `reset` and `sourcePosition` neither
/// allocate, lock nor do I/O (`init` runs silence through SoundTouch at the slowest and the
/// fastest tempo, so that its buffers reach the size they will ever need; the tests count
/// allocations). `flush()` does not allocate either: the tail is pushed out with silence
/// from a buffer made at init.
///
/// Not thread-safe: one thread at a time.
///
/// The corresponding Apple unit is `AVAudioUnitTimePitch` (`rate` with `pitch` 0), or an
/// audio queue's `kAudioQueueProperty_EnableTimePitch` with
/// `kAudioQueueTimePitchAlgorithm_TimeDomain`, the same family of algorithm.
public final class TimeStretcher {
    /// SoundTouch's time-stretch parameters (`SETTING_SEQUENCE_MS`, `SETTING_SEEKWINDOW_MS`,
    /// `SETTING_OVERLAP_MS`, `SETTING_USE_QUICKSEEK`).
    ///
    /// `default` is SoundTouch's own choice, kept after measuring the alternatives
    /// (`spool bench stretch --sweep`, figures in docs/BENCHMARKS.md): the automatic sequence
    /// and seek window, which shorten as the tempo rises (sequence 90 ms at tempo 0.5 to 40 ms
    /// at 2, seek window 20 to 15 ms), an 8 ms overlap and the full seek. Measured at tempi
    /// 0.5, 0.75, 1.5 and 2 on steady tones and three-note chords (the residual beyond the
    /// known sinusoids, fitted block by block: what the seams add) and on clicks over a chord
    /// (how evenly the clicks come out), every alternative trades one of them away:
    /// - fixed sequences of 20 to 60 ms: 0.6 to 5.7 dB more residual (and 20 ms costs 3.7×
    ///   the CPU time), for clicks 2 to 7 ms more even; 80 and 100 ms: 0.8 and 2.1 dB less
    ///   residual, for clicks 0.6 and 3.7 ms less even and a frame-position tolerance of 44
    ///   and 54 ms at tempo 2 (24 ms automatic);
    /// - seek windows of 20 to 40 ms: 1 to 3.6 dB less residual, clicks as even (within
    ///   0.6 ms), at 1.4 to 2.1× the CPU time and 2.5 to 10 ms more position tolerance and
    ///   latency (SoundTouch's documentation warns of a "drifting" sound with wide windows,
    ///   which these measures do not see); 10 and 15 ms: 2.3 and 1 dB more residual;
    /// - overlaps of 16 and 24 ms: chords 2.3 to 2.7 dB cleaner, tones 4 dB worse at tempo 2,
    ///   at 2.2 and 3× the CPU time; 4 ms: 1.3 dB worse;
    /// - the quick seek: 0.8 dB more residual (up to 2.7 dB on tones at tempo 2) to save two
    ///   thirds of a cost that is 0.2 % of one core for stereo 44.1 kHz.
    public struct Settings: Sendable, Equatable, CustomStringConvertible {
        /// Length of each sequence in milliseconds, or `nil` for SoundTouch's tempo-dependent
        /// choice (90 ms at tempo 0.5, falling linearly to 40 ms at tempo 2).
        public var sequenceMilliseconds: Int?
        /// Width of the window searched for the best seam, in milliseconds, or `nil` for
        /// SoundTouch's tempo-dependent choice (20 ms at tempo 0.5 to 15 ms at 2).
        public var seekWindowMilliseconds: Int?
        /// Length of the cross-fade at each seam, in milliseconds.
        public var overlapMilliseconds: Int
        /// Whether the seam search samples the window coarsely first (SoundTouch's quick seek),
        /// for less CPU time and slightly worse seams.
        public var quickSeek: Bool

        /// Sequence lengths accepted, in milliseconds.
        public static let sequenceRange = 10...500
        /// Seek windows accepted, in milliseconds.
        public static let seekWindowRange = 2...100
        /// Overlaps accepted, in milliseconds.
        public static let overlapRange = 1...50

        /// The settings Spool uses unless told otherwise (see the type's documentation).
        public static let `default` = Settings()

        /// Makes settings.
        /// - Parameters:
        ///   - sequenceMilliseconds: `nil` for automatic, else within `sequenceRange`.
        ///   - seekWindowMilliseconds: `nil` for automatic, else within `seekWindowRange`.
        ///   - overlapMilliseconds: Within `overlapRange`.
        ///   - quickSeek: SoundTouch's quick seek.
        public init(sequenceMilliseconds: Int? = nil, seekWindowMilliseconds: Int? = nil,
                    overlapMilliseconds: Int = 8, quickSeek: Bool = false) {
            self.sequenceMilliseconds = sequenceMilliseconds
            self.seekWindowMilliseconds = seekWindowMilliseconds
            self.overlapMilliseconds = overlapMilliseconds
            self.quickSeek = quickSeek
        }

        public var description: String {
            let sequence = sequenceMilliseconds.map { "\($0) ms" } ?? "auto"
            let seek = seekWindowMilliseconds.map { "\($0) ms" } ?? "auto"
            return "sequence \(sequence), seek \(seek), overlap \(overlapMilliseconds) ms\(quickSeek ? ", quick seek" : "")"
        }

        func validate() throws {
            if let sequence = sequenceMilliseconds, !Self.sequenceRange.contains(sequence) {
                throw AudioError(.invalidParameter, "time-stretch sequence \(sequence) ms is outside \(Self.sequenceRange) ms")
            }
            if let seek = seekWindowMilliseconds, !Self.seekWindowRange.contains(seek) {
                throw AudioError(.invalidParameter, "time-stretch seek window \(seek) ms is outside \(Self.seekWindowRange) ms")
            }
            guard Self.overlapRange.contains(overlapMilliseconds) else {
                throw AudioError(.invalidParameter, "time-stretch overlap \(overlapMilliseconds) ms is outside \(Self.overlapRange) ms")
            }
            if let sequence = sequenceMilliseconds, sequence < 2 * overlapMilliseconds {
                throw AudioError(.invalidParameter, "time-stretch sequence \(sequence) ms is shorter than twice the overlap (\(overlapMilliseconds) ms)")
            }
        }
    }

    /// Tempi accepted: AVAudioPlayer's `rate` range.
    public static let tempoRange: ClosedRange<Double> = 0.5...2
    /// Input frames handed to SoundTouch per call: it never holds more than one call's worth
    /// of output, so its buffers stay the size the warm-up gave them.
    static let chunkFrames = 1024

    /// The format of both input and output.
    public let format: AudioFormat
    /// The time-stretch parameters.
    public let settings: Settings
    /// Output duration is input duration divided by this; 1 plays unchanged (but through the
    /// stretcher, with its latency). Changed with `setTempo(_:)`.
    public private(set) var tempo: Double
    /// Input frames taken since init or the last `reset()`.
    public private(set) var inputFrames = 0
    /// Output frames delivered since init or the last `reset()`.
    public private(set) var outputFrames = 0
    /// Whether `flush()` was called since init or the last `reset()`: no more input is taken.
    public private(set) var isFlushing = false
    /// Input frames SoundTouch needs before its first output at the current tempo
    /// (`SETTING_INITIAL_LATENCY`): at the default settings about 110 ms at tempo 0.5 and 87 to
    /// 99 ms from tempo 1 to 2.
    public private(set) var latencyFrames = 0
    /// Input frames SoundTouch holds that no output has come from yet
    /// (`soundtouch_numUnprocessedSamples`).
    public var bufferedInputFrames: Int { Int(soundtouch_numUnprocessedSamples(instance.handle)) }
    /// How far, in input frames, the frame really playing in an output frame may lie from
    /// `sourcePosition(atOutputFrame:)` at the current tempo: half the drift within one
    /// sequence (`|1 − tempo| × (sequence − overlap) / 2`, since within a sequence the input
    /// plays at its own speed) plus half the seek window. At the default settings: about 31 ms
    /// at tempo 0.5, 19 ms at 0.75, 9 ms at 1, 21 ms at 1.5, 24 ms at 2.
    public private(set) var positionToleranceFrames = 0.0

    private let instance: SoundTouchInstance
    private let channelCount: Int
    /// Silence, `chunkFrames` frames: what pushes the tail out after `flush()`.
    private let silence: [Float]
    /// Output frames of one sequence at the current tempo (`SETTING_NOMINAL_OUTPUT_SEQUENCE`).
    private var sequenceOutputFrames = 0
    /// SoundTouch's cross-fade in frames: the overlap setting, at least 16 frames and a
    /// multiple of 8 (TDStretch's rule).
    private let overlapFrames: Int
    /// Silence fed since `flush()`, and the most that will be fed.
    private var silenceFed = 0
    private var silenceLimit = 0

    /// One stretch of output at one tempo: output frame `outputStart` (since the last reset)
    /// begins at input frame `sourceStart` on the nominal time line, and later output frames
    /// advance it by `tempo` each.
    private struct Segment {
        var outputStart: Int
        var sourceStart: Double
        var tempo: Double
        /// Mean lead of the frame playing over the nominal time line: `(1 − tempo) ×
        /// sequenceOutputFrames / 2` (within a sequence the input plays at its own speed, and
        /// each sequence starts at the nominal frame, within the seek window).
        var lead: Double
    }
    /// The latest `segmentCapacity` segments, oldest first from `segmentStart`, in a ring.
    private static let segmentCapacity = 32
    private var segments: [Segment]
    private var segmentStart = 0
    private var segmentCount = 0

    /// Makes a stretcher.
    /// - Parameters:
    ///   - format: The audio's rate and channel count (1…8; SoundTouch takes up to 16).
    ///   - tempo: Within `tempoRange`.
    ///   - settings: SoundTouch's parameters; `Settings.default` unless measured otherwise.
    /// - Throws: `AudioError.Code.invalidParameter` for a tempo outside `tempoRange` (or not
    ///   finite) or settings out of range; `.libraryFailure` when SoundTouch refuses the
    ///   configuration.
    public init(format: AudioFormat, tempo: Double = 1, settings: Settings = .default) throws {
        try Self.validate(tempo: tempo)
        try settings.validate()
        guard let instance = SoundTouchInstance() else {
            throw AudioError(.libraryFailure, "libsoundtouch could not make a time-stretcher")
        }
        self.instance = instance
        self.format = format
        self.settings = settings
        self.tempo = tempo
        channelCount = format.channelCount
        let overlap = max(16, Int(format.sampleRate.rounded()) * settings.overlapMilliseconds / 1000)
        overlapFrames = overlap - overlap % 8
        silence = [Float](repeating: 0, count: Self.chunkFrames * format.channelCount)
        segments = [Segment](repeating: Segment(outputStart: 0, sourceStart: 0, tempo: 1, lead: 0),
                             count: Self.segmentCapacity)
        // From here on every stored property is set: a throw runs deinit, and the SoundTouch
        // instance is freed once, by its owner's deinit.
        let handle = instance.handle
        guard soundtouch_setChannels(handle, UInt32(format.channelCount)) != 0 else {
            throw AudioError(.libraryFailure, "libsoundtouch refused \(format.channelCount) channels")
        }
        let rate = UInt32(format.sampleRate.rounded())
        guard soundtouch_setSampleRate(handle, rate) != 0 else {
            throw AudioError(.libraryFailure, "libsoundtouch refused the sample rate \(rate) Hz")
        }
        // SoundTouch's rate stays 1: its transposer only copies, and its anti-alias filter
        // would be a costly identity there (see the type's documentation).
        _ = soundtouch_setSetting(handle, Int32(CSOUNDTOUCH_SETTING_USE_AA_FILTER), 0)
        _ = soundtouch_setSetting(handle, Int32(CSOUNDTOUCH_SETTING_USE_QUICKSEEK), settings.quickSeek ? 1 : 0)
        // 0 is SoundTouch's "automatic" for the sequence and the seek window.
        _ = soundtouch_setSetting(handle, Int32(CSOUNDTOUCH_SETTING_SEQUENCE_MS), Int32(settings.sequenceMilliseconds ?? 0))
        _ = soundtouch_setSetting(handle, Int32(CSOUNDTOUCH_SETTING_SEEKWINDOW_MS), Int32(settings.seekWindowMilliseconds ?? 0))
        _ = soundtouch_setSetting(handle, Int32(CSOUNDTOUCH_SETTING_OVERLAP_MS), Int32(settings.overlapMilliseconds))
        warmUp()
        applyTempo(tempo)
        reset()
    }

    /// Changes the tempo for the audio from here on; input SoundTouch already holds is
    /// stretched at the new tempo too.
    /// - Parameter tempo: Within `tempoRange`.
    /// - Throws: `AudioError.Code.invalidParameter` for a tempo outside `tempoRange` or not
    ///   finite; the tempo is then unchanged.
    public func setTempo(_ tempo: Double) throws {
        try Self.validate(tempo: tempo)
        guard tempo != self.tempo else { return }
        // The output SoundTouch has made so far came at the old tempo; what it makes from now
        // on, at the new one.
        let boundary = outputFrames + Int(soundtouch_numSamples(instance.handle))
        let source = nominalSourcePosition(atOutputFrame: boundary)
        self.tempo = tempo
        applyTempo(tempo)
        appendSegment(Segment(outputStart: boundary, sourceStart: source, tempo: effectiveTempo,
                              lead: lead(tempo: effectiveTempo)))
    }

    /// Stretches: takes input and gives output, as much of both as there is room for.
    ///
    /// Output SoundTouch holds is given first; input is taken only while there is room for
    /// output, so a call may leave input (hand the rest back next time) or, with an empty
    /// input, give output held from before. At the start SoundTouch takes `latencyFrames` of
    /// input before it gives anything. After `flush()` input is not taken, and calls give the
    /// tail until `isFinished`. Real-time safe.
    /// - Parameters:
    ///   - input: Interleaved frames (a partial frame at the end is left).
    ///   - output: Room for interleaved frames.
    /// - Returns: Input frames taken and output frames written.
    public func process(input: UnsafeBufferPointer<Float>, output: UnsafeMutableBufferPointer<Float>)
        -> (consumed: Int, produced: Int) {
        let channels = channelCount
        let room = output.count / channels
        guard room > 0, let out = output.baseAddress else { return (0, 0) }
        let available = isFlushing ? 0 : input.count / channels
        let handle = instance.handle
        var consumed = 0, produced = 0
        while true {
            produced += receive(into: out + produced * channels, frames: room - produced)
            if produced == room { break }
            // SoundTouch holds no output now: give it more.
            if isFlushing {
                guard needsSilence else { break }
                silence.withUnsafeBufferPointer { zeros in
                    _ = soundtouch_putSamples(handle, zeros.baseAddress, UInt32(Self.chunkFrames))
                }
                silenceFed += Self.chunkFrames
            } else {
                guard consumed < available, let base = input.baseAddress else { break }
                let frames = min(Self.chunkFrames, available - consumed)
                _ = soundtouch_putSamples(handle, base + consumed * channels, UInt32(frames))
                consumed += frames
                inputFrames += frames
            }
        }
        return (consumed, produced)
    }

    /// Ends the input: the frames SoundTouch still holds come out of the next `process` calls,
    /// followed by nothing. The whole output then lasts what the input lasted at the tempo of
    /// each part (for one tempo `t` and `N` input frames, `N / t` rounded), and ends on the
    /// last input frame's neighbourhood (SoundTouch's own `flush` pads with silence the same
    /// way; this one does not allocate).
    public func flush() {
        guard !isFlushing else { return }
        isFlushing = true
        silenceFed = 0
        // Enough silence to push out all SoundTouch holds, several times over; never more.
        silenceLimit = 4 * (latencyFrames + Self.chunkFrames) + 2 * sequenceOutputFrames
    }

    /// Whether `flush()` was called and all its output has been given.
    public var isFinished: Bool {
        guard isFlushing else { return false }
        let end = endOutputFrame
        if outputFrames >= end { return true }
        return soundtouch_numSamples(instance.handle) == 0 && !needsSilence
    }

    /// Drops every frame held, input and output, and starts again as a new stream at the
    /// current tempo (for a seek). Real-time safe.
    public func reset() {
        soundtouch_clear(instance.handle)
        inputFrames = 0
        outputFrames = 0
        isFlushing = false
        silenceFed = 0
        segmentStart = 0
        segmentCount = 0
        appendSegment(Segment(outputStart: 0, sourceStart: 0, tempo: effectiveTempo, lead: lead(tempo: effectiveTempo)))
    }

    /// The input frame that output frame `outputFrame` plays, both counted since init or the
    /// last `reset()`, as a fraction.
    ///
    /// Exact in SoundTouch's first sequence after a reset (it copies the input from its first
    /// frame); after that the mean of where the sequences play (each plays the input at its own
    /// speed, from a nominal frame that advances by the tempo), within
    /// `positionToleranceFrames`. Across a tempo change it follows each tempo; for an output
    /// frame older than the last 32 tempo changes it extrapolates from the oldest kept. The
    /// result lies within `0...inputFrames`.
    /// - Parameter outputFrame: An output frame, delivered or still to come.
    /// - Returns: The input frame, counted since the last reset.
    public func sourcePosition(atOutputFrame outputFrame: Int) -> Double {
        let index = segmentIndex(containing: outputFrame)
        let segment = segments[index]
        let position: Double
        if index == segmentStart, outputFrame < segment.outputStart + sequenceOutputFramesAtStart {
            // SoundTouch's first sequence copies the input from frame 0 at the input's speed.
            position = Double(outputFrame)
        } else {
            position = segment.sourceStart + (Double(outputFrame) - Double(segment.outputStart)) * segment.tempo + segment.lead
        }
        return min(max(position, 0), Double(inputFrames))
    }

    // MARK: - Private

    /// The tempo SoundTouch works with: it takes a `float`.
    private var effectiveTempo: Double { Double(Float(tempo)) }

    /// Output frames of the first sequence after a reset that copy the input exactly (the
    /// sequence less its overlap, which fades into the next one); 0 when the oldest kept
    /// segment is not the one that started at the reset.
    private var sequenceOutputFramesAtStart = 0

    private static func validate(tempo: Double) throws {
        guard tempo.isFinite, tempoRange.contains(tempo) else {
            throw AudioError(.invalidParameter, "time-stretch tempo \(tempo) is outside \(tempoRange.lowerBound)...\(tempoRange.upperBound)")
        }
    }

    /// Sets SoundTouch's tempo and reads back what depends on it.
    private func applyTempo(_ tempo: Double) {
        let handle = instance.handle
        soundtouch_setTempo(handle, Float(tempo))
        latencyFrames = Int(soundtouch_getSetting(handle, Int32(CSOUNDTOUCH_SETTING_INITIAL_LATENCY)))
        sequenceOutputFrames = Int(soundtouch_getSetting(handle, Int32(CSOUNDTOUCH_SETTING_NOMINAL_OUTPUT_SEQUENCE)))
        let skipFrames = Int(soundtouch_getSetting(handle, Int32(CSOUNDTOUCH_SETTING_NOMINAL_INPUT_SEQUENCE)))
        // SoundTouch's latency is max(skip + overlap, sequence) + seek window (TDStretch's
        // sampleReq): the seek window is what remains. Its overlap is the setting in frames,
        // at least 16 and a multiple of 8.
        let overlap = overlapFrames
        let seekFrames = max(0, latencyFrames - max(skipFrames + overlap, sequenceOutputFrames + overlap))
        positionToleranceFrames = abs(1 - Double(Float(tempo))) * Double(sequenceOutputFrames) / 2 + Double(seekFrames) / 2
    }

    /// Runs silence through SoundTouch in the shape `process` feeds it, at the tempi where its
    /// buffers grow largest (the slowest, which outputs most per input, and the fastest, which
    /// skips most), so that nothing it does later allocates.
    private func warmUp() {
        let channels = channelCount
        let outputFrames = 4 * Self.chunkFrames
        var output = [Float](repeating: 0, count: outputFrames * channels)
        let seconds = Int(format.sampleRate.rounded())
        for tempo in [Self.tempoRange.lowerBound, 1, Self.tempoRange.upperBound] {
            applyTempo(tempo)
            silence.withUnsafeBufferPointer { zeros in
                output.withUnsafeMutableBufferPointer { out in
                    var fed = 0
                    while fed < seconds {
                        // Drain as `process` does before it feeds again.
                        while soundtouch_receiveSamples(instance.handle, out.baseAddress, UInt32(outputFrames)) > 0 {}
                        _ = soundtouch_putSamples(instance.handle, zeros.baseAddress, UInt32(Self.chunkFrames))
                        fed += Self.chunkFrames
                    }
                }
            }
        }
        soundtouch_clear(instance.handle)
    }

    /// Takes up to `frames` output frames from SoundTouch, never past the end after a flush.
    private func receive(into destination: UnsafeMutablePointer<Float>, frames: Int) -> Int {
        // SoundTouch counts in `unsigned int`: ask for at most 2^30 frames at a time.
        var allowed = min(frames, 1 << 30)
        if isFlushing { allowed = min(allowed, endOutputFrame - outputFrames) }
        guard allowed > 0 else { return 0 }
        let got = Int(soundtouch_receiveSamples(instance.handle, destination, UInt32(allowed)))
        outputFrames += got
        return got
    }

    /// After a flush: whether SoundTouch must be fed more silence to reach the end.
    private var needsSilence: Bool {
        outputFrames + Int(soundtouch_numSamples(instance.handle)) < endOutputFrame && silenceFed < silenceLimit
    }

    /// The output frame where the input's end plays on the nominal time line: where the
    /// output ends after a flush.
    private var endOutputFrame: Int {
        let segment = segments[(segmentStart + segmentCount - 1) % Self.segmentCapacity]
        let frames = Double(segment.outputStart) + (Double(inputFrames) - segment.sourceStart) / segment.tempo
        return max(segment.outputStart, Int(frames.rounded()))
    }

    private func lead(tempo: Double) -> Double { (1 - tempo) * Double(sequenceOutputFrames) / 2 }

    /// The input frame output frame `outputFrame` starts from on the nominal time line (which
    /// advances by the tempo per output frame, without the lead of the frame playing), not
    /// clamped.
    func nominalSourcePosition(atOutputFrame outputFrame: Int) -> Double {
        let segment = segments[segmentIndex(containing: outputFrame)]
        return segment.sourceStart + (Double(outputFrame) - Double(segment.outputStart)) * segment.tempo
    }

    /// The ring index of the newest segment starting at or before `outputFrame` (the oldest
    /// kept when none does).
    private func segmentIndex(containing outputFrame: Int) -> Int {
        var k = segmentCount - 1
        while k > 0 {
            let index = (segmentStart + k) % Self.segmentCapacity
            if segments[index].outputStart <= outputFrame { return index }
            k -= 1
        }
        return segmentStart
    }

    private func appendSegment(_ segment: Segment) {
        if segmentCount > 0 {
            let newest = (segmentStart + segmentCount - 1) % Self.segmentCapacity
            if segments[newest].outputStart >= segment.outputStart {
                // No output came at the previous tempo: the new one replaces it.
                segments[newest] = segment
                if segmentCount == 1 { sequenceOutputFramesAtStart = max(0, sequenceOutputFrames - overlapFrames) }
                return
            }
        }
        if segmentCount == Self.segmentCapacity {
            segmentStart = (segmentStart + 1) % Self.segmentCapacity
            segmentCount -= 1
            // The segment that began at the reset is gone.
            sequenceOutputFramesAtStart = 0
        }
        segments[(segmentStart + segmentCount) % Self.segmentCapacity] = segment
        segmentCount += 1
        if segmentCount == 1 { sequenceOutputFramesAtStart = max(0, sequenceOutputFrames - overlapFrames) }
    }
}

/// Owns one SoundTouch instance (`soundtouch_createInstance`) and destroys it in `deinit`:
/// the one place it is freed, whatever path the owner's init takes.
final class SoundTouchInstance {
    let handle: UnsafeMutableRawPointer

    init?() {
        guard let made = soundtouch_createInstance() else { return nil }
        handle = made
    }

    deinit { soundtouch_destroyInstance(handle) }
}
