import CAllocationCounter
import Foundation
import SpoolCore
import Testing
@testable import SpoolResampling
@testable import SpoolBenchmarks
import SpoolTestSupport

/// The libspeexdsp, libswresample and windowed-sinc converters keep the `RateConverter` contract: the length
/// ⌈input × ratio⌉ after the flush, output frame `k` at input instant `k / ratio`, `delayFrames`
/// naming the input sounding next, history forgotten on reset, bad parameters refused.
@Suite("Library rate converters")
struct LibraryConverterTests {
    static let speexKinds: [RateConverterKind] = [.speexQ0, .speexQ1, .speexQ3, .speexQ5, .speexQ8, .speexQ10]
    static let swresampleKinds: [RateConverterKind] = [
        .swrFilter8, .swrFilter16, .swrDefault, .swrFilter64, .swrFilter32Cutoff85, .swrFilter64Cutoff91,
    ]
    /// Spool's own variable-ratio kinds, held to the same contract.
    static let windowedSincKinds: [RateConverterKind] = [.windowedSinc32, .windowedSinc40, .windowedSinc64]
    static let fixedKinds = speexKinds + swresampleKinds
    static let kinds = fixedKinds + windowedSincKinds

    /// (input rate, output rate): up and down by small and large steps.
    static let conversions: [(Double, Double)] = [
        (44_100, 48_000), (48_000, 44_100), (22_050, 48_000), (16_000, 48_000), (48_000, 16_000),
    ]

    /// SNR of a 1 kHz sine against the ideal sine at `k / ratio`, with no phase fitted, over all
    /// conversions (measured on this build, then lowered by 3 dB): a converter shifted by a
    /// tenth of an output frame would fall to about 37 dB.
    static let alignedSNRFloorDB: [RateConverterKind: Double] = [
        .speexQ0: 58, .speexQ1: 67, .speexQ3: 91, .speexQ5: 104, .speexQ8: 111, .speexQ10: 128,
        .swrFilter8: 80, .swrFilter16: 94, .swrDefault: 96, .swrFilter64: 101, .swrFilter32Cutoff85: 89,
        .swrFilter64Cutoff91: 123, .windowedSinc32: 80, .windowedSinc40: 95, .windowedSinc64: 95,
    ]

    // MARK: Length and time alignment

    @Test(arguments: kinds)
    func aSineComesOutTimeAlignedWithInputTimesRatioFrames(kind: RateConverterKind) throws {
        for (from, to) in Self.conversions {
            let ratio = to / from
            let inputFrames = Int(from / 4) + 37
            let converter = try makeRateConverter(kind, channelCount: 1, ratio: ratio)
            let input = RateConverterSignal.tones([1_000], sampleRate: from, frames: inputFrames)
            let output = RateConverterSignal.convertAll(converter, input: input, periodFrames: 512)
            let expected = (Double(inputFrames) * ratio).rounded(.up)
            #expect(abs(Double(output.count) - expected) <= 1, "\(kind) \(from) → \(to): \(output.count) frames, expected \(expected)")
            // No phase fitted: output frame k must sound the input instant k / ratio.
            let snr = RateConverterSignal.snrDB(
                output, channel: 0, channelCount: 1, frequency: 1_000, sampleRate: to, phase: 0,
                amplitude: RateConverterSignal.amplitude,
                frames: RateConverterSignal.analysedFrames(outputFrames: output.count))
            let floor = Self.alignedSNRFloorDB[kind] ?? 200
            #expect(snr >= floor, "\(kind) \(from) → \(to): SNR \(snr) dB at zero shift, floor \(floor)")
        }
    }

