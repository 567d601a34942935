internal import CSoxr
import SpoolCore
import Synchronization

/// One libsoxr resampler (`soxr_t`), used through `soxr_process` with interleaved Float32.
///
/// Two configurations: the 20-bit high-quality resampler (`SOXR_HQ`), which cannot change its
/// ratio, and the variable-rate one (`SOXR_HQ` with `SOXR_VR`), made for the largest I/O ratio
/// it will see (libsoxr sizes its octave stages from the rates given to `soxr_create`) and then
/// set to the real one.
///
/// libsoxr grows its FIFOs on demand and `soxr_clear` frees and rebuilds everything, so a
/// priming run cannot be kept across `clear`: fed through the metered `RateConverter`, the first
/// calls after init or `reset` may allocate. `FixedRatioStream` feeds it in the one shape that settles.
final class SoxrEngine: ResamplerEngine {
    private let handle: soxr_t
    private let variableRatio: Bool

    /// libsoxr's variable-rate code fills static tables the first time a VR resampler is made,
    /// without a lock: makes and clears are serialised so that two threads never race there.
    private static let setupLock = Locked(())

    /// libsoxr's error for a failed call: a C string or nil.
    private static func check(_ error: soxr_error_t?, _ context: String) throws {
        guard let error else { return }
        throw AudioError(
            .libraryFailure, "libsoxr could not \(context)",
            underlying: LibraryStatus(library: "libsoxr", code: -1, text: String(cString: error)))
    }

    /// Makes the resampler.
    /// - Parameters:
    ///   - variableRatio: `SOXR_VR` when true, the fixed-ratio HQ resampler when false.
    ///   - channelCount: Interleaved channels.
    ///   - ratio: Output frames per input frame (libsoxr's `io_ratio` is its inverse).
    ///   - smallBlocks: DFT blocks of at most 512 points (`log2_min_dft_size` and
    ///     `log2_large_dft_size` 9, against 10 and 17 by default): about half the look-ahead,
    ///     at about 15 % more time.
    /// - Throws: `AudioError.Code.libraryFailure` when libsoxr refuses the configuration.
    init(variableRatio: Bool, channelCount: Int, ratio: Double, smallBlocks: Bool = false) throws {
        // VR: input rate / output rate fixes the largest io_ratio (input/output) it will take.
        let inputRate = variableRatio ? 1 / RateConverterKind.supportedRatios.lowerBound : 1
        let outputRate = variableRatio ? 1 : ratio
        // The handle and the error string cross the lock's closure as addresses: both are
        // plain pointers that nothing else holds yet.
        let (handleAddress, errorAddress) = Self.setupLock.withLock { _ -> (UInt, UInt) in
            var quality = soxr_quality_spec(UInt(SOXR_20_BITQ), variableRatio ? UInt(SOXR_VR) : 0)
            // One thread (libsoxr's default), whatever OMP_NUM_THREADS says.
            var runtime = soxr_runtime_spec(1)
            if smallBlocks {
                runtime.log2_min_dft_size = 9
                runtime.log2_large_dft_size = 9
            }
            var error: soxr_error_t? = nil
            let made = soxr_create(inputRate, outputRate, UInt32(channelCount), &error, nil, &quality, &runtime)
            return (UInt(bitPattern: made), UInt(bitPattern: error))
        }
        let error = soxr_error_t(bitPattern: errorAddress)
        guard let made = soxr_t(bitPattern: handleAddress) else {
            try Self.check(error, "make a resampler for \(channelCount) channels at ratio \(ratio)")
            throw AudioError(.libraryFailure, "libsoxr could not make a resampler")
        }
        handle = made
        self.variableRatio = variableRatio
        // deinit deletes the handle if this throws.
        if variableRatio { try Self.check(soxr_set_io_ratio(handle, 1 / ratio, 0), "set the ratio \(ratio)") }
    }

    deinit { soxr_delete(handle) }

    func convert(
        input: UnsafePointer<Float>?, inputFrames: Int, output: UnsafeMutablePointer<Float>,
        outputCapacity: Int
    ) -> (inputUsed: Int, outputWritten: Int) {
        var written = 0
        // No idone pointer: libsoxr then takes all the input given (with one, it takes up to
        // olen × io_ratio, and in VR mode io_ratio stays the largest one, 16).
        let error = soxr_process(handle, input, input == nil ? 0 : inputFrames, nil, output, outputCapacity, &written)
        guard error == nil else { return (0, 0) }
        return (input == nil ? 0 : inputFrames, written)
    }

    func jump(to ratio: Double) {
        // A slew length of 0 changes the VR step at once; the HQ resampler keeps its ratio.
        guard variableRatio else { return }
        _ = soxr_set_io_ratio(handle, 1 / ratio, 0)
    }

    func clear(ratio: Double) {
        Self.setupLock.withLock { _ in _ = soxr_clear(handle) }
        if variableRatio { _ = soxr_set_io_ratio(handle, 1 / ratio, 0) }
    }

    var clearKeepsBuffers: Bool { false }

    var lookaheadFrames: Double {
        // A first guess; the HQ resampler works in DFT blocks and the converter learns their size.
        variableRatio ? 48 : 256
    }

    func alignmentFrames(ratio: Double) -> Double {
        // The VR resampler's half-band IIR stage delays low frequencies by about 1.6 output
        // frames (measured at 20 Hz for ratios 1/12…12); the HQ resampler is time-aligned.
        variableRatio ? 1.6 : 0
    }
}
