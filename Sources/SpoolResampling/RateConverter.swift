import Dispatch
import SpoolCore
import Synchronization

/// Converts one interleaved Float32 stream's sample rate; the ratio may change between calls
/// (varispeed).
///
/// The buffer-queue mixer keeps one converter per queue and pulls converted frames from it on
/// the render thread. The converter is time-aligned: output frame `k` is the input signal at
/// input time `k / ratio` (integrated over ratio changes), so starting a converter adds latency
/// (input it holds back) but no shift of the signal.
///
/// Threads: `setRatio(_:)` and `ratio` may be used from any thread. `process`, `reset` and
/// `delayFrames` belong to one thread at a time, normally the render thread.
///
/// The corresponding Apple mechanism is the time-pitch/varispeed unit behind
/// `kAudioQueueProperty_EnableTimePitch` and `kAudioQueueParam_PlayRate`.
public protocol RateConverter: AnyObject, Sendable {
    /// Interleaved channels in both input and output.
    var channelCount: Int { get }
    /// Output frames per input frame right now (e.g. 48000/44100 ÷ playback rate). After
    /// `setRatio(_:)` this glides to the new value as `process` produces output.
    var ratio: Double { get }
    /// Changes the ratio for the next `process` calls; the change is applied smoothly.
    ///
    /// The ratio glides linearly to the new value over the next
    /// `RateConverterKind.ratioGlideFrames` output frames, so the waveform never jumps. Values
    /// outside `RateConverterKind.supportedRatios` are clamped to it; values that are not
    /// finite and positive are ignored, and so is every call on a kind whose
    /// `supportsVariableRatio` is false. Lock-free: callable from any thread.
    /// - Parameter ratio: Output frames per input frame.
    func setRatio(_ ratio: Double)
    /// Reads up to `inputFrames` frames from `input` and writes up to `outputCapacity` frames
    /// to `output`.
    ///
    /// The converter takes only the input it needs to fill `output` (plus the filter's look
    /// ahead); hand the rest back on the next call. It stops early only when the input runs out.
    /// `input == nil` means end of input: call again with `nil` until `outputWritten` is 0 to
    /// drain the filter's tail; after that the converter takes no input until `reset()`.
    ///
    /// Real-time safe: never allocates, locks, does I/O (after init).
    /// - Parameters:
    ///   - input: `inputFrames × channelCount` interleaved samples, or `nil` at end of input.
    ///   - inputFrames: Frames available at `input`.
    ///   - output: Room for `outputCapacity × channelCount` interleaved samples.
    ///   - outputCapacity: Frames wanted.
    /// - Returns: Input frames consumed and output frames written.
    func process(
        input: UnsafePointer<Float>?, inputFrames: Int, output: UnsafeMutablePointer<Float>,
        outputCapacity: Int
    ) -> (inputUsed: Int, outputWritten: Int)
    /// Filter delay in output frames: the input consumed so far reaches the output this many
    /// frames after the output written so far. The input frame sounding in the next output frame
    /// is `consumed − delayFrames / ratio`.
    var delayFrames: Double { get }
    /// Forgets all history (after a flush/seek) and jumps to the last ratio set, without a
    /// glide.
    ///
    /// Real-time safe for the libsamplerate and libspeexdsp kinds; the libsoxr and libswresample
    /// kinds rebuild their state, which allocates (the queue engine never resets libsoxr: it
    /// feeds it through `FixedRatioStream`).
    func reset()
}

