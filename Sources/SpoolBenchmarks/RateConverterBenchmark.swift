import Foundation
import SpoolCore
import SpoolResampling

/// How faithfully one converter carried one sine tone through a conversion.
package struct RateConversionToneResult: Sendable, Equatable {
    /// The tone's frequency in Hz.
    package var frequencyHz: Double
    /// The channel the tone was on.
    package var channel: Int
    /// How many channels the stream had.
    package var channelCount: Int
    /// The sample rates converted from and to, in Hz.
    package var inputRate: Double
    package var outputRate: Double
    /// Signal-to-noise ratio of the output against the ideal sine at the output rate, in dB,
    /// after compensating the converter's delay (a least-squares fit of the phase). Passband
    /// gain error, aliasing, imaging and noise all count as noise.
    package var snrDB: Double
    /// The output's frequency (from interpolated rising zero crossings) against the input's,
    /// in percent; positive when the output is sharp.
    package var frequencyErrorPercent: Double
}

/// One row of `benchmarkRateConverters`: a converter kind's measured quality and speed.
package struct RateConverterBenchmarkRow: Sendable {
    /// The converter measured.
    package var kind: RateConverterKind
    /// Its table name, e.g. `libsamplerate sinc medium`.
    package var name: String
    /// The worst SNR over the tones measured, in dB.
    package var snrDB: Double
    /// The largest frequency error over the tones measured, in percent (absolute value).
    package var frequencyErrorPercent: Double
    /// Input frames converted per second of the converting thread's CPU time (median of five
    /// runs): stereo 44.1 → 48 kHz in 512-frame output periods at a fixed ratio.
    package var framesPerSecond: Double
    /// `framesPerSecond` over 44 100: how many streams like it one core keeps up with.
    package var realtimeFactor: Double
    /// The same with the ratio changed every period (playback rate sweeping 1…1.5); `nil` for
    /// kinds without varispeed.
    package var varispeedFramesPerSecond: Double?
    /// `varispeedFramesPerSecond` over 44 100.
    package var varispeedRealtimeFactor: Double?
    /// Every tone measured, for the detail behind `snrDB` and `frequencyErrorPercent`.
    package var tones: [RateConversionToneResult]
}

/// Converts sine tones with one converter kind and measures each output tone.
///
/// Each channel carries one full-scale-half (amplitude 0.5) sine; the input is converted in
/// 512-frame output periods and flushed, then every channel is compared with the ideal sine at
/// the output rate, leaving out the first and last 1024 output frames.
/// - Parameters:
///   - kind: The converter to measure.
///   - inputRate: The input sample rate in Hz.
///   - outputRate: The output sample rate in Hz.
///   - toneFrequencies: One tone per channel, in Hz.
///   - seconds: Input duration.
/// - Returns: One result per channel.
/// - Throws: `AudioError.Code.invalidParameter` for rates or channel counts a converter refuses.
package func measureRateConversion(
    _ kind: RateConverterKind = .default, inputRate: Double, outputRate: Double,
    toneFrequencies: [Double], seconds: Double = 1
) throws -> [RateConversionToneResult] {
    try measureRateConversion(
        converting: kindConversion(kind), inputRate: inputRate, outputRate: outputRate,
        toneFrequencies: toneFrequencies, seconds: seconds)
}

/// Converts all of an interleaved input (`channelCount` channels at `inputRate`) to
/// `outputRate`: a converter measured by the same analysis as the kinds, such as a peer's.
package typealias RateConversionFunction =
    (_ input: [Float], _ channelCount: Int, _ inputRate: Double, _ outputRate: Double) throws -> [Float]

/// The conversion a kind makes in the table: 512-frame output periods, then the tail drained.
package func kindConversion(_ kind: RateConverterKind) -> RateConversionFunction {
    { input, channelCount, inputRate, outputRate in
        let converter = try makeRateConverter(kind, channelCount: channelCount, ratio: outputRate / inputRate)
        return RateConverterSignal.convertAll(converter, input: input, periodFrames: 512)
    }
}

