import Foundation
import SpoolResampling
import Spool

/// `spool bench resample`: every resampler kind at every benchmarked conversion (44.1 → 48,
/// 48 → 44.1, 22.05 → 48, 32 → 48 and 16 → 48 kHz), mono and stereo — SNR on two tones,
/// aliasing or imaging, frequency error, and input frames per second of CPU time, fixed and
/// varispeed. The table the converters behind the quality levels are chosen from.
enum ResampleBench {
    struct Row: Encodable {
        /// The converter's table name, e.g. `libspeexdsp q3`.
        let resampler: String
        /// Its `RateConverterKind` name, as `--resamplers` takes it.
        let id: String
        /// The quality level it serves; empty until the levels are chosen.
        let quality: String
        let from: Double
        let to: Double
        let channels: Int
        let snrDB: Double
        let snr1kHzDB: Double
        let snrHighDB: Double
        let highToneHz: Double
        let aliasingDB: Double
        /// `alias` (downsampling) or `image` (upsampling).
        let aliasingMeasure: String
        let aliasingToneHz: Double
        let frequencyErrorPercent: Double
        /// `nil` for OpenAL Soft's resamplers (quality only; see `spool bench mix`).
        let framesPerSecond: Double?
        /// `framesPerSecond` over the input rate: streams like it one core keeps up with.
        let realTime: Double?
        let varispeedFramesPerSecond: Double?
        /// The speed figures are observed (thread CPU time on this machine).
        let timing: String
        /// Where the queue engine uses it: at playback rate 1, or under varispeed.
        let engineUse: String
    }

    static func run(_ words: [String]) throws {
        guard let bench = try BenchInvocation(
            words, valued: ["seconds", "repeats", "resamplers", "peers"], switches: ["quick", "no-peer"]
        ) else { return }
        let args = bench.arguments
        let quick = args.has("quick")
        let seconds = try args.double("seconds", in: 0.05...120) ?? (quick ? 0.2 : 3)
        let repeats = try args.int("repeats", in: 1...101) ?? (quick ? 3 : 5)
        let kinds = try resamplers(args.string("resamplers"))

        print("""
            each resampler at each conversion, mono and stereo; tones of amplitude 0.5, 1 s of input each:
              SNR dB: against the ideal sine, phase fitted (gain error, aliasing, imaging and noise count as noise); \
            the 1 kHz tone and a high one (0.68 of the lower Nyquist)
              alias/image dB: downsampling: a tone between the two Nyquists, output power over input power; \
            upsampling: power between the two Nyquists after the tone is taken out, over the tone's
              speed: input frames per second of the converting thread's CPU time, \(seconds) s per run, \
            median of \(repeats) runs, 512-frame periods; observed
              OpenAL Soft's resamplers (AL_SOFT_source_resampler): one source with direct channels on a loopback \
            device; a tone more than 10 ppm off (its 1/4096-frame steps) is fitted at its own frequency; \
            quality only: their speed is where OpenAL Soft mixes (spool bench mix)
            """)
        for conversion in RateConversion.benchmarked {
            let measure = conversion.isDownsampling ? "aliasing" : "imaging"
            print("  \(conversion): SNR at 1 and \(kilohertz(conversion.highToneHz)) kHz, \(measure) at \(kilohertz(conversion.aliasingToneHz)) kHz")
        }
        print("")

        var tableRows: [[String]] = []
        var rows: [Row] = []
        var measured: [ResamplerTableRow] = []
        func add(_ r: ResamplerTableRow, id: String) {
            measured.append(r)
            rows.append(Row(
                resampler: r.name, id: id, quality: levels(r.kind).map(\.rawValue).joined(separator: ","),
                from: r.conversion.inputRate,
                to: r.conversion.outputRate, channels: r.channelCount, snrDB: r.snrDB, snr1kHzDB: r.lowToneSNRDB,
                snrHighDB: r.highToneSNRDB, highToneHz: r.conversion.highToneHz, aliasingDB: r.aliasingDB,
                aliasingMeasure: r.aliasingMeasure.rawValue, aliasingToneHz: r.conversion.aliasingToneHz,
                frequencyErrorPercent: r.frequencyErrorPercent, framesPerSecond: r.kind == nil ? nil : r.framesPerSecond,
                realTime: r.kind == nil ? nil : r.framesPerSecond / r.conversion.inputRate,
                varispeedFramesPerSecond: r.varispeedFramesPerSecond, timing: "observed",
                engineUse: engineUse(r.kind, name: r.name)))
            tableRows.append([
                r.name, conversionName(r.conversion),
                "\(r.channelCount)", decibels(r.lowToneSNRDB), decibels(r.highToneSNRDB),
                "\(decibels(r.aliasingDB)) \(r.aliasingMeasure.rawValue)",
                String(format: "%+.4f", r.frequencyErrorPercent), speedCell(r),
                varispeedCell(r),
            ])
        }
        _ = try measureResamplerTable(kinds: kinds, speedSeconds: seconds, repeats: repeats) { add($0, id: $0.kind?.rawValue ?? "") }
        // OpenAL Soft's own resamplers through the same analysis: the peer the levels answer to.
        if !args.has("no-peer") {
            let peers = try args.string("peers").map { list in
                try list.split(separator: ",").map { try OpenALSoftPeer.resampler(named: String($0)) }
            } ?? OpenALSoftPeer.resamplers()
            for resampler in peers {
                for conversion in RateConversion.benchmarked {
                    for channelCount in [1, 2] {
                        let row = try measureResamplerQuality(
                            converting: { input, channels, from, to in
                                try OpenALSoftPeer.convert(input, channelCount: channels, from: from, to: to, resampler: resampler)
                            },
                            name: "OpenAL Soft \(resampler)", conversion: conversion, channelCount: channelCount)
                        add(row, id: "openal-soft:\(resampler.name)")
                    }
                }
            }
        }
        print(BenchTable.render(
            ["resampler", "kHz", "ch", "SNR 1k dB", "SNR hi dB", "alias/image dB", "freq err %", "Mframes/s",
             "varispeed Mframes/s"],
            tableRows))
        print("")
        print("summary per resampler (worst over the conversions and channel counts; speed stereo 44.1→48 and the slowest stereo conversion):")
        print(BenchTable.render(
            ["resampler", "min SNR dB", "max alias/image dB", "max |freq err| %", "Mframes/s 44.1→48",
             "slowest Mframes/s", "varispeed 44.1→48", "engine use"],
            summary(measured)))
        try bench.writeReport(rows)
    }