/// The resampler behind a `RateConverter`, as compared by `benchmarkRateConverters`.
///
/// All kinds come from Debian packages: libsamplerate (`libsamplerate0`), libsoxr
/// (`libsoxr0`), libspeexdsp (`libspeexdsp1`) and libswresample (`libswresample4`).
public enum RateConverterKind: String, Sendable, CaseIterable, CustomStringConvertible {
    /// libsamplerate's medium sinc interpolator (121 dB SNR, 90 % bandwidth per its documentation).
    case sincMedium
    /// libsamplerate's best sinc interpolator (144 dB SNR, 96 % bandwidth).
    case sincBest
    /// libsamplerate's fastest sinc interpolator (97 dB SNR, 80 % bandwidth).
    case sincFastest
    /// libsamplerate's linear interpolator: cheap, with audible aliasing.
    case linear
    /// libsoxr's 20-bit "high quality" resampler: fixed ratio only.
    case soxrHQ
    /// libsoxr's variable-rate resampler (`SOXR_VR`).
    case soxrVR
    /// libspeexdsp's resampler (PulseAudio's `speex-float-N`, SIMD) at quality 0, its
    /// fastest: fixed ratio only, like every libspeexdsp kind.
    case speexQ0
    /// libspeexdsp at quality 1 (PulseAudio's `speex-float-1`).
    case speexQ1
    /// libspeexdsp at quality 3 (`SPEEX_RESAMPLER_QUALITY_VOIP`; PulseAudio's
    /// `speex-float-3`).
    case speexQ3
    /// libspeexdsp at quality 5 (`SPEEX_RESAMPLER_QUALITY_DESKTOP`).
    case speexQ5
    /// libspeexdsp at quality 8.
    case speexQ8
    /// libspeexdsp at quality 10, its best.
    case speexQ10
    /// libswresample's own resampler with 8 taps (`filter_size` 8, its other options at their
    /// defaults): fixed ratio only, like every libswresample kind.
    case swrFilter8
    /// libswresample with 16 taps.
    case swrFilter16
    /// libswresample with its defaults (32 taps, 1024 phases, Kaiser β 9, cutoff 0.97).
    case swrDefault
    /// libswresample with 64 taps.
    case swrFilter64
    /// libswresample with 32 taps and the passband ending at 0.85 of the lower Nyquist
    /// frequency (`cutoff` 0.85), so that the transition band ends before it.
    case swrFilter32Cutoff85
    /// libswresample with 64 taps, `cutoff` 0.91 and a Kaiser window of β 12.
    case swrFilter64Cutoff91
    /// Spool's own Kaiser-windowed sinc (`WindowedSincEngine`) over 32 input frames at a
    /// ratio of 1 or more: a gliding ratio costs what a fixed one does.
    case windowedSinc32
    /// Spool's windowed sinc over 40 input frames.
    case windowedSinc40
    /// Spool's windowed sinc over 64 input frames.
    case windowedSinc64

    /// The kind for variable-ratio conversion, and the engine's varispeed converter at
    /// `ResamplingQuality.high`: Spool's windowed sinc over 64 frames, the fastest kind that
    /// changes ratio on the fly and keeps a sine within 0.1 % of its frequency at ≥ 120 dB SNR
    /// (at 1 kHz and 15 kHz, 44.1 ↔ 48 kHz), 2.5 to 4 times as fast as libsamplerate's medium
    /// sinc at a better SNR. At a playback rate of 1 the engine converts with `.soxrHQ` instead.
    /// `benchmarkRateConverters` measures the figures behind both choices.
    public static let `default`: RateConverterKind = .windowedSinc64

    /// Output/input ratios every kind accepts: 1/16…16, which covers a 0.5–2 playback rate on
    /// top of an 8 kHz ↔ 48 kHz device conversion.
    public static let supportedRatios: ClosedRange<Double> = (1.0 / 16)...16

    /// The most interleaved channels a converter takes.
    public static let maximumChannelCount = 8

    /// Output frames over which `setRatio(_:)` glides to a new ratio (about 11 ms at 48 kHz).
    public static let ratioGlideFrames = 512

    /// Whether `setRatio(_:)` has an effect (varispeed).
    public var supportsVariableRatio: Bool {
        switch self {
        case .sincMedium, .sincBest, .sincFastest, .linear, .soxrVR, .windowedSinc32, .windowedSinc40, .windowedSinc64:
            true
        case .soxrHQ, .speexQ0, .speexQ1, .speexQ3, .speexQ5, .speexQ8, .speexQ10,
             .swrFilter8, .swrFilter16, .swrDefault, .swrFilter64, .swrFilter32Cutoff85, .swrFilter64Cutoff91:
            false
        }
    }

