import SpoolCore
#if canImport(Glibc)
import Glibc
#endif

/// Spool's own variable-ratio resampler: a Kaiser-windowed sinc read from a table with
/// linear interpolation between its points, stretched by `1 / ratio` below a ratio of 1 so that
/// its cutoff follows the output's Nyquist frequency (the method of libsamplerate's sinc
/// converters, whose timing it keeps exactly).
///
/// A ratio change costs nothing (a step and a stretch factor), so a gliding varispeed rate
/// costs what a fixed one does. At a ratio of 1 or more every tap of an output frame falls on
/// the same point between two table entries, so the taps' coefficients are two contiguous
/// table rows blended, and the products vectorise; below 1 each tap is looked up on its own.
///
/// Time alignment as libsamplerate: the filter starts on zeros in front of the first input
/// frame, output frame `k` sounds the input instant `t(k)`, with `t(0) = 0` and each frame
/// stepping `t` by `1 / ratio` in double precision. At the end of input the filter reads zeros
/// past the last frame, and the drain gives every output frame whose instant lies before it.
///
/// Nothing allocates after init: the input window is a fixed buffer sized for the widest
/// filter (at the smallest supported ratio), and `clear` only zeroes it.
final class WindowedSincEngine: ResamplerEngine {
    /// A filter: taps at a ratio of 1 or more, cutoff and window.
    struct Design: Hashable, Sendable {
        /// Input frames on each side of the output instant the filter reads, at a ratio of 1 or
        /// more: a multiple of 4 (the vector loops take 8 taps at once).
        let halfTaps: Int
        /// The -6 dB point, as a fraction of the lower Nyquist frequency.
        let cutoff: Double
        /// The Kaiser window's β: about (stopband attenuation in dB − 8.7) / 9.07.
        let beta: Double
        /// Table points per input frame.
        let pointsPerFrame: Int
    }

    /// The tables of one design, shared by every engine that uses it.
    final class Table: @unchecked Sendable {
        // Sendable: written once in init, read only afterwards.
        let design: Design
        /// The filter at `x = i / pointsPerFrame − halfTaps − margin` input frames from the
        /// output instant, zero beyond ±halfTaps: `margin` points of zeros at each end, so
        /// that a stretched filter's outermost taps read zeros without a bounds test.
        let flat: UnsafeMutableBufferPointer<Float>
        let margin: Int
        /// Row `p` holds the coefficients of the `2 × halfTaps` taps for an output instant
        /// `1 − p / pointsPerFrame` frames past the first tap's frame minus `halfTaps − 1`, each
        /// repeated `channels` times (1 or 2): a blend of rows `p` and `p + 1` is a frame's
        /// coefficients, in the order its interleaved input samples are read.
        let monoRows: UnsafeMutableBufferPointer<Float>
        let stereoRows: UnsafeMutableBufferPointer<Float>
        /// `flat` as (value, slope to the next point) pairs: one load per tap for the stretched
        /// filter.
        let pairs: UnsafeMutableBufferPointer<SIMD2<Float>>

        init(_ design: Design) {
            self.design = design
            let points = design.pointsPerFrame, half = design.halfTaps
            margin = points + 2
            let span = 2 * half * points
            flat = .allocate(capacity: span + 2 * margin + 2)
            flat.initialize(repeating: 0)
            let besselBeta = Self.besselI0(design.beta)
            var sum = 0.0
            let values = flat.baseAddress! + margin
            // The filter is even: each point from the left end to the middle, mirrored.
            for i in 0...(span / 2) {
                let x = Double(i) / Double(points) - Double(half)
                let edge = x / Double(half)
                guard abs(edge) < 1 else { continue }
                let window = Self.besselI0(design.beta * (1 - edge * edge).squareRoot()) / besselBeta
                let y = design.cutoff * x
                let sinc = y == 0 ? 1 : sin(Double.pi * y) / (Double.pi * y)
                let value = design.cutoff * sinc * window
                values[i] = Float(value)
                values[span - i] = Float(value)
                sum += i == span / 2 ? value : 2 * value
            }
            // The taps of one output frame sum to the table's points summed over one frame.
            let gain = Float(Double(points) / sum)
            let all = flat.baseAddress!
            for i in 0..<flat.count { all[i] *= gain }
            pairs = .allocate(capacity: flat.count - 1)
            let pair = pairs.baseAddress!
            for i in 0..<pairs.count { pair[i] = SIMD2(all[i], all[i + 1] - all[i]) }

            let taps = 2 * half
            let rows = points + 2
            monoRows = .allocate(capacity: rows * taps)
            stereoRows = .allocate(capacity: rows * taps * 2)
            let mono = monoRows.baseAddress!, stereo = stereoRows.baseAddress!
            for row in 0..<rows {
                for tap in 0..<taps {
                    let value = values[tap * points + row]
                    mono[row * taps + tap] = value
                    stereo[(row * taps + tap) * 2] = value
                    stereo[(row * taps + tap) * 2 + 1] = value
                }
            }
        }

