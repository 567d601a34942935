internal import CSampleRate
import SpoolCore

/// A libsamplerate status code (`SRC_ERR_…`), kept as the cause of an `AudioError`.
struct SampleRateStatus {
    let rawValue: CInt

    /// Turns a non-zero status into an `AudioError`.
    /// - Parameter context: What was being done, for the message.
    static func check(_ status: CInt, _ context: String) throws {
        guard status != 0 else { return }
        throw AudioError(
            .libraryFailure, "libsamplerate could not \(context)",
            underlying: LibraryStatus(library: "libsamplerate", code: status, text: String(cString: src_strerror(status))))
    }
}

/// One libsamplerate converter (`SRC_STATE`), used through the full API (`src_process`).
///
/// libsamplerate allocates its whole buffer in `src_new`, sized for its largest ratio (256), and
/// `src_reset` only zeroes it, so nothing allocates after init. Its output is time-aligned: the
/// sinc filters start on zeros in front of the first input frame.
final class SampleRateEngine: ResamplerEngine {
    private let state: OpaquePointer
    private let kind: RateConverterKind
    private var ratio: Double
    /// A non-null input pointer for draining: src_process ignores end_of_input when data_in is
    /// NULL, and the filter's tail would be lost.
    private let drainInput: UnsafeMutablePointer<Float>

    /// Makes the converter.
    /// - Throws: `AudioError.Code.libraryFailure` when `src_new` fails.
    init(kind: RateConverterKind, channelCount: Int, ratio: Double) throws {
        let converterType: Int
        switch kind {
        case .sincBest: converterType = Int(SRC_SINC_BEST_QUALITY)
        case .sincFastest: converterType = Int(SRC_SINC_FASTEST)
        case .linear: converterType = Int(SRC_LINEAR)
        default: converterType = Int(SRC_SINC_MEDIUM_QUALITY)
        }
        var error: CInt = 0
        guard let state = src_new(CInt(converterType), CInt(channelCount), &error) else {
            try SampleRateStatus.check(error == 0 ? -1 : error, "make a \(kind) converter")
            throw AudioError(.libraryFailure, "libsamplerate could not make a \(kind) converter")
        }
        self.state = state
        drainInput = .allocate(capacity: channelCount)
        drainInput.initialize(repeating: 0, count: channelCount)
        self.kind = kind
        self.ratio = ratio
        // deinit frees the state and drainInput if this throws.
        try SampleRateStatus.check(src_set_ratio(state, ratio), "set the ratio \(ratio)")
    }

    deinit {
        src_delete(state)
        drainInput.deallocate()
    }

    func convert(
        input: UnsafePointer<Float>?, inputFrames: Int, output: UnsafeMutablePointer<Float>,
        outputCapacity: Int
    ) -> (inputUsed: Int, outputWritten: Int) {
        // src_ratio equals the ratio set with src_set_ratio, so libsamplerate applies no ramp of
        // its own: the converter glides in constant-ratio steps instead.
        var data = SRC_DATA(
            data_in: input ?? UnsafePointer(drainInput), data_out: output, input_frames: input == nil ? 0 : inputFrames,
            output_frames: outputCapacity, input_frames_used: 0, output_frames_gen: 0,
            end_of_input: input == nil ? 1 : 0, src_ratio: ratio)
        guard src_process(state, &data) == 0 else { return (0, 0) }
        return (data.input_frames_used, data.output_frames_gen)
    }

    func jump(to ratio: Double) {
        // src_set_ratio makes the change immediate (it sets the ratio the next call starts from).
        if src_set_ratio(state, ratio) == 0 { self.ratio = ratio }
    }

    func clear(ratio: Double) {
        src_reset(state)
        jump(to: ratio)
    }

    var clearKeepsBuffers: Bool { true }

    var lookaheadFrames: Double {
        // Half the filter length in input frames (coefficient half-length / index increment in
        // src_sinc.c), plus the frame the interpolation reads beyond it.
        switch kind {
        case .sincBest: 145
        case .sincFastest: 22
        case .linear: 2
        default: 48
        }
    }

    func alignmentFrames(ratio: Double) -> Double {
        // The linear interpolator starts from a zero "previous" frame: its output trails the
        // input by one input frame. The sinc filters are centred on the first input frame.
        kind == .linear ? ratio : 0
    }
}
