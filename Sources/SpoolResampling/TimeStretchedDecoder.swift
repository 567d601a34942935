import SpoolCore

/// A decoder that plays another decoder's stream at another tempo with its pitch kept: the
/// time-stretched stream in the same format, through a `TimeStretcher`.
///
/// Two time lines meet here. The *source* is the inner decoder's: `seek(toFrame:)` takes a
/// source frame, and `sourceFrame(atOutputFrame:)` says which source frame an output frame
/// plays. The *output* is what `read(into:)` gives: `frameCount` and `position` count it, as
/// the stretched stream would run if the whole of it played at the current tempo, so
/// `duration` is the stretched duration. Output frames since the last seek are
/// `outputFramesSinceSeek`; a player that knows how many of them the listener has heard asks
/// `sourceFrame(atOutputFrame:)` for the source frame sounding now (the mapping keeps the
/// last 32 tempo changes, so a frame some seconds behind the read still maps right).
///
/// The stream ends with the inner one: the stretcher's tail is flushed, so that a stream of
/// `N` frames read at one tempo `t` gives `N / t` frames, rounded. An error from the inner
/// decoder comes after the frames decoded before it (the stretcher's tail included), and
/// again on every read until a seek.
///
/// Like every decoder it is used from one thread at a time; `setTempo(_:)` too.
public final class TimeStretchedDecoder: AudioDecoder {
    /// The decoder whose stream is stretched.
    public let inner: any AudioDecoder
    /// Source frames pulled from the inner decoder per read of it.
    static let pullFrames = 4096

    private let stretcher: TimeStretcher
    /// Source frames read from the inner decoder and not yet taken by the stretcher.
    private var pending: [Float]
    private var pendingStart = 0
    private var pendingFrames = 0
    /// The inner stream ended (or failed) and the stretcher was flushed.
    private var innerEnded = false
    /// The inner decoder's error, thrown once the frames before it are out.
    private var innerError: (any Error)?
    /// The source frame of the last seek (0 at the start).
    public private(set) var seekFrame = 0
    /// The output frame (on the stretched time line) where the last seek landed.
    private var seekOutputFrame = 0
    /// Set when the stream's end has been read: the output's real length.
    private var endFrame: Int?

    /// Makes the stretched decoder.
    /// - Parameters:
    ///   - decoder: The stream to stretch, read from its current position (counted as the
    ///     seek frame).
    ///   - tempo: Within `TimeStretcher.tempoRange`; 2 plays twice as fast.
    ///   - settings: The stretcher's parameters.
    /// - Throws: `AudioError.Code.invalidParameter` for a tempo out of range;
    ///   `.libraryFailure` when SoundTouch refuses the format.
    public init(wrapping decoder: any AudioDecoder, tempo: Double = 1,
                settings: TimeStretcher.Settings = .default) throws {
        inner = decoder
        stretcher = try TimeStretcher(format: decoder.format, tempo: tempo, settings: settings)
        pending = [Float](repeating: 0, count: Self.pullFrames * decoder.format.channelCount)
        seekFrame = decoder.position
        seekOutputFrame = Self.outputFrame(forSource: seekFrame, tempo: tempo)
    }

    /// The output's tempo: output lasts source duration divided by this.
    public var tempo: Double { stretcher.tempo }

    /// Changes the tempo from the next read on (audio the stretcher holds is stretched at the
    /// new tempo too); `frameCount` follows.
    /// - Parameter tempo: Within `TimeStretcher.tempoRange`.
    /// - Throws: `AudioError.Code.invalidParameter` for a tempo out of range or not finite;
    ///   the tempo is then unchanged.
    public func setTempo(_ tempo: Double) throws { try stretcher.setTempo(tempo) }

    /// The stretcher's parameters.
    public var settings: TimeStretcher.Settings { stretcher.settings }

    /// Source frames the stretcher needs before it gives output (`TimeStretcher.latencyFrames`).
    public var latencyFrames: Int { stretcher.latencyFrames }

    /// How far the source frame really playing may lie from `sourceFrame(atOutputFrame:)`, in
    /// source frames (`TimeStretcher.positionToleranceFrames`).
    public var positionToleranceFrames: Double { stretcher.positionToleranceFrames }

    /// Output frames `read(into:)` has given since the last seek (or since init).
    public var outputFramesSinceSeek: Int { stretcher.outputFrames }