/// `measureRateConversion` for any conversion, e.g. OpenAL Soft's resamplers.
///
/// A converter that steps through its input in coarse fixed-point fractions (OpenAL Soft's
/// 1/4096 of a frame) plays a tone some tens of ppm off, which alone would count as noise: where
/// the tone comes out more than 10 ppm off, its SNR is taken at the frequency that fits best
/// within ±26 ppm of the one its zero crossings give (the frequency error is reported beside it).
package func measureRateConversion(
    converting convert: RateConversionFunction, inputRate: Double, outputRate: Double,
    toneFrequencies: [Double], seconds: Double = 1
) throws -> [RateConversionToneResult] {
    let channelCount = toneFrequencies.count
    let inputFrames = Int(seconds * inputRate)
    let input = RateConverterSignal.tones(toneFrequencies, sampleRate: inputRate, frames: inputFrames)
    let output = try convert(input, channelCount, inputRate, outputRate)
    let outputFrames = output.count / channelCount
    let analysed = RateConverterSignal.edgeFrames..<max(
        RateConverterSignal.edgeFrames + 1, outputFrames - RateConverterSignal.edgeFrames)

    return toneFrequencies.enumerated().map { channel, frequency in
        func snr(at heard: Double) -> Double {
            let fit = RateConverterSignal.fitSine(
                output, channel: channel, channelCount: channelCount, frequency: heard,
                sampleRate: outputRate, frames: analysed)
            return RateConverterSignal.snrDB(
                output, channel: channel, channelCount: channelCount, frequency: heard,
                sampleRate: outputRate, phase: fit.phase, amplitude: RateConverterSignal.amplitude,
                frames: analysed)
        }
        let measured = RateConverterSignal.zeroCrossingFrequency(
            output, channel: channel, channelCount: channelCount, sampleRate: outputRate, frames: analysed)
        var best = snr(at: frequency)
        if abs(measured - frequency) > 10e-6 * frequency {
            // Around the frequency the zero crossings give (good to a few ppm): ±24 ppm, then finer.
            func at(_ ppm: Double) -> Double { snr(at: measured * (1 + ppm * 1e-6)) }
            let coarse = stride(from: -24.0, through: 24, by: 2).max { at($0) < at($1) } ?? 0
            best = max(best, stride(from: coarse - 2, through: coarse + 2, by: 0.1).map(at).max() ?? best)
        }
        return RateConversionToneResult(
            frequencyHz: frequency, channel: channel, channelCount: channelCount,
            inputRate: inputRate, outputRate: outputRate, snrDB: best,
            frequencyErrorPercent: (measured - frequency) / frequency * 100)
    }
}

/// Measures every converter kind on the same signals: quality (1 kHz and 15 kHz sines, mono
/// and stereo, 44.1 → 48 kHz and 48 → 44.1 kHz) and speed (`seconds` of stereo 44.1 → 48 kHz
/// in 512-frame output periods, at a fixed ratio and with the ratio changed every period).
/// - Parameters:
///   - kinds: The kinds to measure, in table order.
///   - seconds: Input duration of the speed runs.
/// - Returns: One row per kind.
/// - Throws: `AudioError` when a converter cannot be made.
package func benchmarkRateConverters(
    _ kinds: [RateConverterKind] = RateConverterKind.allCases, seconds: Double = 10
) throws -> [RateConverterBenchmarkRow] {
    try kinds.map { kind in
        var tones: [RateConversionToneResult] = []
        for (from, to) in [(44_100.0, 48_000.0), (48_000.0, 44_100.0)] {
            for toneSet in [[1_000.0], [15_000.0], [1_000.0, 15_000.0]] {
                tones += try measureRateConversion(
                    kind, inputRate: from, outputRate: to, toneFrequencies: toneSet)
            }
        }
        let fixed = try measureRateConverterSpeed(kind, seconds: seconds, varispeed: false)
        let varispeed = kind.supportsVariableRatio
            ? try measureRateConverterSpeed(kind, seconds: seconds, varispeed: true) : nil
        return RateConverterBenchmarkRow(
            kind: kind, name: kind.description,
            snrDB: tones.map(\.snrDB).min() ?? 0,
            frequencyErrorPercent: tones.map { abs($0.frequencyErrorPercent) }.max() ?? 0,
            framesPerSecond: fixed, realtimeFactor: fixed / 44_100,
            varispeedFramesPerSecond: varispeed, varispeedRealtimeFactor: varispeed.map { $0 / 44_100 },
            tones: tones)
    }
}

