import Foundation
import SpoolCore
import SpoolResampling

/// One sample-rate conversion the resampler table measures, with the tones it is measured on.
package struct RateConversion: Sendable, Hashable, CustomStringConvertible {
    /// The rate converted from, in Hz.
    package var inputRate: Double
    /// The rate converted to, in Hz.
    package var outputRate: Double

    /// A conversion from one rate to another.
    /// - Parameters:
    ///   - inputRate: The source rate in Hz.
    ///   - outputRate: The device rate in Hz.
    package init(from inputRate: Double, to outputRate: Double) {
        self.inputRate = inputRate
        self.outputRate = outputRate
    }

    /// The conversions `spool bench resample` measures: the common file rates to a 48 kHz
    /// device, and 48 kHz to a 44.1 kHz one.
    package static let benchmarked: [RateConversion] = [
        RateConversion(from: 44_100, to: 48_000), RateConversion(from: 48_000, to: 44_100),
        RateConversion(from: 22_050, to: 48_000), RateConversion(from: 32_000, to: 48_000),
        RateConversion(from: 16_000, to: 48_000),
    ]

    /// Output frames per input frame.
    package var ratio: Double { outputRate / inputRate }

    /// Whether the output rate is below the input rate, so that the converter must remove what
    /// lies between the two Nyquist frequencies (aliasing) rather than the images of the input
    /// spectrum (imaging).
    package var isDownsampling: Bool { outputRate < inputRate }

    /// The low SNR tone: 1 kHz.
    package var lowToneHz: Double { 1_000 }

    /// The high SNR tone: 0.68 of the lower Nyquist frequency, to 100 Hz (15 kHz at
    /// 44.1 ↔ 48 kHz, 7.5 kHz from 22.05 kHz, 10.9 kHz from 32 kHz, 5.4 kHz from 16 kHz):
    /// inside every converter's passband, where a short filter starts to droop.
    package var highToneHz: Double { (0.68 * min(inputRate, outputRate) / 2 / 100).rounded() * 100 }

    /// The tone the aliasing figure is measured on, close to the Nyquist frequency that bounds
    /// the conversion, where a filter's transition band lies. Downsampling: halfway between the
    /// two Nyquist frequencies (23.025 kHz for 48 → 44.1 kHz), which a converter must remove;
    /// its alias would land at 0.956 of the output's Nyquist frequency. Upsampling: the tone
    /// whose first image (input rate − tone) lands halfway between the two Nyquist frequencies
    /// (21.075 kHz from 44.1 kHz, image at 23.025 kHz), but no lower than 0.9 of the input's
    /// Nyquist frequency (9.92 kHz from 22.05, 14.4 kHz from 32, 7.2 kHz from 16 kHz: images at
    /// 1.1 of it).
    package var aliasingToneHz: Double {
        let inputNyquist = inputRate / 2, outputNyquist = outputRate / 2
        if isDownsampling { return (inputNyquist + outputNyquist) / 2 }
        return max(inputRate - (inputNyquist + outputNyquist) / 2, 0.9 * inputNyquist)
    }

    /// `44.1 → 48 kHz`.
    package var description: String {
        "\(Self.kilohertz(inputRate)) → \(Self.kilohertz(outputRate)) kHz"
    }

    /// A frequency in kHz without trailing zeros: 44.1, 48, 22.05.
    /// - Parameter rate: The frequency in Hz.
    /// - Returns: Its kHz figure to at most three decimals.
    package static func kilohertz(_ rate: Double) -> String {
        var text = String(format: "%.3f", rate / 1_000)
        while text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
        return text
    }
}

/// What a row's `aliasingDB` measures.
package enum AliasingMeasure: String, Sendable, Codable {
    /// Downsampling: the output's power over the input's, for a tone above the output's
    /// Nyquist frequency (all of it should be removed; what is left has folded into the output band).
    case aliasing = "alias"
    /// Upsampling: the output's power between the input's and the output's Nyquist frequencies
    /// (the images of the input spectrum, with the tone itself fitted and taken out first),
    /// over the input tone's power.
    case imaging = "image"
}