    /// A name for tables: library and converter.
    public var description: String {
        switch self {
        case .sincMedium: "libsamplerate sinc medium"
        case .sincBest: "libsamplerate sinc best"
        case .sincFastest: "libsamplerate sinc fastest"
        case .linear: "libsamplerate linear"
        case .soxrHQ: "libsoxr HQ (fixed ratio)"
        case .soxrVR: "libsoxr VR"
        case .speexQ0: "libspeexdsp q0"
        case .speexQ1: "libspeexdsp q1"
        case .speexQ3: "libspeexdsp q3"
        case .speexQ5: "libspeexdsp q5"
        case .speexQ8: "libspeexdsp q8"
        case .speexQ10: "libspeexdsp q10"
        case .swrFilter8: "libswresample filter 8"
        case .swrFilter16: "libswresample filter 16"
        case .swrDefault: "libswresample default"
        case .swrFilter64: "libswresample filter 64"
        case .swrFilter32Cutoff85: "libswresample filter 32, cutoff 0.85"
        case .swrFilter64Cutoff91: "libswresample filter 64, cutoff 0.91, β 12"
        case .windowedSinc32: "Spool windowed sinc 32"
        case .windowedSinc40: "Spool windowed sinc 40"
        case .windowedSinc64: "Spool windowed sinc 64"
        }
    }
}

/// Makes a sample-rate converter.
/// - Parameters:
///   - kind: The resampler; `.default` unless comparing.
///   - channelCount: Interleaved channels, 1…8.
///   - ratio: Output frames per input frame, within `RateConverterKind.supportedRatios`.
/// - Returns: A converter that starts at `ratio` with empty history.
/// - Throws: `AudioError.Code.invalidParameter` when `channelCount` or `ratio` is out of range;
///   `.libraryFailure` when the library cannot make the converter.
public func makeRateConverter(
    _ kind: RateConverterKind = .default, channelCount: Int, ratio: Double
) throws -> any RateConverter {
    switch kind {
    case .sincMedium, .sincBest, .sincFastest, .linear:
        return try makeSampleRateConverter(kind, channelCount: channelCount, ratio: ratio)
    case .soxrHQ, .soxrVR:
        try checkRateConverterParameters(channelCount: channelCount, ratio: ratio)
        let engine = try SoxrEngine(variableRatio: kind == .soxrVR, channelCount: channelCount, ratio: ratio)
        return StreamingRateConverter(engine: engine, kind: kind, channelCount: channelCount, ratio: ratio)
    case .speexQ0, .speexQ1, .speexQ3, .speexQ5, .speexQ8, .speexQ10:
        try checkRateConverterParameters(channelCount: channelCount, ratio: ratio)
        let engine = try SpeexEngine(quality: kind.speexQuality ?? 0, channelCount: channelCount, ratio: ratio)
        return StreamingRateConverter(engine: engine, kind: kind, channelCount: channelCount, ratio: ratio)
    case .swrFilter8, .swrFilter16, .swrDefault, .swrFilter64, .swrFilter32Cutoff85, .swrFilter64Cutoff91:
        try checkRateConverterParameters(channelCount: channelCount, ratio: ratio)
        let engine = try SwresampleEngine(
            settings: kind.swresampleSettings ?? .default, channelCount: channelCount, ratio: ratio)
        return StreamingRateConverter(engine: engine, kind: kind, channelCount: channelCount, ratio: ratio)
    case .windowedSinc32, .windowedSinc40, .windowedSinc64:
        return try makeWindowedSincConverter(kind, channelCount: channelCount, ratio: ratio)
    }
}

/// `makeRateConverter` for a libsamplerate kind, as its concrete type: what the queue engine
/// holds, for the position controls (`restart(ratio:)`, `jump(to:)`, `backlogFrames`).
/// - Throws: As `makeRateConverter`.
func makeSampleRateConverter(
    _ kind: RateConverterKind, channelCount: Int, ratio: Double
) throws -> StreamingRateConverter<SampleRateEngine> {
    try checkRateConverterParameters(channelCount: channelCount, ratio: ratio)
    let engine = try SampleRateEngine(kind: kind, channelCount: channelCount, ratio: ratio)
    return StreamingRateConverter(engine: engine, kind: kind, channelCount: channelCount, ratio: ratio)
}

/// Makes what rate converters share across the process (the windowed-sinc tables, a few
/// milliseconds once), so that the first converted voice does not wait for it: on a
/// background queue when an engine or device is made (a voice made before it has finished
/// waits for it), or at once where the caller can afford it (`wait`: sound effects, whose
/// first trigger is timed, do it while they are set up).
package func prepareRateConverters(wait: Bool = false) {
    if wait {
        _ = WindowedSincEngine.warmedUp
    } else {
        DispatchQueue.global(qos: .utility).async { _ = WindowedSincEngine.warmedUp }
    }
}

