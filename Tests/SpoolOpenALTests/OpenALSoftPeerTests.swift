import Foundation
import SpoolCore
import Testing
@testable import SpoolOpenAL
@testable import SpoolBenchmarks
import SpoolTestSupport

/// OpenAL Soft converting by itself, the benchmarks' peer: its resamplers are listed, and each
/// converts a sine to the device rate at the quality its order gives.
@Suite("OpenAL Soft's own resamplers")
struct OpenALSoftPeerTests {
    /// Signal to residual, in dB, of `x` against the best-fitting sine at `frequency` (any phase).
    static func fittedSNR(_ x: [Float], frequency: Double, rate: Double) -> Double {
        let w = 2 * Double.pi * frequency / rate
        var ss = 0.0, sc = 0.0, cc = 0.0, xs = 0.0, xc = 0.0
        for (i, v) in x.enumerated() {
            let s = sin(w * Double(i)), c = cos(w * Double(i))
            ss += s * s; sc += s * c; cc += c * c; xs += Double(v) * s; xc += Double(v) * c
        }
        let det = ss * cc - sc * sc
        let a = (xs * cc - xc * sc) / det, b = (xc * ss - xs * sc) / det
        var signal = 0.0, noise = 0.0
        for (i, v) in x.enumerated() {
            let fit = a * sin(w * Double(i)) + b * cos(w * Double(i))
            signal += fit * fit
            noise += (Double(v) - fit) * (Double(v) - fit)
        }
        return 10 * log10(signal / max(noise, 1e-30))
    }

    @Test func theResamplersAreListedWithLinearTheDefault() throws {
        let all = try OpenALSoftPeer.resamplers()
        #expect(all.count >= 4, "\(all)")
        #expect(all.first { $0.isDefault }?.name.lowercased().contains("linear") == true, "\(all)")
        #expect(try OpenALSoftPeer.resampler(named: "23rd").name.contains("Sinc"))
        expectError(.invalidParameter) { _ = try OpenALSoftPeer.resampler(named: "no such") }
    }

    @Test func eachConvertsASineAtTheQualityOfItsOrder() throws {
        let source = try AudioFormat(sampleRate: 44_100, channelCount: 2)
        let frames = 44_100 / 2
        var samples = [Float](repeating: 0, count: frames * 2)
        for i in 0..<frames {
            let v = Float(sin(2 * Double.pi * 5_000 * Double(i) / 44_100)) * 0.5
            samples[2 * i] = v
            samples[2 * i + 1] = v
        }
        let sine = try PCMBuffer(format: source, samples: samples)
        var snrs: [String: Double] = [:]
        for name in ["linear", "11th", "23rd"] {
            let converted = try OpenALSoftPeer.convert(sine, deviceRate: 48_000, resampler: try OpenALSoftPeer.resampler(named: name))
            #expect(converted.frameCount == 24_000, "the duration at 48 kHz")
            let left = stride(from: 2 * 4_000, to: 2 * 12_000, by: 2).map { converted.samples[$0] }
            // OpenAL Soft steps through a source in 1/4096ths of a frame (1.19), so the tone
            // comes out some tens of ppm off: the best fit over ±200 ppm is its SNR.
            func snr(_ ppm: Double) -> Double { Self.fittedSNR(left, frequency: 5_000 * (1 + ppm * 1e-6), rate: 48_000) }
            let coarse = stride(from: -200.0, through: 200, by: 8).max { snr($0) < snr($1) } ?? 0
            snrs[name] = stride(from: coarse - 8, through: coarse + 8, by: 0.25).map(snr).max()
        }
        // Linear interpolation of a 5 kHz tone at 44.1 kHz leaves its images about 34 dB down;
        // the band-limited sincs reach about 51 and 74 dB (measured: 33.9, 51.1, 74.2).
        let linear = try #require(snrs["linear"]), sinc12 = try #require(snrs["11th"]), sinc24 = try #require(snrs["23rd"])
        #expect(linear > 28 && linear < 40, "\(snrs)")
        #expect(sinc12 > linear + 12 && sinc24 > sinc12 + 15, "\(snrs)")
    }
}