    /// The kinds `--resamplers` names (comma-separated `RateConverterKind` names), or all.
    static func resamplers(_ list: String?) throws -> [RateConverterKind] {
        guard let list else { return RateConverterKind.allCases }
        return try list.split(separator: ",").map { name in
            let name = name.trimmingCharacters(in: .whitespaces)
            guard let kind = RateConverterKind(rawValue: name) else {
                let known = RateConverterKind.allCases.map(\.rawValue).joined(separator: ", ")
                throw UsageError("--resamplers: unknown resampler '\(name)' (known: \(known))")
            }
            return kind
        }
    }

    static func summary(_ rows: [ResamplerTableRow]) -> [[String]] {
        var order: [String] = []
        for row in rows where !order.contains(row.name) { order.append(row.name) }
        let reference = RateConversion(from: 44_100, to: 48_000)
        return order.map { name in
            let mine = rows.filter { $0.name == name }
            let kind = mine.first?.kind
            let stereo = mine.filter { $0.channelCount == 2 }
            let cd = stereo.first { $0.conversion == reference }
            return [
                name,
                decibels(mine.map(\.snrDB).min() ?? 0),
                decibels(mine.map(\.aliasingDB).max() ?? 0),
                String(format: "%.4f", mine.map { abs($0.frequencyErrorPercent) }.max() ?? 0),
                cd.map(speedCell) ?? "—",
                kind == nil ? "—" : stereo.min { $0.framesPerSecond < $1.framesPerSecond }.map {
                    String(format: "%.2f", $0.framesPerSecond / 1e6) + " (\(conversionName($0.conversion)))"
                } ?? "—",
                cd.map(varispeedCell) ?? "—",
                engineUse(kind, name: name),
            ]
        }
    }

    /// Millions of input frames per second, `—` for a peer's resampler (quality only).
    static func speedCell(_ row: ResamplerTableRow) -> String {
        row.kind == nil ? "—" : String(format: "%.2f", row.framesPerSecond / 1e6)
    }

    /// The varispeed speed, `fixed only` for a fixed-ratio kind, `—` for a peer's resampler.
    static func varispeedCell(_ row: ResamplerTableRow) -> String {
        guard row.kind != nil else { return "—" }
        return row.varispeedFramesPerSecond.map { String(format: "%.2f", $0 / 1e6) } ?? "fixed only"
    }

    /// The levels whose fixed-ratio or varispeed lane converts with `kind`.
    static func levels(_ kind: RateConverterKind?) -> [ResamplingQuality] {
        ResamplingQuality.allCases.filter { VoiceResampler.fixedKind($0) == kind || VoiceResampler.varispeedKind($0) == kind }
    }

    /// Where the queue engine uses a kind (its lane and levels), or the level a peer's
    /// resampler is matched with in `bench mix` and `bench capacity`.
    static func engineUse(_ kind: RateConverterKind?, name: String) -> String {
        guard let kind else {
            let matched = ResamplingQuality.allCases.filter { name.lowercased().contains(MixBench.peerResampler[$0] ?? "-") }
            return matched.isEmpty ? "" : "peer of " + matched.map(\.rawValue).joined(separator: ", ")
        }
        var uses: [String] = []
        let fixed = ResamplingQuality.allCases.filter { VoiceResampler.fixedKind($0) == kind }
        let varispeed = ResamplingQuality.allCases.filter { VoiceResampler.varispeedKind($0) == kind }
        if !fixed.isEmpty { uses.append("rate 1 at " + fixed.map(\.rawValue).joined(separator: ", ")) }
        if !varispeed.isEmpty { uses.append("varispeed at " + varispeed.map(\.rawValue).joined(separator: ", ")) }
        return uses.joined(separator: "; ")
    }

    /// `44.1→48`: a conversion in a table cell.
    static func conversionName(_ conversion: RateConversion) -> String {
        "\(kilohertz(conversion.inputRate))→\(kilohertz(conversion.outputRate))"
    }

    static func decibels(_ value: Double) -> String { String(format: "%.1f", value) }

    static func kilohertz(_ hertz: Double) -> String { RateConversion.kilohertz(hertz) }
}