/// One row of the resampler table: one converter kind at one conversion and channel count.
package struct ResamplerTableRow: Sendable {
    /// The converter measured; `nil` for a peer's (`measureResamplerQuality(converting:…)`).
    package var kind: RateConverterKind?
    /// Its table name, e.g. `libspeexdsp q3`.
    package var name: String
    /// The conversion.
    package var conversion: RateConversion
    /// Interleaved channels converted.
    package var channelCount: Int
    /// SNR of the 1 kHz tone in dB (see `RateConversionToneResult.snrDB`).
    package var lowToneSNRDB: Double
    /// SNR of `conversion.highToneHz` in dB.
    package var highToneSNRDB: Double
    /// Aliasing or imaging (see `aliasingMeasure`) in dB relative to the input tone's power, the
    /// worst channel; floored at −200 dB.
    package var aliasingDB: Double
    /// What `aliasingDB` measures, on `conversion.aliasingToneHz`.
    package var aliasingMeasure: AliasingMeasure
    /// The largest frequency error over the SNR tones, in percent (signed).
    package var frequencyErrorPercent: Double
    /// Input frames converted per second of the converting thread's CPU time, fixed ratio,
    /// median of the runs; observed.
    package var framesPerSecond: Double
    /// The same with the ratio changed every period; `nil` for a fixed-ratio kind.
    package var varispeedFramesPerSecond: Double?

    /// The worse of the two SNR tones.
    package var snrDB: Double { min(lowToneSNRDB, highToneSNRDB) }
}

/// Measures every kind at every conversion, mono and stereo: the table behind the choice of a
/// converter for each quality level (`spool bench resample`).
///
/// Quality (deterministic): each SNR tone converted alone in mono and side by side in stereo
/// (1 kHz left, the high tone right), one second of input each, and the aliasing tone on every
/// channel (see `measureAliasing`). Speed (observed): `measureRateConverterSpeed` at the same
/// conversion and channel count.
/// - Parameters:
///   - kinds: The kinds, in table order.
///   - conversions: The conversions, in table order within a kind.
///   - channelCounts: The channel counts, in table order within a conversion.
///   - speedSeconds: Input seconds converted by each speed run.
///   - repeats: Speed runs per figure (the median counts).
///   - progress: Called with each row as it is measured.
/// - Returns: One row per kind, conversion and channel count.
/// - Throws: `AudioError` when a converter cannot be made.
package func measureResamplerTable(
    kinds: [RateConverterKind] = RateConverterKind.allCases,
    conversions: [RateConversion] = RateConversion.benchmarked, channelCounts: [Int] = [1, 2],
    speedSeconds: Double = 3, repeats: Int = 5, progress: (ResamplerTableRow) -> Void = { _ in }
) throws -> [ResamplerTableRow] {
    var rows: [ResamplerTableRow] = []
    for kind in kinds {
        for conversion in conversions {
            for channelCount in channelCounts {
                let row = try measureResamplerRow(
                    kind, conversion: conversion, channelCount: channelCount, speedSeconds: speedSeconds,
                    repeats: repeats)
                progress(row)
                rows.append(row)
            }
        }
    }
    return rows
}

/// One row of `measureResamplerTable`.
/// - Throws: `AudioError` when the converter cannot be made.
package func measureResamplerRow(
    _ kind: RateConverterKind, conversion: RateConversion, channelCount: Int, speedSeconds: Double = 3,
    repeats: Int = 5
) throws -> ResamplerTableRow {
    var row = try measureResamplerQuality(
        converting: kindConversion(kind), name: kind.description, conversion: conversion, channelCount: channelCount)
    row.kind = kind
    row.framesPerSecond = try measureRateConverterSpeed(
        kind, conversion: conversion, channelCount: channelCount, seconds: speedSeconds, varispeed: false,
        repeats: repeats)
    row.varispeedFramesPerSecond = kind.supportsVariableRatio
        ? try measureRateConverterSpeed(
            kind, conversion: conversion, channelCount: channelCount, seconds: speedSeconds, varispeed: true,
            repeats: repeats)
        : nil
    return row
}

