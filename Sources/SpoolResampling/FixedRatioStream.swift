internal import CSoxr
import SpoolCore
import Synchronization

/// A fixed-ratio resampler fed in chunks of one size and drained of all its output at every
/// call, into a buffer of its own: the shape in which libsoxr is real-time safe. It runs
/// libsoxr HQ, or any `ResamplerEngine` that takes all its input and is time-aligned
/// (`init(kind:channelCount:ratio:)`: libswresample at `fast` and `balanced`).
///
/// libsoxr reallocates a FIFO when a write would pass its end while the unread data still sits
/// near its start (`fifo_reserve` in fifo.h), so metered calls of varying sizes keep growing
/// it now and then. With every call the same (one chunk in, all output out) its FIFOs reach
/// their high-water mark within the first calls after output starts to flow (measured with an
/// allocation counter: the last growth by call 20 at ratios 1/2 to 16, by call 160 at 1/16, then
/// none in 20 000 calls), so `init` runs that warm-up on silence and nothing after it allocates
/// (`FixedRatioStreamTests` checks ratios 1/16 to 16).
///
/// The stream is never cleared (`soxr_clear` allocates). It is time-aligned from its first
/// frame on: output frame `k` sounds the stream's input instant `k × inputFramesPerOutput`
/// (libsoxr's linear-phase filters are centred, and the rational ratios it detects, such as
/// 160/147, are exact). So a caller can start over anywhere by choosing which input frame to
/// feed next and how many outputs to drop (`dropBuffered`, `consume`): once `reachFrames` of
/// the new input precede an output frame's instant, nothing of the old input reaches it.
final class FixedRatioStream {
    let channelCount: Int
    /// Output frames per input frame.
    let ratio: Double
    /// Stream input frames per output frame: the spacing of the output instants.
    let inputFramesPerOutput: Double
    /// Input frames per `feed` call.
    let chunkFrames: Int
    /// Input frames before an output instant that still reach it: the HQ filter's half length
    /// at the input rate, measured with an impulse (101 frames up to 2×, 182 at 1/2, 584 at 1/6,
    /// 1664 at 1/16) and rounded up.
    let reachFrames: Int
    /// The most input frames fed beyond an output instant before that output came out (whole
    /// chunks), seen during warm-up: the look-ahead a caller must have ready. With the default
    /// DFT blocks it is about 25 ms of input from 32 to 192 kHz (1160 frames at 44.1 → 48 kHz),
    /// 45 ms at 16 to 24 kHz and 130 to 180 ms at 8 to 11 kHz; `smallBlocks` makes it about half.
    private(set) var lookaheadFrames = 0
    /// Input frames fed since init, warm-up included.
    private(set) var framesFed = 0
    /// Input frames fed by the warm-up.
    private var warmUpFrames = 0
    /// Whether anything but the warm-up was fed. A stream started over then plays what a new
    /// one would only to within rounding: libsoxr's DFT blocks round each output by where the
    /// block boundaries fall and by what else the block holds (a difference near 2⁻²² of full
    /// scale), and output instants far from the first carry fewer bits of fraction.
    var wasFed: Bool { framesFed != warmUpFrames }
    /// Index (since init) of the first output frame still in the buffer.
    private(set) var firstBufferedIndex = 0
    /// Output frames produced and not yet delivered or dropped.
    private(set) var bufferedFrames = 0

    private let engine: any ResamplerEngine
    private let buffer: UnsafeMutablePointer<Float>
    private let bufferFrames: Int
    private var bufferStart = 0

    /// Makes the resampler and warms it up on silence.
    /// - Parameters:
    ///   - channelCount: Interleaved channels, 1…8.
    ///   - ratio: Output frames per input frame, within `RateConverterKind.supportedRatios`.
    ///   - smallBlocks: Shorter DFT blocks, for half the look-ahead (see `SoxrEngine`).
    /// - Throws: `AudioError.Code.invalidParameter` for a channel count or ratio out of range;
    ///   `.libraryFailure` when libsoxr refuses the configuration.
    convenience init(channelCount: Int, ratio: Double, smallBlocks: Bool = false) throws {
        try checkRateConverterParameters(channelCount: channelCount, ratio: ratio)
        try self.init(engine: SoxrEngine(variableRatio: false, channelCount: channelCount, ratio: ratio, smallBlocks: smallBlocks),
                      channelCount: channelCount, ratio: ratio, reachFrames: Int((128 / min(ratio, 1)).rounded(.up)) + 8)
    }