/// `makeRateConverter` for a windowed-sinc kind, as its concrete type: what the queue engine's
/// varispeed lane holds, for the position controls.
/// - Throws: As `makeRateConverter`.
func makeWindowedSincConverter(
    _ kind: RateConverterKind, channelCount: Int, ratio: Double
) throws -> StreamingRateConverter<WindowedSincEngine> {
    try checkRateConverterParameters(channelCount: channelCount, ratio: ratio)
    guard let design = kind.windowedSincDesign else {
        throw AudioError(.invalidParameter, "\(kind) is not a windowed-sinc converter")
    }
    _ = WindowedSincEngine.warmedUp
    let engine = WindowedSincEngine(table: WindowedSincEngine.table(for: design), channelCount: channelCount, ratio: ratio)
    return StreamingRateConverter(engine: engine, kind: kind, channelCount: channelCount, ratio: ratio)
}

/// Throws `AudioError.Code.invalidParameter` when `channelCount` is outside 1…8 or `ratio`
/// outside `RateConverterKind.supportedRatios`.
func checkRateConverterParameters(channelCount: Int, ratio: Double) throws {
    guard (1...RateConverterKind.maximumChannelCount).contains(channelCount) else {
        throw AudioError(
            .invalidParameter,
            "rate converter channelCount \(channelCount) is outside 1...\(RateConverterKind.maximumChannelCount)")
    }
    guard ratio.isFinite, RateConverterKind.supportedRatios.contains(ratio) else {
        throw AudioError(
            .invalidParameter,
            "rate converter ratio \(ratio) is outside 1/16...16 output frames per input frame")
    }
}

// MARK: - One library behind the converter

/// One resampler library instance: converts at a constant ratio that changes only when told.
/// `StreamingRateConverter` adds the glide, the input metering and the delay bookkeeping.
protocol ResamplerEngine: AnyObject {
    /// Converts at the ratio last set. `input == nil` means end of input; a non-nil `input`
    /// with `inputFrames == 0` only drains what the filter can already produce. The engine
    /// takes all of the input it is given.
    func convert(
        input: UnsafePointer<Float>?, inputFrames: Int, output: UnsafeMutablePointer<Float>,
        outputCapacity: Int
    ) -> (inputUsed: Int, outputWritten: Int)
    /// Switches to `ratio` from the next output frame on (no ramp of its own).
    func jump(to ratio: Double)
    /// Forgets all history and starts again at `ratio`.
    func clear(ratio: Double)
    /// Whether `clear` keeps the library's buffers, so that priming at init lasts.
    var clearKeepsBuffers: Bool { get }
    /// Input frames past an output frame's time the filter needs before it can produce it, at
    /// a ratio of 1 or more: a first guess, refined while running.
    var lookaheadFrames: Double { get }
    /// Output frames by which the output lags the ideal `k / ratio` time mapping.
    func alignmentFrames(ratio: Double) -> Double
    /// Whether the library sets anything up on first use that a first real-time call must not
    /// pay for, so that the converter runs every path once at init (`clearKeepsBuffers` too).
    var wantsPriming: Bool { get }
}

extension ResamplerEngine {
    var wantsPriming: Bool { true }
}

// MARK: - The converter

/// A `RateConverter` over one `ResamplerEngine`.
///
/// A ratio change glides: during a glide the output is produced in blocks of
/// `glideStepFrames` at a constant ratio each, stepping along a straight line to the new ratio.
/// Each step is too small to hear (0.02 % of the ratio for a 1 % change) and the waveform stays
/// continuous. Constant-ratio blocks make the bookkeeping exact: every output frame advances
/// the input time by exactly `1 / ratio`, which gives `delayFrames` and meters the input.
final class StreamingRateConverter<Engine: ResamplerEngine>: RateConverter, @unchecked Sendable {
    // Sendable: `setRatio` and `ratio` touch only the two atomics. Everything else — the engine
    // and the render-side state below — is used only by the one thread that calls
    // `process`/`reset`/`delayFrames`, as the RateConverter contract requires.

    let channelCount: Int
    private let engine: Engine
    private let variableRatio: Bool
    /// The ratio last given to `setRatio`, as a bit pattern.
    private let requestedRatio: Atomic<UInt64>
    /// The ratio of the last output frame produced, as a bit pattern.
    private let currentRatio: Atomic<UInt64>

    /// Output frames converted at one constant ratio while gliding.
    static var glideStepFrames: Int { 32 }
    /// The most look-ahead the metering will learn: far above any filter's need.
    static var maximumLookaheadFrames: Double { 65536 }