        deinit {
            flat.deallocate()
            pairs.deallocate()
            monoRows.deallocate()
            stereoRows.deallocate()
        }

        /// The modified Bessel function of the first kind, order 0, by its series.
        static func besselI0(_ x: Double) -> Double {
            var sum = 1.0, term = 1.0, k = 1.0
            let quarter = x * x / 4
            while term > sum * 1e-12 {  // far below a Float's precision
                term *= quarter / (k * k)
                sum += term
                k += 1
            }
            return sum
        }
    }

    private let table: Table
    private let channelCount: Int
    private let halfTaps: Int
    /// Input frames a filter stretched for the smallest supported ratio reads on each side.
    private let widestReach: Int
    /// The input window: frames `windowStart ..< windowStart + windowFrames` (input frame
    /// indices since the last clear; negative ones are the zeros in front of the first frame).
    private let window: UnsafeMutablePointer<Float>
    private let capacityFrames: Int
    private var windowStart = 0
    private var windowFrames = 0
    /// The input instant the next output frame sounds.
    private var instant = 0.0
    private var step = 1.0
    private var ratio: Double
    /// Input frames received since the last clear; past `endFrame` they are zeros.
    private var endFrame = Int.max

    /// Makes the resampler.
    /// - Parameters:
    ///   - table: The filter's tables (`WindowedSincEngine.table(for:)`).
    ///   - channelCount: Interleaved channels, 1…8.
    ///   - ratio: Output frames per input frame, within `RateConverterKind.supportedRatios`.
    init(table: Table, channelCount: Int, ratio: Double) {
        self.table = table
        self.channelCount = channelCount
        halfTaps = table.design.halfTaps
        widestReach = Int((Double(halfTaps) / RateConverterKind.supportedRatios.lowerBound).rounded(.up)) + 2
        capacityFrames = 2 * widestReach + 2048
        window = .allocate(capacity: capacityFrames * channelCount)
        window.initialize(repeating: 0, count: capacityFrames * channelCount)
        self.ratio = ratio
        clear(ratio: ratio)
    }

    deinit { window.deallocate() }

    private static let tables = Locked<[Design: Table]>([:])

    /// Every windowed-sinc kind's table made and every code path run once, on the first use
    /// in the process: the tables take milliseconds to make, and unoptimised builds make the
    /// vector types' metadata on first use, which allocates. Neither may fall on a render
    /// thread or on a voice's start (`prepareRateConverters` starts this in the background).
    static let warmedUp: Void = {
        for kind in [RateConverterKind.windowedSinc32, .windowedSinc40, .windowedSinc64] {
            guard let design = kind.windowedSincDesign else { continue }
            let table = table(for: design)
            for channels in [1, 2, 3] {
                let engine = WindowedSincEngine(table: table, channelCount: channels, ratio: 1.5)
                // A few frames down each path (either side of a ratio of 1, and the drain).
                let input = [Float](repeating: 0, count: 128 * channels)
                var output = [Float](repeating: 0, count: 4 * channels)
                input.withUnsafeBufferPointer { input in
                    output.withUnsafeMutableBufferPointer { output in
                        for ratio in [1.5, 0.7] {
                            engine.jump(to: ratio)
                            _ = engine.convert(input: input.baseAddress, inputFrames: 128, output: output.baseAddress!,
                                               outputCapacity: 4)
                        }
                        _ = engine.convert(input: nil, inputFrames: 0, output: output.baseAddress!, outputCapacity: 4)
                    }
                }
            }
        }
    }()

    /// The tables for `design`, made on first use and kept for the process.
    static func table(for design: Design) -> Table {
        tables.withLock { made in
            if let table = made[design] { return table }
            let table = Table(design)
            made[design] = table
            return table
        }
    }

    func jump(to ratio: Double) {
        self.ratio = ratio
        step = 1 / ratio
    }

    func clear(ratio: Double) {
        jump(to: ratio)
        window.update(repeating: 0, count: capacityFrames * channelCount)
        windowStart = -widestReach
        windowFrames = widestReach
        instant = 0
        endFrame = .max
    }

    var clearKeepsBuffers: Bool { true }

    /// Pure Swift over tables made at init: nothing is left to set up on first use.
    var wantsPriming: Bool { false }

    var lookaheadFrames: Double { Double(halfTaps + 2) }

    func alignmentFrames(ratio: Double) -> Double { 0 }