    /// A stream over another fixed-ratio, time-aligned engine that takes all the input it is
    /// given and never allocates once warmed up (libswresample's, see `SwresampleEngine`).
    /// - Parameter kind: A libswresample kind.
    /// - Throws: `.invalidParameter` for another kind, a channel count or ratio out of range;
    ///   the library's error.
    convenience init(kind: RateConverterKind, channelCount: Int, ratio: Double) throws {
        try checkRateConverterParameters(channelCount: channelCount, ratio: ratio)
        guard let settings = kind.swresampleSettings else {
            throw AudioError(.invalidParameter, "a fixed-ratio stream takes libsoxr HQ or a libswresample kind, not \(kind)")
        }
        let engine = try SwresampleEngine(settings: settings, channelCount: channelCount, ratio: ratio)
        // Half the filter's span at the input rate, which widens by 1 / ratio below 1.
        let reach = Int((engine.lookaheadFrames / min(ratio, 1)).rounded(.up)) + 8
        try self.init(engine: engine, channelCount: channelCount, ratio: ratio, reachFrames: reach,
                      outputFramesPerCall: 1024)
    }

    private init(engine: any ResamplerEngine, channelCount: Int, ratio: Double, reachFrames: Int,
                 outputFramesPerCall: Int = 256) throws {
        self.channelCount = channelCount
        self.ratio = ratio
        inputFramesPerOutput = 1 / ratio
        // About `outputFramesPerCall` output frames per call: smaller chunks cost call overhead,
        // larger ones add look-ahead. libsoxr takes 256 (its DFT blocks read far ahead anyway);
        // libswresample, whose filters read only a few frames ahead, 1024: its per-call cost at
        // 256 made 16 converted voices mix about a quarter slower (`spool bench mix`).
        chunkFrames = min(8192, max(64, Int((Double(outputFramesPerCall) / ratio).rounded(.up))))
        self.reachFrames = reachFrames
        self.engine = engine

        // Warm-up: silence through the real call shape, until output has flowed for 64 calls
        // (libsoxr's last growth comes with its first outputs), into a generous buffer.
        let warmUpCapacity = Int(Double(chunkFrames) * ratio) * 4 + 65_536
        let input = UnsafeMutablePointer<Float>.allocate(capacity: chunkFrames * channelCount)
        input.initialize(repeating: 0, count: chunkFrames * channelCount)
        let output = UnsafeMutablePointer<Float>.allocate(capacity: warmUpCapacity * channelCount)
        defer {
            input.deallocate()
            output.deallocate()
        }
        var produced = 0, largestBurst = 0, callsWithOutput = 0, calls = 0
        while callsWithOutput < 64 && calls < 4096 {
            let (_, written) = engine.convert(
                input: input, inputFrames: chunkFrames, output: output, outputCapacity: warmUpCapacity)
            calls += 1
            framesFed += chunkFrames
            if written > 0 {
                callsWithOutput += 1
                lookaheadFrames = max(lookaheadFrames, Int((Double(framesFed) - Double(produced) / ratio).rounded(.up)))
            }
            produced += written
            largestBurst = max(largestBurst, written)
        }
        firstBufferedIndex = produced
        warmUpFrames = framesFed
        // Room for the largest burst twice over and a long period: every call is drained whole.
        bufferFrames = 2 * largestBurst + Int(Double(chunkFrames) * ratio) + 8192
        buffer = .allocate(capacity: bufferFrames * channelCount)
    }

    deinit { buffer.deallocate() }

    /// Index (since init) one past the last output frame produced.
    var producedEnd: Int { firstBufferedIndex + bufferedFrames }

    /// The buffered output, starting with frame `firstBufferedIndex`.
    var bufferedOutput: UnsafePointer<Float> { UnsafePointer(buffer + bufferStart * channelCount) }

    /// Converts one chunk of `chunkFrames` frames and keeps all the output it gives.
    /// Real-time safe after init.
    func feed(_ chunk: UnsafePointer<Float>) {
        if bufferStart > 0 && bufferStart + bufferedFrames > bufferFrames / 2 {
            // Keep the free space at the end, where libsoxr writes.
            buffer.update(from: buffer + bufferStart * channelCount, count: bufferedFrames * channelCount)
            bufferStart = 0
        }
        let end = bufferStart + bufferedFrames
        let (_, written) = engine.convert(
            input: chunk, inputFrames: chunkFrames, output: buffer + end * channelCount,
            outputCapacity: bufferFrames - end)
        framesFed += chunkFrames
        bufferedFrames += written
    }

    /// Hands the first `frames` buffered output frames over (the caller has read them from
    /// `bufferedOutput`) or drops them.
    func consume(_ frames: Int) {
        let n = min(frames, bufferedFrames)
        bufferStart += n
        bufferedFrames -= n
        firstBufferedIndex += n
        if bufferedFrames == 0 { bufferStart = 0 }
    }

    /// Drops everything buffered: output of input that is no longer wanted.
    func dropBuffered() { consume(bufferedFrames) }
}