    // Render-side state.
    private var appliedRatio: Double
    private var glide: RatioGlide
    /// Input frames consumed minus the input time of the next output frame: the next output
    /// frame sounds the input instant `consumed − backlogFrames` (exactly, for libsamplerate,
    /// which steps its position by `1 / ratio` in double precision).
    private(set) var backlogFrames = 0.0
    /// Input frames fed ahead of the next block's end at a ratio of 1 or more, learned from
    /// the engine's needs; below a ratio of 1 a filter's reach grows as 1 / ratio.
    private var lookaheadFrames: Double
    private var endOfInputSeen = false

    init(engine: Engine, kind: RateConverterKind, channelCount: Int, ratio: Double) {
        self.engine = engine
        self.channelCount = channelCount
        variableRatio = kind.supportsVariableRatio
        requestedRatio = Atomic(ratio.bitPattern)
        currentRatio = Atomic(ratio.bitPattern)
        appliedRatio = ratio
        glide = RatioGlide(ratio: ratio, length: RateConverterKind.ratioGlideFrames)
        lookaheadFrames = engine.lookaheadFrames
        if engine.clearKeepsBuffers && engine.wantsPriming { prime() }
    }

    var ratio: Double { Double(bitPattern: currentRatio.load(ordering: .relaxed)) }

    var delayFrames: Double {
        max(0, backlogFrames) * appliedRatio + engine.alignmentFrames(ratio: appliedRatio)
    }

    func setRatio(_ ratio: Double) {
        guard variableRatio, ratio.isFinite, ratio > 0 else { return }
        requestedRatio.store(Self.clamped(ratio).bitPattern, ordering: .relaxed)
    }

    func reset() {
        let ratio = Double(bitPattern: requestedRatio.load(ordering: .relaxed))
        engine.clear(ratio: ratio)
        appliedRatio = ratio
        glide = RatioGlide(ratio: ratio, length: RateConverterKind.ratioGlideFrames)
        backlogFrames = 0
        endOfInputSeen = false
        currentRatio.store(ratio.bitPattern, ordering: .relaxed)
    }

    /// Forgets all history and starts again at `ratio` (clamped to `supportedRatios`), with no
    /// glide: the next output frame sounds the next input frame. Real-time safe when the
    /// engine's `clear` is (libsamplerate).
    func restart(ratio: Double) {
        let ratio = Self.clamped(ratio)
        requestedRatio.store(ratio.bitPattern, ordering: .relaxed)
        reset()
    }

    /// Switches to `ratio` (clamped to `supportedRatios`) from the next output frame on, with no
    /// glide: for steps too small to hear, such as a position trim, where a glide would blur the
    /// exact input time the step is computed to reach.
    func jump(to ratio: Double) {
        guard variableRatio else { return }
        let ratio = Self.clamped(ratio)
        requestedRatio.store(ratio.bitPattern, ordering: .relaxed)
        glide = RatioGlide(ratio: ratio, length: RateConverterKind.ratioGlideFrames)
        apply(ratio)
        currentRatio.store(ratio.bitPattern, ordering: .relaxed)
    }

    /// Input frames on each side of an output frame's instant that the filter reads at `ratio`.
    func filterReachFrames(atRatio ratio: Double) -> Double {
        lookaheadFrames / min(ratio, 1)
    }

    private static func clamped(_ ratio: Double) -> Double {
        let supported = RateConverterKind.supportedRatios
        return min(max(ratio, supported.lowerBound), supported.upperBound)
    }