    func convert(
        input: UnsafePointer<Float>?, inputFrames: Int, output: UnsafeMutablePointer<Float>,
        outputCapacity: Int
    ) -> (inputUsed: Int, outputWritten: Int) {
        if input == nil && endFrame == .max {
            endFrame = windowStart + windowFrames
        }
        var used = 0, written = 0
        let offered = input == nil ? 0 : max(0, inputFrames)
        while true {
            compact()
            // Take what fits; after the end, zeros stand for the frames past it.
            let room = capacityFrames - windowFrames
            let destination = window + windowFrames * channelCount
            if let input, used < offered {
                let take = min(room, offered - used)
                destination.update(from: input + used * channelCount, count: take * channelCount)
                windowFrames += take
                used += take
            } else if endFrame != .max {
                destination.update(repeating: 0, count: room * channelCount)
                windowFrames += room
            }
            let made = render(into: output + written * channelCount, capacity: outputCapacity - written)
            written += made
            if written == outputCapacity { break }
            if made == 0 && (endFrame != .max ? instant >= Double(endFrame) : used == offered) { break }
        }
        return (used, written)
    }

    /// Drops the frames no filter can read any more, keeping the widest reach behind the next
    /// output instant.
    private func compact() {
        let keepFrom = Int(instant.rounded(.down)) - widestReach
        let drop = min(keepFrom - windowStart, windowFrames)
        guard drop > 0 else { return }
        let kept = windowFrames - drop
        window.update(from: window + drop * channelCount, count: kept * channelCount)
        windowStart += drop
        windowFrames = kept
    }

    /// Makes output frames while the window holds every frame their filter reads.
    private func render(into output: UnsafeMutablePointer<Float>, capacity: Int) -> Int {
        let stretch = min(ratio, 1)
        let reach = stretch >= 1 ? halfTaps : Int((Double(halfTaps) / stretch).rounded(.up))
        let windowEnd = windowStart + windowFrames
        var made = 0
        while made < capacity {
            if endFrame != .max && instant >= Double(endFrame) { break }
            let base = Int(instant.rounded(.down))
            guard base + reach < windowEnd else { break }
            let fraction = instant - Double(base)
            let first = window + (base - reach + 1 - windowStart) * channelCount
            let out = output + made * channelCount
            if stretch >= 1 {
                interpolate(first: first, fraction: fraction, into: out)
            } else {
                stretched(first: first, taps: 2 * reach, fraction: fraction, stretch: stretch, into: out)
            }
            made += 1
            instant += step
        }
        return made
    }