/// The quality figures of one row for any conversion (speed 0, no kind): SNR on both tones,
/// aliasing or imaging, frequency error. Also the row of a converter outside the kinds
/// (OpenAL Soft's resamplers), measured as the kinds are; a peer's speed is timed where it does
/// its real work (`spool bench mix`).
/// - Throws: What `convert` throws.
package func measureResamplerQuality(
    converting convert: RateConversionFunction, name: String, conversion: RateConversion, channelCount: Int
) throws -> ResamplerTableRow {
    let (from, to) = (conversion.inputRate, conversion.outputRate)
    let low = conversion.lowToneHz, high = conversion.highToneHz
    var tones: [RateConversionToneResult] = []
    if channelCount == 1 {
        tones += try measureRateConversion(converting: convert, inputRate: from, outputRate: to, toneFrequencies: [low])
        tones += try measureRateConversion(converting: convert, inputRate: from, outputRate: to, toneFrequencies: [high])
    } else {
        // 1 kHz and the high tone on alternate channels.
        let frequencies = (0..<channelCount).map { $0 % 2 == 0 ? low : high }
        tones += try measureRateConversion(converting: convert, inputRate: from, outputRate: to, toneFrequencies: frequencies)
    }
    let aliasing = try measureAliasing(converting: convert, conversion: conversion, channelCount: channelCount)
    let frequencyError = tones.map(\.frequencyErrorPercent).max { abs($0) < abs($1) } ?? 0
    return ResamplerTableRow(
        kind: nil, name: name, conversion: conversion, channelCount: channelCount,
        lowToneSNRDB: min(200, tones.filter { $0.frequencyHz == low }.map(\.snrDB).min() ?? 0),
        highToneSNRDB: min(200, tones.filter { $0.frequencyHz == high }.map(\.snrDB).min() ?? 0),
        aliasingDB: aliasing, aliasingMeasure: conversion.isDownsampling ? .aliasing : .imaging,
        frequencyErrorPercent: frequencyError, framesPerSecond: 0, varispeedFramesPerSecond: nil)
}

/// How much of a tone a converter should remove it lets through, in dB relative to the input
/// tone's power (the worst channel, floored at −200 dB).
///
/// `conversion.aliasingToneHz` (amplitude 0.5) on every channel, `seconds` of input, converted in
/// 512-frame periods and flushed; the first and last 1024 output frames are left out.
/// Downsampling: the output's mean power over the input's (an ideal converter outputs
/// nothing). Upsampling: the tone fitted (amplitude and phase) and subtracted, then the
/// residual's power between the input's and the output's Nyquist frequencies (Hann-windowed
/// FFT over the largest power-of-two span) over the input tone's power.
/// - Throws: `AudioError` when the converter cannot be made.
package func measureAliasing(
    _ kind: RateConverterKind, conversion: RateConversion, channelCount: Int, seconds: Double = 1
) throws -> Double {
    try measureAliasing(converting: kindConversion(kind), conversion: conversion, channelCount: channelCount, seconds: seconds)
}