    /// The source frame that output frame `outputFrame` (counted since the last seek) plays:
    /// for a player, the frame being heard, from the output frames heard since the seek.
    ///
    /// Exact for the first tens of milliseconds after a seek, then within
    /// `positionToleranceFrames` (SoundTouch plays each sequence of the source at its own
    /// speed). Never before the seek frame, never past the source frames read.
    /// - Parameter outputFrame: Output frames since the last seek, e.g. the ones heard.
    /// - Returns: A source frame.
    public func sourceFrame(atOutputFrame outputFrame: Int) -> Int {
        seekFrame + Int(stretcher.sourcePosition(atOutputFrame: outputFrame).rounded())
    }

    // MARK: - AudioDecoder

    public var format: AudioFormat { inner.format }

    /// The stretched stream's length in output frames: the output so far plus the rest of the
    /// source at the current tempo, or, once the end has been read, the real length.
    public var frameCount: Int {
        if let endFrame { return endFrame }
        // The inner count may be a header's claim of any size: clamp before converting.
        let remaining = max(0, Double(inner.frameCount) - sourceBehindOutput)
        return position + Self.clampedFrames(remaining / stretcher.tempo)
    }

    /// Always `false`: the count is an estimate until the end has been read, and depends on
    /// the tempo.
    public var isFrameCountExact: Bool { false }

    /// The next output frame `read(into:)` gives, on the stretched time line: where the last
    /// seek landed (its source frame at the tempo then) plus the output since.
    public var position: Int { seekOutputFrame + stretcher.outputFrames }

    public var info: AudioFileInfo { inner.info }

    public var warnings: [DecodeWarning] { inner.warnings }

    /// Fills `buffer` with stretched audio, pulling from the inner decoder as needed.
    /// - Parameter buffer: Room for whole interleaved frames.
    /// - Returns: Frames written; 0 only when the inner stream and the stretcher's tail are
    ///   both done.
    /// - Throws: The inner decoder's error, once the frames decoded before it are out.
    public func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int {
        let channels = format.channelCount
        let room = buffer.count / channels
        guard room > 0, let base = buffer.baseAddress else { return 0 }
        var produced = 0
        while produced < room {
            if pendingFrames == 0 && !innerEnded { pull() }
            let (consumed, written) = pending.withUnsafeBufferPointer { source in
                stretcher.process(
                    input: UnsafeBufferPointer(rebasing: source[(pendingStart * channels)..<((pendingStart + pendingFrames) * channels)]),
                    output: UnsafeMutableBufferPointer(start: base + produced * channels, count: (room - produced) * channels))
            }
            pendingStart += consumed
            pendingFrames -= consumed
            produced += written
            if innerEnded && written == 0 && stretcher.isFinished { break }
        }
        if produced == 0, innerEnded, stretcher.isFinished {
            if let innerError { throw innerError }
            endFrame = position
        }
        return produced
    }

    /// Moves to source frame `frame`: the next read gives the stretched audio from there,
    /// starting exactly with that frame. Everything the stretcher held is dropped.
    /// - Parameter frame: A source frame, within the inner decoder's `0...frameCount`.
    /// - Throws: The inner decoder's error (`AudioError.Code.outOfRange` past its end).
    public func seek(toFrame frame: Int) throws {
        try inner.seek(toFrame: frame)
        stretcher.reset()
        pendingStart = 0
        pendingFrames = 0
        innerEnded = false
        innerError = nil
        endFrame = nil
        seekFrame = frame
        seekOutputFrame = Self.outputFrame(forSource: frame, tempo: stretcher.tempo)
    }

    // MARK: - Private

    /// The source frame the next output frame starts from, on the nominal time line (smooth,
    /// unlike the frame playing): the source after it lasts `(frameCount − position) × tempo`.
    private var sourceBehindOutput: Double {
        Double(seekFrame) + stretcher.nominalSourcePosition(atOutputFrame: stretcher.outputFrames)
    }

    private static func outputFrame(forSource frame: Int, tempo: Double) -> Int {
        clampedFrames(Double(frame) / tempo)
    }

    /// `frames` rounded, within `0...Int.max / 4` (so that adding a position cannot overflow).
    private static func clampedFrames(_ frames: Double) -> Int {
        guard frames.isFinite, frames > 0 else { return 0 }
        return frames >= Double(Int.max / 4) ? Int.max / 4 : Int(frames.rounded())
    }

    /// Reads the next source frames from the inner decoder; at its end, or on its error,
    /// flushes the stretcher.
    private func pull() {
        let got: Int
        do {
            got = try pending.withUnsafeMutableBufferPointer { try inner.read(into: $0) }
        } catch {
            innerError = error
            got = 0
        }
        pendingStart = 0
        pendingFrames = max(0, min(got, Self.pullFrames))
        if pendingFrames == 0 {
            innerEnded = true
            stretcher.flush()
        }
    }
}