    @Test(arguments: kinds, [48_000.0 / 44_100, 44_100.0 / 48_000])
    func delayFramesNamesTheInputInstantSoundingNext(kind: RateConverterKind, ratio: Double) throws {
        let converter = try makeRateConverter(kind, channelCount: 1, ratio: ratio)
        let inputRate = 44_100.0, frequency = 1_000.0
        let input = RateConverterSignal.tones([frequency], sampleRate: inputRate, frames: 20_000)
        // Periods of 300 frames from input offered 700 frames at a time: the converter takes
        // what it needs and leaves the rest, and never reaches the end.
        var output = [Float](repeating: 0, count: 12_000)
        var used = 0, written = 0
        while written + 300 <= output.count {
            let result = input.withUnsafeBufferPointer { input in
                output.withUnsafeMutableBufferPointer { output in
                    converter.process(
                        input: input.baseAddress! + used, inputFrames: min(700, input.count - used),
                        output: output.baseAddress! + written, outputCapacity: 300)
                }
            }
            used += result.inputUsed
            written += result.outputWritten
            #expect(result.outputWritten == 300)
            if result.outputWritten < 300 { break }
        }
        // The next output frame sounds input instant `used − delayFrames / ratio`; the last
        // outputs' phase says which instant they sounded.
        let delay = converter.delayFrames
        #expect(delay > 0 && delay < 512, "\(kind): delay \(delay)")
        let inputOmega = 2 * Double.pi * frequency / inputRate, outputOmega = inputOmega / ratio
        let fit = RateConverterSignal.fitSine(
            output, channel: 0, channelCount: 1, frequency: frequency, sampleRate: inputRate * ratio,
            frames: (written - 4_096)..<written)
        let predictedPhase = inputOmega * (Double(used) - delay / ratio) - outputOmega * Double(written)
        let error = remainder(predictedPhase - fit.phase, 2 * Double.pi) / inputOmega
        #expect(abs(error) < 0.02, "\(kind) at \(ratio): the position is off by \(error) input frames")
    }

    @Test(arguments: kinds)
    func afterTheFlushNothingMoreIsTakenAndResetStartsAfresh(kind: RateConverterKind) throws {
        let ratio = 48_000.0 / 22_050
        let converter = try makeRateConverter(kind, channelCount: 2, ratio: ratio)
        let first = RateConverterSignal.tones([300, 700], sampleRate: 22_050, frames: 3_000)
        let second = RateConverterSignal.tones([1_300, 2_700], sampleRate: 22_050, frames: 3_000)
        _ = RateConverterSignal.convertAll(converter, input: first, periodFrames: 333)
        var sink = [Float](repeating: 0, count: 1_024)
        let after = first.withUnsafeBufferPointer { first in
            converter.process(input: first.baseAddress!, inputFrames: 100, output: &sink, outputCapacity: 512)
        }
        #expect(after.inputUsed == 0 && after.outputWritten == 0)
        #expect(converter.process(input: nil, inputFrames: 0, output: &sink, outputCapacity: 512).outputWritten == 0)

        converter.reset()
        let afterReset = RateConverterSignal.convertAll(converter, input: second, periodFrames: 512)
        let fresh = try makeRateConverter(kind, channelCount: 2, ratio: ratio)
        let expected = RateConverterSignal.convertAll(fresh, input: second, periodFrames: 512)
        #expect(afterReset.count == expected.count)
        #expect(afterReset == expected, "\(kind): the first input still sounds after reset")
    }

    @Test(arguments: [RateConverterKind.speexQ3, .swrDefault])
    func sixChannelsStayApart(kind: RateConverterKind) throws {
        let tones = [500.0, 1_100, 2_300, 3_700, 5_300, 7_100]
        let converter = try makeRateConverter(kind, channelCount: 6, ratio: 48_000.0 / 44_100)
        let input = RateConverterSignal.tones(tones, sampleRate: 44_100, frames: 11_025)
        let output = RateConverterSignal.convertAll(converter, input: input, periodFrames: 512)
        let frames = RateConverterSignal.analysedFrames(outputFrames: output.count / 6)
        for channel in 0..<6 {
            let others = tones.indices.filter { $0 != channel }.map { tones[$0] }
            let fits = RateConverterSignal.fitSines(
                output, channel: channel, channelCount: 6, frequencies: [tones[channel]] + others,
                sampleRate: 48_000, frames: frames)
            #expect(abs(fits[0].amplitude - RateConverterSignal.amplitude) < 0.002, "\(kind) channel \(channel)")
            let leak = fits.dropFirst().map(\.amplitude).max() ?? 0
            #expect(20 * log10(max(leak, 1e-12) / RateConverterSignal.amplitude) < -90, "\(kind) channel \(channel) hears another")
        }
    }