/// Input frames per second of CPU time one converter kind sustains: `seconds` of
/// `channelCount` channels (1 kHz, 1.5 kHz, … one tone each) converted at `conversion` in
/// 512-frame output periods, timed with the calling thread's CPU clock
/// (`CLOCK_THREAD_CPUTIME_ID`: the converter runs on this thread only, so time the scheduler
/// gives to other processes does not count), the median of `repeats` runs, each on a fresh
/// converter. With `varispeed`, the playback rate sweeps between 1 and 1.5 and the ratio is set
/// every period.
/// - Throws: `AudioError` when the converter cannot be made.
package func measureRateConverterSpeed(
    _ kind: RateConverterKind, conversion: RateConversion = RateConversion(from: 44_100, to: 48_000),
    channelCount: Int = 2, seconds: Double = 10, varispeed: Bool = false, repeats: Int = 5
) throws -> Double {
    let baseRatio = conversion.ratio
    let channels = max(1, channelCount)
    let inputFrames = max(1, Int(seconds * conversion.inputRate))
    let input = RateConverterSignal.tones(
        (0..<channels).map { 1_000 + 500 * Double($0) }, sampleRate: conversion.inputRate, frames: inputFrames)
    let periodFrames = 512
    var output = [Float](repeating: 0, count: periodFrames * channels)
    var rates: [Double] = []
    for _ in 0..<max(1, repeats) {
        let converter = try makeRateConverter(kind, channelCount: channels, ratio: baseRatio)
        let start = HostTime.threadCPUSeconds()
        input.withUnsafeBufferPointer { input in
            output.withUnsafeMutableBufferPointer { output in
                var used = 0
                var period = 0
                while used < inputFrames {
                    if varispeed {
                        let rate = 1.25 - 0.25 * cos(2 * Double.pi * Double(period) / 100)
                        converter.setRatio(baseRatio / rate)
                    }
                    let result = converter.process(
                        input: input.baseAddress! + used * channels, inputFrames: inputFrames - used,
                        output: output.baseAddress!, outputCapacity: periodFrames)
                    used += result.inputUsed
                    period += 1
                    if result.inputUsed == 0 && result.outputWritten == 0 { break }
                }
            }
        }
        rates.append(Double(inputFrames) / max(HostTime.threadCPUSeconds() - start, 1e-9))
    }
    rates.sort()
    return rates[rates.count / 2]
}

// MARK: - Signals and analysis

/// Test signals and the measurements made on converted output (shared with the tests).
enum RateConverterSignal {
    /// Amplitude of every test tone.
    static let amplitude = 0.5
    /// Output frames left out at each end of an analysis: the filters' start and end.
    static let edgeFrames = 1024

    /// Interleaved sines, one frequency per channel, starting at phase 0.
    static func tones(_ frequencies: [Double], sampleRate: Double, frames: Int) -> [Float] {
        let channelCount = frequencies.count
        var samples = [Float](repeating: 0, count: frames * channelCount)
        for (channel, frequency) in frequencies.enumerated() {
            let step = 2 * Double.pi * frequency / sampleRate
            for frame in 0..<frames {
                samples[frame * channelCount + channel] = Float(amplitude * sin(step * Double(frame)))
            }
        }
        return samples
    }

    /// Converts all of `input` in `periodFrames` output periods, then drains the tail.
    static func convertAll(_ converter: any RateConverter, input: [Float], periodFrames: Int) -> [Float] {
        let channelCount = converter.channelCount
        let inputFrames = input.count / channelCount
        var output: [Float] = []
        output.reserveCapacity(Int(Double(inputFrames) * converter.ratio * 1.1 + 4096) * channelCount)
        var period = [Float](repeating: 0, count: periodFrames * channelCount)
        input.withUnsafeBufferPointer { input in
            period.withUnsafeMutableBufferPointer { period in
                var used = 0
                while true {
                    let remaining = inputFrames - used
                    let result = converter.process(
                        input: remaining > 0 ? input.baseAddress! + used * channelCount : nil,
                        inputFrames: remaining, output: period.baseAddress!, outputCapacity: periodFrames)
                    used += result.inputUsed
                    output.append(contentsOf: period.prefix(result.outputWritten * channelCount))
                    if remaining == 0 && result.outputWritten == 0 { break }
                    if remaining > 0 && result.inputUsed == 0 && result.outputWritten == 0 { break }
                }
            }
        }
        return output
    }

