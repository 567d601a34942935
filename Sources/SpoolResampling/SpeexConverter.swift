internal import CSpeexDSP
import SpoolCore

/// A libspeexdsp resampler status code (`RESAMPLER_ERR_…`), kept as the cause of an `AudioError`.
enum SpeexStatus {
    /// Turns a status other than `RESAMPLER_ERR_SUCCESS` into an `AudioError`.
    /// - Parameter context: What was being done, for the message.
    static func check(_ status: CInt, _ context: String) throws {
        guard status != CInt(RESAMPLER_ERR_SUCCESS) else { return }
        throw AudioError(
            .libraryFailure, "libspeexdsp could not \(context)",
            underlying: LibraryStatus(
                library: "libspeexdsp", code: status, text: String(cString: speex_resampler_strerror(status))))
    }
}

/// One libspeexdsp resampler (`SpeexResamplerState`), PulseAudio's default converter
/// (`speex-float-N`), used through `speex_resampler_process_interleaved_float`.
///
/// Fixed ratio only: `speex_resampler_set_rate_frac` rebuilds the whole filter table on every
/// change (measured here: about 2 µs at quality 0, 17 at 3, 50 at 5, 100 at 8 and 380 µs at
/// quality 10 per change, against about 90 µs to convert a 512-frame stereo 44.1 → 48 kHz
/// period at quality 5; the converter's glide changes the ratio 16 times in 512 frames), and it
/// reallocates the table when a lower ratio lengthens the filter, so it is neither cheap nor
/// real-time safe for a gliding ratio.
///
/// Time alignment: the filter starts on `filt_len − 1` zeros, which delays the output by half
/// the filter; `speex_resampler_skip_zeros` moves the first output onto the first input frame,
/// so output frame `k` sounds input instant `k / ratio`. The library has no flush: at the end
/// of input it is fed zeros (a null input pointer) until it has produced every output frame
/// whose instant lies before the end, ⌈input × ratio⌉ frames in all.
///
/// Nothing allocates after init: `speex_resampler_process_*` works in buffers sized by
/// `speex_resampler_init_frac`, and `speex_resampler_reset_mem` only zeroes them.
final class SpeexEngine: ResamplerEngine {
    private let state: OpaquePointer
    private let fraction: RateFraction
    private let channelCount: Int
    /// Half the filter, in input frames (`speex_resampler_get_input_latency`).
    private let halfFilterFrames: Int
    /// Input frames consumed and output frames produced since the last clear: the drain
    /// owes `fraction.outputFrames(forInputFrames: framesIn) − framesOut` more.
    private var framesIn = 0
    private var framesOut = 0

    /// Makes the resampler.
    /// - Parameters:
    ///   - quality: libspeexdsp's quality, 0 (fastest) … 10 (best).
    ///   - channelCount: Interleaved channels.
    ///   - ratio: Output frames per input frame.
    /// - Throws: `AudioError.Code.invalidParameter` when `quality` is outside 0…10 or `ratio`
    ///   has no fraction libspeexdsp can take; `.libraryFailure` when libspeexdsp refuses the
    ///   configuration.
    init(quality: Int, channelCount: Int, ratio: Double) throws {
        guard (Int(SPEEX_RESAMPLER_QUALITY_MIN)...Int(SPEEX_RESAMPLER_QUALITY_MAX)).contains(quality) else {
            throw AudioError(
                .invalidParameter,
                "libspeexdsp quality \(quality) is outside \(SPEEX_RESAMPLER_QUALITY_MIN)...\(SPEEX_RESAMPLER_QUALITY_MAX)")
        }
        guard let fraction = RateFraction(approximating: ratio),
              let inputStep = UInt32(exactly: fraction.input), let outputStep = UInt32(exactly: fraction.output),
              let channels = UInt32(exactly: channelCount)
        else {
            throw AudioError(.invalidParameter, "libspeexdsp cannot take the ratio \(ratio) as a fraction")
        }
        var error: CInt = 0
        // ratio_num / ratio_den is input over output; the two rates are only reported back.
        guard let state = speex_resampler_init_frac(
            channels, inputStep, outputStep, inputStep, outputStep, CInt(quality), &error)
        else {
            try SpeexStatus.check(
                error == 0 ? CInt(RESAMPLER_ERR_ALLOC_FAILED) : error,
                "make a quality \(quality) resampler for \(channelCount) channels at \(fraction)")
            throw AudioError(.libraryFailure, "libspeexdsp could not make a resampler")
        }
        self.state = state
        self.fraction = fraction
        self.channelCount = channelCount
        halfFilterFrames = Int(max(0, speex_resampler_get_input_latency(state)))
        // deinit destroys the state if this throws.
        try SpeexStatus.check(speex_resampler_skip_zeros(state), "skip the filter's leading zeros")
    }

    deinit { speex_resampler_destroy(state) }

    func convert(
        input: UnsafePointer<Float>?, inputFrames: Int, output: UnsafeMutablePointer<Float>,
        outputCapacity: Int
    ) -> (inputUsed: Int, outputWritten: Int) {
        guard outputCapacity > 0 else { return (0, 0) }
        if let input {
            var inputLength = UInt32(clamping: max(0, inputFrames))
            var outputLength = UInt32(clamping: outputCapacity)
            let status = speex_resampler_process_interleaved_float(state, input, &inputLength, output, &outputLength)
            guard status == CInt(RESAMPLER_ERR_SUCCESS) else { return (0, 0) }
            // The lengths come back as what was used and made: never more than given.
            let used = min(Int(inputLength), max(0, inputFrames))
            let made = min(Int(outputLength), outputCapacity)
            framesIn += used
            framesOut += made
            return (used, made)
        }
        // End of input: zeros through the filter until the last input instant has been sounded.
        let owed = fraction.outputFrames(forInputFrames: framesIn) - framesOut
        guard owed > 0 else { return (0, 0) }
        let wanted = min(owed, outputCapacity)
        let zeros = Double(wanted) / fraction.ratio + Double(2 * halfFilterFrames) + 2
        var inputLength = UInt32(clamping: Int(min(zeros, Double(UInt32.max))))
        var outputLength = UInt32(clamping: wanted)
        let status = speex_resampler_process_interleaved_float(state, nil, &inputLength, output, &outputLength)
        guard status == CInt(RESAMPLER_ERR_SUCCESS) else { return (0, 0) }
        let made = min(Int(outputLength), wanted)
        framesOut += made
        return (0, made)
    }

    func jump(to ratio: Double) {
        // Fixed ratio (see the type's documentation).
    }

    func clear(ratio: Double) {
        // reset_mem zeroes the history and the positions; skip_zeros aligns the output again.
        // Neither can fail on a state that init made.
        _ = speex_resampler_reset_mem(state)
        _ = speex_resampler_skip_zeros(state)
        framesIn = 0
        framesOut = 0
    }

    var clearKeepsBuffers: Bool { true }

    var lookaheadFrames: Double {
        // At ratios below 1 libspeexdsp widens the filter by 1 / ratio, which the converter
        // adds itself: give the width at a ratio of 1, plus the frame interpolation reads.
        Double(halfFilterFrames) * min(fraction.ratio, 1) + 1
    }

    func alignmentFrames(ratio: Double) -> Double { 0 }
}

extension RateConverterKind {
    /// libspeexdsp's quality (0…10) for a libspeexdsp kind, `nil` for the others.
    var speexQuality: Int? {
        switch self {
        case .speexQ0: 0
        case .speexQ1: 1
        case .speexQ3: 3
        case .speexQ5: 5
        case .speexQ8: 8
        case .speexQ10: 10
        default: nil
        }
    }
}
