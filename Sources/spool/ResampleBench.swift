import Foundation
import Spool

/// `spool bench resample`: every candidate resampler on the same signals — SNR and frequency
/// error on 1 kHz and 15 kHz sines (44.1 ↔ 48 kHz, mono and stereo) and input frames per
/// second, fixed and varispeed. The figures behind `RateConverterKind.default`.
enum ResampleBench {
    struct Row: Encodable {
        let kind: String
        let snrDB: Double
        let frequencyErrorPercent: Double
        let framesPerSecond: Double
        let realTime: Double
        let varispeedFramesPerSecond: Double?
        /// Where the queue engine uses it: at playback rate 1, or under varispeed.
        let engineUse: String
    }

    static func run(_ words: [String]) throws {
        let args = try Arguments(words, valued: ["seconds", "json"], switches: ["help"])
        if args.has("help") { print(BenchCommand.help); return }
        let seconds = try args.double("seconds", in: 0.5...120) ?? 10
        let rows = try benchmarkRateConverters(RateConverterKind.allCases, seconds: seconds).map { r in
            Row(kind: r.name, snrDB: r.snrDB, frequencyErrorPercent: r.frequencyErrorPercent,
                framesPerSecond: r.framesPerSecond, realTime: r.realtimeFactor,
                varispeedFramesPerSecond: r.varispeedFramesPerSecond,
                engineUse: r.kind == .soxrHQ ? "engine at rate 1" : r.kind == .default ? "engine under varispeed" : "")
        }
        print("speed: input frames (stereo 44.1 → 48 kHz) per second of the converting thread's CPU time, median of 5 runs; observed")
        print(BenchCommand.table(
            ["resampler", "SNR dB", "freq err %", "Mframes/s", "× RT", "varispeed Mframes/s", ""],
            rows.map { r in
                [r.kind, String(format: "%.1f", r.snrDB), String(format: "%.4f", r.frequencyErrorPercent),
                 String(format: "%.2f", r.framesPerSecond / 1e6), String(format: "%.0f", r.realTime),
                 r.varispeedFramesPerSecond.map { String(format: "%.2f", $0 / 1e6) } ?? "fixed only",
                 r.engineUse]
            }))
        if let json = args.string("json") { try BenchCommand.writeJSON(rows, to: json) }
    }
}
