internal import CSwresample
import SpoolCore

/// A libswresample / libavutil status (a negative `AVERROR` code), kept as the cause of an
/// `AudioError`.
enum SwresampleStatus {
    /// Turns a negative status into an `AudioError`.
    /// - Parameter context: What was being done, for the message.
    static func check(_ status: CInt, _ context: String) throws {
        guard status < 0 else { return }
        throw AudioError(
            .libraryFailure, "libswresample could not \(context)",
            underlying: LibraryStatus(library: "libswresample", code: status, text: text(of: status)))
    }

    /// libavutil's text for a status (`av_strerror`).
    static func text(of status: CInt) -> String {
        var buffer = [CChar](repeating: 0, count: 128)
        guard case .success(let library) = SwresampleLibrary.shared else { return "error \(status)" }
        let found = buffer.withUnsafeMutableBufferPointer { library.errorText(status, $0.baseAddress, $0.count) }
        guard found == 0 else { return "error \(status)" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// The libswresample settings a kind converts with: its own resampler (`resampler` 0, not
/// the libsoxr engine, which Spool measures directly) with these filter options.
struct SwresampleSettings: Equatable {
    /// `filter_size`: taps per phase at a ratio of 1 or more (default 32).
    var filterSize: Int
    /// `phase_shift`: log₂ of the most filter phases kept (default 10). A ratio whose
    /// denominator fits (160/147 for 44.1 → 48 kHz takes 160 phases, 48 → 22.05 kHz 320) is
    /// stepped exactly with `exact_rational` (on by default), and then neither this nor
    /// `linear_interp` (interpolation between phases, on by default) changes the output; a finer
    /// ratio is interpolated between phases.
    var phaseShift: Int = 10
    /// `cutoff`: the passband's end relative to the lower Nyquist frequency; `nil` for
    /// libswresample's default, 0.97, whose transition band reaches past the Nyquist frequency
    /// (measured: a 23 kHz tone comes through 48 → 44.1 kHz 13 to 20 dB down with 32 taps).
    var cutoff: Double? = nil
    /// `kaiser_beta`: the Kaiser window's β (default 9); a larger one trades passband width for
    /// stopband depth.
    var kaiserBeta: Double? = nil
    /// libswresample's defaults: filter 32, phase shift 10, linear interpolation between
    /// phases, a Kaiser window of β 9, cutoff 0.97 of the lower Nyquist frequency.
    static let `default` = SwresampleSettings(filterSize: 32)
}

/// One libswresample context (`SwrContext`) converting interleaved Float32
/// (`AV_SAMPLE_FMT_FLT`) with the same channel layout on both sides.
///
/// Fixed ratio only: the context is made for two whole rates; `swr_set_compensation`, its
/// one way of bending the ratio, adds or drops a number of samples over a distance (clock-drift
/// correction), which is not a ratio that glides.
///
/// Time alignment: measured, output frame `k` sounds input instant `k / ratio` (the filter is
/// centred on its output instant). `swr_convert` with no input flushes, mirroring the last
/// frames, and brings the output to ⌈input × ratio⌉ frames.
///
/// `swr_convert` takes all the input it is given and keeps what it cannot yet use in buffers
/// of its own, which grow (doubling) when a call brings more than they hold. So init, and
/// `clear` after its `swr_init` (which frees and rebuilds them), runs silence through the
/// context in one call larger than any the converter makes for periods of up to
/// `warmUpPeriodFrames` output frames, and drops the output it owes for that silence
/// (`swr_drop_output`): after that nothing allocates. The silence is a whole number of the
/// fraction's input steps, so the first real output frame sounds the first real input frame
/// exactly (behind silence rather than libswresample's mirrored start).
final class SwresampleEngine: ResamplerEngine {
    private let library: SwresampleLibrary
    private let context: OpaquePointer
    private let fraction: RateFraction
    private let settings: SwresampleSettings
    private let channelCount: Int
    /// Set when re-initialising after a clear failed: the engine then converts nothing.
    private var broken = false

    /// Makes the context and initialises it.
    /// - Parameters:
    ///   - settings: The filter options.
    ///   - channelCount: Interleaved channels.
    ///   - ratio: Output frames per input frame.
    /// - Throws: `AudioError.Code.invalidParameter` when `ratio` has no fraction
    ///   libswresample can take; `.libraryFailure` when libswresample refuses the
    ///   configuration or an option.
    init(settings: SwresampleSettings, channelCount: Int, ratio: Double) throws {
        guard let fraction = RateFraction(approximating: ratio),
              let inputRate = CInt(exactly: fraction.input), let outputRate = CInt(exactly: fraction.output),
              let channels = CInt(exactly: channelCount)
        else {
            throw AudioError(.invalidParameter, "libswresample cannot take the ratio \(ratio) as two sample rates")
        }
        let library = try SwresampleLibrary.shared.get()
        // The same default layout on both sides: nothing is remixed.
        var inputLayout = AVChannelLayout(), outputLayout = AVChannelLayout()
        library.defaultLayout(&inputLayout, channels)
        library.defaultLayout(&outputLayout, channels)
        defer {
            library.releaseLayout(&inputLayout)
            library.releaseLayout(&outputLayout)
        }
        var made: OpaquePointer? = nil
        let status = library.allocateWithOptions(
            &made, &outputLayout, AV_SAMPLE_FMT_FLT, outputRate, &inputLayout, AV_SAMPLE_FMT_FLT, inputRate, 0, nil)
        guard status >= 0, let made else {
            // swr_alloc_set_opts2 frees the context it made when it fails.
            try SwresampleStatus.check(
                status < 0 ? status : -1,
                "make a resampler for \(channelCount) channels from \(inputRate) to \(outputRate) Hz")
            throw AudioError(.libraryFailure, "libswresample could not make a resampler")
        }
        self.library = library
        context = made
        self.fraction = fraction
        self.settings = settings
        self.channelCount = channelCount
        // From here on deinit frees the context if this throws.
        try set("resampler", 0)  // SWR_ENGINE_SWR: its own polyphase filter
        try set("filter_size", settings.filterSize)
        try set("phase_shift", settings.phaseShift)
        if let cutoff = settings.cutoff { try set("cutoff", cutoff) }
        if let beta = settings.kaiserBeta { try set("kaiser_beta", beta) }
        try SwresampleStatus.check(
            library.initialize(context),
            "start a resampler for \(channelCount) channels from \(inputRate) to \(outputRate) Hz "
                + "(filter_size \(settings.filterSize), phase_shift \(settings.phaseShift))")
        try SwresampleStatus.check(warmUp(channelCount: channelCount), "run silence through a new resampler")
    }

    /// The longest output period (frames per `process` call) the warm-up sizes the buffers for.
    static let warmUpPeriodFrames = 4096

    /// Runs silence through the context and drops the output owed for it (see the type's
    /// documentation): one large call, drained, then 16 calls of a 512-frame period (the first
    /// of the real shape grows a buffer once more, measured), then up to a whole number of the
    /// fraction's input steps. Ratios whose fraction has an input step above 8192 frames (none
    /// of the common rates: 44.1 → 48 kHz steps by 147) get no warm-up: their first calls may
    /// allocate.
    /// - Returns: libswresample's status: negative when a call failed.
    private func warmUp(channelCount: Int) -> CInt {
        guard fraction.input <= 8192 else { return 0 }
        let ratio = fraction.ratio
        // Beyond the converter's largest feed: a long period's input plus the filter.
        let large = Int((Double(Self.warmUpPeriodFrames) / ratio + Double(settings.filterSize) / (settings.cutoff ?? 0.97) / min(ratio, 1) * 2)
            .rounded(.up)) + 64
        let period = 512, periodInput = Int((Double(period) / ratio).rounded(.up))
        var feeds = [large] + [Int](repeating: periodInput, count: 16)
        let fed = feeds.reduce(0, +)
        feeds.append((fraction.input - fed % fraction.input) % fraction.input)
        let owed = (fed + feeds[feeds.count - 1]) / fraction.input * fraction.output
        let silence = [Float](repeating: 0, count: large * channelCount)
        var sink = [Float](repeating: 0, count: Self.warmUpPeriodFrames * channelCount)
        var produced = 0
        var status = silence.withUnsafeBufferPointer { silence in
            sink.withUnsafeMutableBufferPointer { sink in
                var outputPlane: UnsafeMutablePointer<UInt8>? = UnsafeMutableRawPointer(sink.baseAddress!)
                    .assumingMemoryBound(to: UInt8.self)
                for (index, feed) in feeds.enumerated() {
                    var inputPlane: UnsafePointer<UInt8>? = UnsafeRawPointer(silence.baseAddress!)
                        .assumingMemoryBound(to: UInt8.self)
                    let room = index == 0 ? Self.warmUpPeriodFrames : period
                    var frames = CInt(clamping: feed)
                    repeat {
                        // Never past what the silence owes: the rest would sound real input.
                        let made = library.convert(context, &outputPlane, CInt(clamping: min(room, owed - produced)), &inputPlane, frames)
                        if made < 0 { return made }
                        produced += Int(made)
                        frames = 0
                        if made == 0 || index > 0 { break }
                    } while produced < owed
                }
                return 0
            }
        }
        if status >= 0 && owed > produced { status = library.dropOutput(context, CInt(clamping: owed - produced)) }
        return min(status, 0)
    }

    private func set(_ option: String, _ value: Int) throws {
        try SwresampleStatus.check(
            library.setInteger(UnsafeMutableRawPointer(context), option, Int64(value), 0), "set \(option) to \(value)")
    }

    private func set(_ option: String, _ value: Double) throws {
        try SwresampleStatus.check(
            library.setDouble(UnsafeMutableRawPointer(context), option, value, 0), "set \(option) to \(value)")
    }

    deinit {
        var context: OpaquePointer? = context
        library.free(&context)
    }

    func convert(
        input: UnsafePointer<Float>?, inputFrames: Int, output: UnsafeMutablePointer<Float>,
        outputCapacity: Int
    ) -> (inputUsed: Int, outputWritten: Int) {
        guard outputCapacity > 0, !broken else { return (0, 0) }
        // Packed Float32: one plane, passed as bytes (libswresample reads and writes floats).
        var outputPlane: UnsafeMutablePointer<UInt8>? =
            UnsafeMutableRawPointer(output).assumingMemoryBound(to: UInt8.self)
        let capacity = CInt(clamping: outputCapacity)
        guard let input else {
            // A null input flushes: the filter's tail, then 0 once drained.
            let made = library.convert(context, &outputPlane, capacity, nil, 0)
            return (0, made > 0 ? min(Int(made), outputCapacity) : 0)
        }
        let frames = CInt(clamping: max(0, inputFrames))
        var inputPlane: UnsafePointer<UInt8>? = UnsafeRawPointer(input).assumingMemoryBound(to: UInt8.self)
        let made = library.convert(context, &outputPlane, capacity, &inputPlane, frames)
        guard made >= 0 else { return (0, 0) }
        return (Int(frames), min(Int(made), outputCapacity))
    }

    func jump(to ratio: Double) {
        // Fixed ratio (see the type's documentation).
    }

    func clear(ratio: Double) {
        // swr_init drops every buffered sample and the flushed state, keeping the options.
        broken = library.initialize(context) < 0 || warmUp(channelCount: channelCount) < 0
    }

    var clearKeepsBuffers: Bool { false }

    var lookaheadFrames: Double {
        // The filter spans filter_size / cutoff input frames at a ratio of 1 or more (below 1
        // it widens by 1 / ratio, which the converter adds), centred: half of it lies ahead.
        Double(settings.filterSize) / 2 / (settings.cutoff ?? 0.97) + 2
    }

    func alignmentFrames(ratio: Double) -> Double { 0 }
}

extension RateConverterKind {
    /// The libswresample settings for a libswresample kind, `nil` for the others.
    var swresampleSettings: SwresampleSettings? {
        switch self {
        case .swrFilter8: SwresampleSettings(filterSize: 8)
        case .swrFilter16: SwresampleSettings(filterSize: 16)
        case .swrDefault: .default
        case .swrFilter64: SwresampleSettings(filterSize: 64)
        case .swrFilter32Cutoff85: SwresampleSettings(filterSize: 32, cutoff: 0.85)
        case .swrFilter64Cutoff91: SwresampleSettings(filterSize: 64, cutoff: 0.91, kaiserBeta: 12)
        default: nil
        }
    }
}