    func process(
        input: UnsafePointer<Float>?, inputFrames: Int, output: UnsafeMutablePointer<Float>,
        outputCapacity: Int
    ) -> (inputUsed: Int, outputWritten: Int) {
        guard outputCapacity > 0 else { return (0, 0) }
        guard let input else { return drain(output: output, outputCapacity: outputCapacity) }
        guard !endOfInputSeen else { return (0, 0) }
        let available = max(0, inputFrames)

        let requested = Double(bitPattern: requestedRatio.load(ordering: .relaxed))
        if requested != glide.target { glide.start(from: appliedRatio, to: requested) }

        var used = 0
        var written = 0
        while written < outputCapacity {
            var blockFrames = outputCapacity - written
            if glide.isActive {
                blockFrames = min(blockFrames, Self.glideStepFrames, glide.remainingFrames)
                apply(glide.ratio(afterFrames: blockFrames))
            } else {
                apply(glide.target)
            }
            let ratio = appliedRatio

            // Feed only what this block needs: it keeps the backlog (and so the delay) at the
            // filter's look-ahead, and keeps libsoxr's FIFOs from growing.
            let reach = lookaheadFrames / min(ratio, 1)
            let wanted = (Double(blockFrames) / ratio + reach - backlogFrames).rounded(.up)
            let feed = wanted > 0 ? min(available - used, Int(min(wanted, 1_000_000_000))) : 0
            let (inputUsed, outputWritten) = engine.convert(
                input: input + used * channelCount, inputFrames: feed,
                output: output + written * channelCount, outputCapacity: blockFrames)
            used += inputUsed
            written += outputWritten
            backlogFrames += Double(inputUsed) - Double(outputWritten) / ratio
            glide.advance(by: outputWritten)

            if outputWritten < blockFrames {
                if used >= available { break }  // out of input: the caller brings more
                // The engine has failed (it takes nothing, or wants more than any filter needs).
                if outputWritten == 0 && (feed > 0 ? inputUsed == 0 : lookaheadFrames >= Self.maximumLookaheadFrames) {
                    break
                }
                // The filter needed more look-ahead than fed: learn it, feed more, go on.
                let shortfall = Double(blockFrames - outputWritten) / ratio + 1
                lookaheadFrames = min(lookaheadFrames + shortfall * min(ratio, 1), Self.maximumLookaheadFrames)
            }
        }
        currentRatio.store(appliedRatio.bitPattern, ordering: .relaxed)
        return (used, written)
    }

    private func drain(output: UnsafeMutablePointer<Float>, outputCapacity: Int) -> (inputUsed: Int, outputWritten: Int) {
        endOfInputSeen = true
        let (_, written) = engine.convert(input: nil, inputFrames: 0, output: output, outputCapacity: outputCapacity)
        backlogFrames = max(0, backlogFrames - Double(written) / appliedRatio)
        return (0, written)
    }

    private func apply(_ ratio: Double) {
        guard ratio != appliedRatio else { return }
        engine.jump(to: ratio)
        appliedRatio = ratio
    }

    /// Runs every path of `process` once on silence — a constant ratio, a glide from the
    /// smallest ratio (the widest filter reach) back to the real one, and the drain — then
    /// clears, so that nothing the library or the Swift runtime sets up lazily is left for the
    /// first real-time call.
    private func prime() {
        let frames = 1024
        let inputFrames = frames * Int(1 / RateConverterKind.supportedRatios.lowerBound)
        let input = [Float](repeating: 0, count: inputFrames * channelCount)
        var output = [Float](repeating: 0, count: frames * channelCount)
        input.withUnsafeBufferPointer { input in
            output.withUnsafeMutableBufferPointer { output in
                let output = output.baseAddress!
                _ = process(input: input.baseAddress, inputFrames: inputFrames, output: output, outputCapacity: frames)
                let smallest = RateConverterKind.supportedRatios.lowerBound
                apply(smallest)
                glide = RatioGlide(ratio: smallest, length: RateConverterKind.ratioGlideFrames)
                _ = process(input: input.baseAddress, inputFrames: inputFrames, output: output, outputCapacity: frames)
                _ = process(input: nil, inputFrames: 0, output: output, outputCapacity: frames)
            }
        }
        reset()
    }
}

/// A straight-line move from one ratio to another over a fixed number of output frames.
struct RatioGlide {
    private(set) var start: Double
    private(set) var target: Double
    private(set) var doneFrames: Int
    let length: Int

    /// A glide that is already at `ratio`.
    init(ratio: Double, length: Int) {
        start = ratio
        target = ratio
        self.length = max(1, length)
        doneFrames = self.length
    }

    var isActive: Bool { doneFrames < length }
    var remainingFrames: Int { length - doneFrames }

    mutating func start(from current: Double, to newTarget: Double) {
        start = current
        target = newTarget
        doneFrames = 0
    }

    /// The ratio reached `frames` output frames from now.
    func ratio(afterFrames frames: Int) -> Double {
        let done = min(length, doneFrames + frames)
        if done >= length { return target }
        return start + (target - start) * Double(done) / Double(length)
    }

    mutating func advance(by frames: Int) {
        doneFrames = min(length, doneFrames + frames)
    }
}