    @Test(arguments: fixedKinds)
    func aFixedRatioKindIgnoresSetRatio(kind: RateConverterKind) throws {
        #expect(!kind.supportsVariableRatio)
        let converter = try makeRateConverter(kind, channelCount: 1, ratio: 48_000.0 / 44_100)
        converter.setRatio(1.5)
        let input = RateConverterSignal.tones([1_000], sampleRate: 44_100, frames: 11_025)
        let output = RateConverterSignal.convertAll(converter, input: input, periodFrames: 512)
        #expect(converter.ratio == 48_000.0 / 44_100)
        #expect(output.count == 12_000)
    }

    // MARK: Real time

    /// Heap allocations in 100 periods of 512 frames, stereo 44.1 → 48 kHz, from the first
    /// call on: after init, then again after a reset.
    @Test(arguments: kinds)
    func noPeriodAllocatesFromTheFirstCallOn(kind: RateConverterKind) throws {
        let converter = try makeRateConverter(kind, channelCount: 2, ratio: 48_000.0 / 44_100)
        let input = RateConverterSignal.tones([1_000, 1_500], sampleRate: 44_100, frames: 50_000)
        var output = [Float](repeating: 0, count: 1_024)
        func periods() -> UInt64 {
            input.withUnsafeBufferPointer { input in
                output.withUnsafeMutableBufferPointer { output in
                    var used = 0
                    spool_allocation_counting_begin()
                    for _ in 0..<100 {
                        used += converter.process(
                            input: input.baseAddress! + used * 2, inputFrames: input.count / 2 - used,
                            output: output.baseAddress!, outputCapacity: 512
                        ).inputUsed
                    }
                    return spool_allocation_counting_end()
                }
            }
        }
        #expect(periods() == 0, "\(kind) after init")
        converter.reset()
        #expect(periods() == 0, "\(kind) after reset")
    }

    // MARK: Parameters