    /// One output frame at a ratio of 1 or more: rows `p` and `p + 1` blended, where the first
    /// tap lies `(1 − fraction) × pointsPerFrame` points into the table.
    @inline(__always)
    private func interpolate(first: UnsafeMutablePointer<Float>, fraction: Double, into out: UnsafeMutablePointer<Float>) {
        let points = Double(table.design.pointsPerFrame)
        let position = (1 - fraction) * points
        let row = min(Int(position), table.design.pointsPerFrame)
        let blend = Float(position - Double(row))
        let taps = 2 * halfTaps
        let input = UnsafeRawPointer(first)
        switch channelCount {
        case 1:
            let lower = UnsafeRawPointer(table.monoRows.baseAddress! + row * taps)
            let upper = lower + taps * MemoryLayout<Float>.stride
            var sum = SIMD8<Float>()
            var offset = 0
            while offset < taps * MemoryLayout<Float>.stride {
                let a = lower.loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self)
                let b = upper.loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self)
                let x = input.loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self)
                sum += (a + (b - a) * blend) * x
                offset += 8 * MemoryLayout<Float>.stride
            }
            out[0] = sum.sum()
        case 2:
            let lower = UnsafeRawPointer(table.stereoRows.baseAddress! + row * taps * 2)
            let upper = lower + taps * 2 * MemoryLayout<Float>.stride
            // Eight taps (two vectors) at a time into two sums.
            var even = SIMD8<Float>(), odd = SIMD8<Float>()
            var offset = 0
            let vector = 8 * MemoryLayout<Float>.stride
            while offset < taps * 2 * MemoryLayout<Float>.stride {
                let a0 = lower.loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self)
                let b0 = upper.loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self)
                even += (a0 + (b0 - a0) * blend) * input.loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self)
                let a1 = lower.loadUnaligned(fromByteOffset: offset + vector, as: SIMD8<Float>.self)
                let b1 = upper.loadUnaligned(fromByteOffset: offset + vector, as: SIMD8<Float>.self)
                odd += (a1 + (b1 - a1) * blend) * input.loadUnaligned(fromByteOffset: offset + vector, as: SIMD8<Float>.self)
                offset += 2 * vector
            }
            let sum = even + odd
            out[0] = sum[0] + sum[2] + sum[4] + sum[6]
            out[1] = sum[1] + sum[3] + sum[5] + sum[7]
        default:
            let lower = table.monoRows.baseAddress! + row * taps
            let upper = lower + taps
            for channel in 0..<channelCount { out[channel] = 0 }
            for tap in 0..<taps {
                let coefficient = lower[tap] + (upper[tap] - lower[tap]) * blend
                let frame = first + tap * channelCount
                for channel in 0..<channelCount { out[channel] += coefficient * frame[channel] }
            }
        }
    }

    /// The coefficient at the fixed-point table point `position` (32 fraction bits), and the
    /// step to the next tap's. (A function of its own, not a closure over `position`: a
    /// closure capturing a variable boxes it on the heap in unoptimised builds.)
    @inline(__always)
    private static func coefficient(
        _ pairs: UnsafeMutablePointer<SIMD2<Float>>, _ position: inout Int64, _ increment: Int64, _ toBlend: Float
    ) -> Float {
        let pair = pairs[Int(truncatingIfNeeded: position >> 32)]
        let blend = Float(Int32(truncatingIfNeeded: (position & 0xFFFF_FFFF) >> 8)) * toBlend
        position &+= increment
        return pair.x + pair.y * blend
    }

    /// One output frame below a ratio of 1: the filter stretched by `1 / stretch` over `taps`
    /// input frames, each tap's coefficient looked up and scaled by `stretch`.
    @inline(__always)
    private func stretched(
        first: UnsafeMutablePointer<Float>, taps: Int, fraction: Double, stretch: Double,
        into out: UnsafeMutablePointer<Float>
    ) {
        let points = Double(table.design.pointsPerFrame)
        let pairs = table.pairs.baseAddress!
        // Tap j lies x = j − taps/2 + 1 − fraction frames from the instant, at table point
        // (x × stretch + halfTaps) × pointsPerFrame + margin; in fixed point with 32 fraction
        // bits, stepping exactly from tap to tap.
        let increment = stretch * points
        let start = (Double(1 - taps / 2) - fraction) * increment + Double(halfTaps) * points + Double(table.margin)
        let one = 4_294_967_296.0
        let increment64 = Int64(increment * one)
        var position = Int64(start * one)
        // The blend from the 24 bits under the point: an Int32 converts in one instruction.
        let toBlend = Float(1.0 / 16_777_216)
        let gain = Float(stretch)
        switch channelCount {
        case 1:
            // Two taps at a time into two sums: half the chain of dependent additions.
            var even: Float = 0, odd: Float = 0
            var tap = 0
            while tap + 2 <= taps {
                even += Self.coefficient(pairs, &position, increment64, toBlend) * first[tap]
                odd += Self.coefficient(pairs, &position, increment64, toBlend) * first[tap + 1]
                tap += 2
            }
            if tap < taps { even += Self.coefficient(pairs, &position, increment64, toBlend) * first[tap] }
            out[0] = (even + odd) * gain
        case 2:
            var sums = SIMD4<Float>()
            var tap = 0
            while tap + 2 <= taps {
                let c0 = Self.coefficient(pairs, &position, increment64, toBlend), c1 = Self.coefficient(pairs, &position, increment64, toBlend)
                sums += SIMD4(c0, c0, c1, c1) * UnsafeRawPointer(first + 2 * tap).loadUnaligned(as: SIMD4<Float>.self)
                tap += 2
            }
            var left = sums[0] + sums[2], right = sums[1] + sums[3]
            if tap < taps {
                let c = Self.coefficient(pairs, &position, increment64, toBlend)
                left += c * first[2 * tap]
                right += c * first[2 * tap + 1]
            }
            out[0] = left * gain
            out[1] = right * gain
        default:
            for channel in 0..<channelCount { out[channel] = 0 }
            for tap in 0..<taps {
                let c = Self.coefficient(pairs, &position, increment64, toBlend) * gain
                let frame = first + tap * channelCount
                for channel in 0..<channelCount { out[channel] += c * frame[channel] }
            }
        }
    }
}

extension RateConverterKind {
    /// The filter of a windowed-sinc kind, `nil` for the others.
    var windowedSincDesign: WindowedSincEngine.Design? {
        switch self {
        case .windowedSinc32: WindowedSincEngine.Design(halfTaps: 16, cutoff: 0.9, beta: 10, pointsPerFrame: 512)
        case .windowedSinc40: WindowedSincEngine.Design(halfTaps: 20, cutoff: 0.86, beta: 11, pointsPerFrame: 512)
        case .windowedSinc64: WindowedSincEngine.Design(halfTaps: 32, cutoff: 0.9, beta: 12.5, pointsPerFrame: 1024)
        default: nil
        }
    }
}