/// `measureAliasing` for any conversion, e.g. OpenAL Soft's resamplers.
/// - Throws: What `convert` throws.
package func measureAliasing(
    converting convert: RateConversionFunction, conversion: RateConversion, channelCount: Int, seconds: Double = 1
) throws -> Double {
    let frequency = conversion.aliasingToneHz
    let input = RateConverterSignal.tones(
        [Double](repeating: frequency, count: channelCount), sampleRate: conversion.inputRate,
        frames: Int(seconds * conversion.inputRate))
    let output = try convert(input, channelCount, conversion.inputRate, conversion.outputRate)
    let frames = RateConverterSignal.analysedFrames(outputFrames: output.count / channelCount)
    let tonePower = RateConverterSignal.amplitude * RateConverterSignal.amplitude / 2
    var worst = -200.0
    for channel in 0..<channelCount {
        let power: Double
        if conversion.isDownsampling {
            var sum = 0.0
            for frame in frames {
                let x = Double(output[frame * channelCount + channel])
                sum += x * x
            }
            power = sum / Double(max(1, frames.count))
        } else {
            let fit = RateConverterSignal.fitSine(
                output, channel: channel, channelCount: channelCount, frequency: frequency,
                sampleRate: conversion.outputRate, frames: frames)
            let omega = 2 * Double.pi * frequency / conversion.outputRate
            let residual = frames.map { frame in
                Double(output[frame * channelCount + channel]) - fit.amplitude * sin(omega * Double(frame) + fit.phase)
            }
            power = RateConverterSignal.bandPower(
                residual, sampleRate: conversion.outputRate,
                band: (conversion.inputRate / 2)...(conversion.outputRate / 2))
        }
        worst = max(worst, 10 * log10(max(power / tonePower, 1e-20)))
    }
    return worst
}

// MARK: - Spectrum

extension RateConverterSignal {
    /// The analysed output frames: all but `edgeFrames` at each end (at least one frame).
    static func analysedFrames(outputFrames: Int) -> Range<Int> {
        edgeFrames..<max(edgeFrames + 1, outputFrames - edgeFrames)
    }

    /// Mean power of `signal` within `band` (Hz): the middle power-of-two span, Hann-windowed,
    /// through an FFT; the band's bins summed (both sides of the spectrum) and scaled so that a
    /// sine of amplitude A inside the band gives A²/2.
    static func bandPower(_ signal: [Double], sampleRate: Double, band: ClosedRange<Double>) -> Double {
        guard signal.count >= 2 else { return 0 }
        var size = 1
        while size * 2 <= signal.count { size *= 2 }
        let start = (signal.count - size) / 2
        var real = [Double](repeating: 0, count: size), imaginary = [Double](repeating: 0, count: size)
        var windowPower = 0.0
        for n in 0..<size {
            let w = 0.5 - 0.5 * cos(2 * Double.pi * Double(n) / Double(size))
            real[n] = signal[start + n] * w
            windowPower += w * w
        }
        fft(&real, &imaginary)
        var sum = 0.0
        let binHz = sampleRate / Double(size)
        for bin in 1..<(size / 2) where band.contains(Double(bin) * binHz) {
            sum += 2 * (real[bin] * real[bin] + imaginary[bin] * imaginary[bin])
        }
        // Parseval: Σ|X|² = N·Σ(w·x)², and Σ(w·x)² ≈ power · Σw² for a stationary signal.
        return sum / (Double(size) * windowPower)
    }

    /// In-place radix-2 decimation-in-time FFT; `real.count` must be a power of two.
    static func fft(_ real: inout [Double], _ imaginary: inout [Double]) {
        let n = real.count
        guard n > 1, n & (n - 1) == 0, imaginary.count == n else { return }
        var j = 0
        for i in 1..<n {
            var bit = n >> 1
            while j & bit != 0 {
                j ^= bit
                bit >>= 1
            }
            j |= bit
            if i < j {
                real.swapAt(i, j)
                imaginary.swapAt(i, j)
            }
        }
        var length = 2
        while length <= n {
            let angle = -2 * Double.pi / Double(length)
            let half = length / 2
            for k in 0..<half {
                let wr = cos(angle * Double(k)), wi = sin(angle * Double(k))
                var start = 0
                while start < n {
                    let a = start + k, b = a + half
                    let tr = real[b] * wr - imaginary[b] * wi
                    let ti = real[b] * wi + imaginary[b] * wr
                    real[b] = real[a] - tr
                    imaginary[b] = imaginary[a] - ti
                    real[a] += tr
                    imaginary[a] += ti
                    start += length
                }
            }
            length *= 2
        }
    }
}