    @Test(arguments: kinds)
    func outOfRangeChannelsAndRatiosAreRefused(kind: RateConverterKind) {
        for (channels, ratio) in [(0, 1.0), (9, 1.0), (2, 0), (2, .nan), (2, -1), (2, 1_000), (2, 1.0 / 1_000)] {
            let error = #expect(throws: AudioError.self) {
                _ = try makeRateConverter(kind, channelCount: channels, ratio: ratio)
            }
            #expect(error?.code == .invalidParameter, "\(kind) \(channels) channels at \(ratio)")
        }
    }

    @Test(arguments: [-1, 11, 100])
    func aSpeexQualityOutside0To10IsRefused(quality: Int) {
        let error = #expect(throws: AudioError.self) {
            _ = try SpeexEngine(quality: quality, channelCount: 2, ratio: 1.5)
        }
        #expect(error?.code == .invalidParameter)
        #expect(error?.message.contains("quality \(quality)") == true, "\(String(describing: error))")
    }

    @Test func libswresampleRefusingAnOptionNamesIt() {
        for (settings, option) in [
            (SwresampleSettings(filterSize: -4), "filter_size"),
            (SwresampleSettings(filterSize: 32, phaseShift: 40), "phase_shift"),
            (SwresampleSettings(filterSize: 32, cutoff: 1.5), "cutoff"),
            (SwresampleSettings(filterSize: 32, kaiserBeta: 40), "kaiser_beta"),
        ] {
            let error = #expect(throws: AudioError.self) {
                _ = try SwresampleEngine(settings: settings, channelCount: 2, ratio: 1.5)
            }
            #expect(error?.code == .libraryFailure)
            #expect(error?.message.contains(option) == true, "\(String(describing: error))")
        }
    }

    // MARK: The ratio as a fraction

    @Test func ratiosBecomeTheirSimplestFractions() throws {
        let cases: [(Double, Int, Int)] = [
            (48_000.0 / 44_100, 160, 147), (44_100.0 / 48_000, 147, 160), (48_000.0 / 22_050, 320, 147),
            (3, 3, 1), (1.0 / 16, 1, 16), (1.5, 3, 2),
        ]
        for (ratio, output, input) in cases {
            let fraction = try #require(RateFraction(approximating: ratio))
            #expect(fraction.output == output && fraction.input == input, "\(ratio) → \(fraction)")
        }
        let root = try #require(RateFraction(approximating: 2.squareRoot()))
        #expect(abs(root.ratio - 2.squareRoot()) < 1e-10 && root.input <= RateFraction.largestTerm)
        for bad in [0, -1, Double.nan, .infinity] { #expect(RateFraction(approximating: bad) == nil) }
    }

    @Test func theOwedLengthIsTheCeilingOfInputTimesRatio() throws {
        let fraction = try #require(RateFraction(approximating: 48_000.0 / 44_100))
        #expect(fraction.outputFrames(forInputFrames: 0) == 0)
        #expect(fraction.outputFrames(forInputFrames: 1) == 2)
        #expect(fraction.outputFrames(forInputFrames: 147) == 160)
        #expect(fraction.outputFrames(forInputFrames: 148) == 162)
        #expect(fraction.outputFrames(forInputFrames: 44_100) == 48_000)
        #expect(fraction.outputFrames(forInputFrames: Int.max / 2) > Int.max / 2)
    }

    // MARK: The measurements behind the table

    @Test func aliasingSeparatesAConverterThatFiltersFromOneThatDoesNot() throws {
        let down = RateConversion(from: 48_000, to: 44_100)
        #expect(down.aliasingToneHz == 23_025)
        let linear = try measureAliasing(.linear, conversion: down, channelCount: 1, seconds: 0.25)
        let soxr = try measureAliasing(.soxrHQ, conversion: down, channelCount: 1, seconds: 0.25)
        #expect(linear > -12, "linear interpolation lets the 23 kHz tone through: \(linear) dB")
        #expect(soxr < -110, "libsoxr HQ removes it: \(soxr) dB")

        let up = RateConversion(from: 44_100, to: 48_000)
        #expect(up.aliasingToneHz == 21_075)
        let linearImage = try measureAliasing(.linear, conversion: up, channelCount: 1, seconds: 0.25)
        let soxrImage = try measureAliasing(.soxrHQ, conversion: up, channelCount: 1, seconds: 0.25)
        #expect(linearImage > -15, "linear interpolation leaves the 23 kHz image: \(linearImage) dB")
        #expect(soxrImage < -110, "libsoxr HQ removes it: \(soxrImage) dB")
    }

    @Test func bandPowerFindsASineInsideTheBandAndNotOutside() {
        let rate = 48_000.0
        let sine = (0..<40_000).map { 0.3 * sin(2 * Double.pi * 23_000 * Double($0) / rate + 0.4) }
        let inside = RateConverterSignal.bandPower(sine, sampleRate: rate, band: 22_050...24_000)
        let outside = RateConverterSignal.bandPower(sine, sampleRate: rate, band: 0...21_000)
        #expect(abs(inside / (0.3 * 0.3 / 2) - 1) < 0.01, "inside: \(inside)")
        #expect(outside < 1e-8 * inside, "outside: \(outside)")
    }
}