    /// Least-squares fit of `a·sin(ωn) + b·cos(ωn)` to one channel over `frames`.
    static func fitSine(
        _ samples: [Float], channel: Int, channelCount: Int, frequency: Double, sampleRate: Double,
        frames: Range<Int>
    ) -> (amplitude: Double, phase: Double) {
        fitSines(
            samples, channel: channel, channelCount: channelCount, frequencies: [frequency],
            sampleRate: sampleRate, frames: frames)[0]
    }

    /// Joint least-squares fit of one sine per frequency to one channel over `frames`. Fitting
    /// the tones together keeps one tone's leakage over a window of fractional periods (about
    /// −80 dB for a second of audio) out of the other's amplitude.
    /// - Returns: Amplitude and phase (`A·sin(ωn + phase)`) of each frequency, in order.
    static func fitSines(
        _ samples: [Float], channel: Int, channelCount: Int, frequencies: [Double], sampleRate: Double,
        frames: Range<Int>
    ) -> [(amplitude: Double, phase: Double)] {
        let omegas = frequencies.map { 2 * Double.pi * $0 / sampleRate }
        let size = 2 * omegas.count
        // Normal equations: matrix | right-hand side, one row per basis function.
        var rows = [[Double]](repeating: [Double](repeating: 0, count: size + 1), count: size)
        var basis = [Double](repeating: 0, count: size)
        for frame in frames {
            for (index, omega) in omegas.enumerated() {
                basis[2 * index] = sin(omega * Double(frame))
                basis[2 * index + 1] = cos(omega * Double(frame))
            }
            let x = Double(samples[frame * channelCount + channel])
            for row in 0..<size {
                for column in 0..<size { rows[row][column] += basis[row] * basis[column] }
                rows[row][size] += basis[row] * x
            }
        }
        // Gaussian elimination with partial pivoting.
        for pivot in 0..<size {
            let best = (pivot..<size).max { abs(rows[$0][pivot]) < abs(rows[$1][pivot]) }!
            rows.swapAt(pivot, best)
            guard rows[pivot][pivot] != 0 else { return omegas.map { _ in (0, 0) } }
            for row in 0..<size where row != pivot {
                let factor = rows[row][pivot] / rows[pivot][pivot]
                for column in pivot...size { rows[row][column] -= factor * rows[pivot][column] }
            }
        }
        return omegas.indices.map { index in
            let a = rows[2 * index][size] / rows[2 * index][2 * index]
            let b = rows[2 * index + 1][size] / rows[2 * index + 1][2 * index + 1]
            return ((a * a + b * b).squareRoot(), atan2(b, a))
        }
    }

    /// SNR in dB of one channel against `amplitude · sin(ωn + phase)`.
    static func snrDB(
        _ samples: [Float], channel: Int, channelCount: Int, frequency: Double, sampleRate: Double,
        phase: Double, amplitude: Double, frames: Range<Int>
    ) -> Double {
        let omega = 2 * Double.pi * frequency / sampleRate
        var signal = 0.0, noise = 0.0
        for frame in frames {
            let reference = amplitude * sin(omega * Double(frame) + phase)
            let difference = Double(samples[frame * channelCount + channel]) - reference
            signal += reference * reference
            noise += difference * difference
        }
        guard noise > 0 else { return .infinity }
        return 10 * log10(signal / noise)
    }

    /// Frequency in Hz from the first and last rising zero crossings of one channel, each
    /// placed between its two samples by linear interpolation.
    static func zeroCrossingFrequency(
        _ samples: [Float], channel: Int, channelCount: Int, sampleRate: Double, frames: Range<Int>
    ) -> Double {
        var first: Double?
        var last = 0.0
        var crossings = 0
        var previous = Double(samples[frames.lowerBound * channelCount + channel])
        for frame in frames.dropFirst() {
            let current = Double(samples[frame * channelCount + channel])
            if previous < 0 && current >= 0 {
                let time = Double(frame - 1) + previous / (previous - current)
                if first == nil { first = time }
                last = time
                crossings += 1
            }
            previous = current
        }
        guard let first, crossings > 1, last > first else { return 0 }
        return Double(crossings - 1) * sampleRate / (last - first)
    }
}
