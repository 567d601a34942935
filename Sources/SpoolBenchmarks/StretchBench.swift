import Foundation
import SpoolResampling
import Spool

/// `spool bench stretch [FILE]`: what pitch-preserving tempo (`TimeStretchedDecoder` over
/// libsoundtouch) costs and how well it does.
///
/// Cost: the measuring thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`) to read a whole stream
/// (a FILE, or a synthesised 60 s stereo 44.1 kHz signal) in reads of 4096 frames, per second
/// of the audio that comes out, median of `--runs` runs: plain decode + copy against decode +
/// stretch at each tempo. The stretcher is made before the clock starts (its init warms
/// SoundTouch up on silence, as a player's prepare step would).
///
/// Quality, on synthesised signals whatever the source: the stretched length against
/// source ÷ tempo; the dominant frequency of a 440 Hz tone (a DFT peak over the middle) against
/// 440 Hz; and the residual of a three-note chord after fitting its three sinusoids block by
/// block (2048 frames, amplitude and phase free in each block), which is what the seams add.
/// `--sweep` compares SoundTouch settings on tones and chords: the measurement behind
/// `TimeStretcher.Settings.default`.
enum StretchBench {
    struct Row: Encodable {
        /// `copy` (decode + copy) or `stretch` (decode + time-stretch).
        let stage: String
        let tempo: Double
        /// What was read: the FILE, or the synthesised signal.
        let source: String
        let sourceSeconds: Double
        let runs: Int
        /// CPU seconds of the measuring thread per second of audio out (median).
        let cpuPerSecond: Double
        /// Seconds of audio out per CPU second.
        let realTimeFactor: Double
        /// `cpuPerSecond` over the copy stage's.
        let ratioToCopy: Double
        /// (frames out − source frames ÷ tempo) ÷ (source frames ÷ tempo), in percent.
        let durationError: Double
        /// (dominant frequency − 440 Hz) ÷ 440 Hz of a stretched 440 Hz tone, in percent.
        let frequencyError: Double?
        /// Residual of a stretched chord beyond its three sinusoids, in dB of its power.
        let chordResidualDB: Double?
        /// Every figure here is observed.
        let kind = "observed"
    }

    struct SweepRow: Encodable {
        let settings: String
        let tempo: Double
        /// Mean residual over four tones beyond their sinusoid, in dB.
        let toneResidualDB: Double
        /// Mean residual over four chords beyond their three sinusoids, in dB.
        let chordResidualDB: Double
        /// CPU seconds per second of output, stereo 44.1 kHz, at this tempo.
        let cpuPerSecond: Double
        /// `TimeStretcher.positionToleranceFrames` in milliseconds.
        let positionToleranceMs: Double
        /// RMS deviation of clicks (4 a second, over a quiet chord) from an even grid, in ms.
        let clickJitterMs: Double
        /// Clicks doubled or lost, in percent of the clicks.
        let clickErrorsPercent: Double
    }

    static let rate = 44_100.0

    static func run(_ words: [String]) throws {
        guard let bench = try BenchInvocation(
            words, valued: ["seconds", "runs", "tempi"], switches: ["sweep"]
        ) else { return }
        let args = bench.arguments
        guard args.operands.count <= 1 else { throw UsageError("bench stretch takes at most one FILE") }
        let seconds = try args.double("seconds", in: 1...600) ?? 60
        let runs = try args.int("runs", in: 1...100) ?? 5
        var tempi = [1.5, 0.75]
        if let list = args.string("tempi") {
            tempi = try list.split(separator: ",").map { word in
                guard let tempo = Double(word), TimeStretcher.tempoRange.contains(tempo) else {
                    throw UsageError("--tempi takes tempi within 0.5...2, not '\(word)'")
                }
                return tempo
            }
        }

        let source: Source
        if let path = args.operands.first {
            source = .file(path)
            _ = try source.makeDecoder()  // fail early, with the decoder's message
        } else {
            source = .synthesised(synthesiseStereo(seconds: seconds))
        }

        // Decode + copy.
        var copyTimes: [Double] = []
        var sourceFrames = 0
        for _ in 0..<runs {
            let decoder = try source.makeDecoder()
            let (frames, cpu) = try readAll(decoder)
            sourceFrames = frames
            copyTimes.append(cpu)
        }
        guard sourceFrames > 0 else { throw AudioError(.emptyInput, "\(source.name): no audio to stretch") }
        let format = try source.makeDecoder().format
        let sourceSeconds = format.seconds(forFrames: sourceFrames)
        let copyCPU = median(copyTimes) / sourceSeconds
        var rows = [Row(stage: "copy", tempo: 1, source: source.name, sourceSeconds: sourceSeconds, runs: runs,
                        cpuPerSecond: copyCPU, realTimeFactor: 1 / copyCPU, ratioToCopy: 1, durationError: 0,
                        frequencyError: nil, chordResidualDB: nil)]

        // Decode + stretch.
        for tempo in tempi {
            var times: [Double] = []
            var outputFrames = 0
            for _ in 0..<runs {
                let decoder = try TimeStretchedDecoder(wrapping: source.makeDecoder(), tempo: tempo)
                let (frames, cpu) = try readAll(decoder)
                outputFrames = frames
                times.append(cpu)
            }
            let expected = Double(sourceFrames) / tempo
            let outputSeconds = format.seconds(forFrames: outputFrames)
            let cpu = median(times) / outputSeconds
            let quality = try Quality.measure(tempo: tempo, settings: .default)
            rows.append(Row(stage: "stretch", tempo: tempo, source: source.name, sourceSeconds: sourceSeconds, runs: runs,
                            cpuPerSecond: cpu, realTimeFactor: 1 / cpu, ratioToCopy: cpu / copyCPU,
                            durationError: 100 * (Double(outputFrames) - expected) / expected,
                            frequencyError: quality.frequencyError, chordResidualDB: quality.chordResidualDB))
        }

        print("source: \(source.name), \(format), \(String(format: "%.1f", sourceSeconds)) s; settings: \(TimeStretcher.Settings.default)")
        print("cost: CPU time of the measuring thread (CLOCK_THREAD_CPUTIME_ID) per second of audio out, reads of 4096 frames, median of \(runs) runs; observed")
        print("quality: on synthesised 44.1 kHz signals (a 440 Hz tone; an A major chord, fitted per 2048-frame block); observed")
        print(BenchTable.render(
            ["stage", "tempo", "CPU ms/s", "× real time", "× copy", "duration err %", "freq err %", "chord residual dB"],
            rows.map { r in
                [r.stage, String(format: "%.2f", r.tempo), String(format: "%.3f", r.cpuPerSecond * 1000),
                 String(format: "%.0f", r.realTimeFactor), String(format: "%.1f", r.ratioToCopy),
                 String(format: "%.4f", r.durationError), r.frequencyError.map { String(format: "%.3f", $0) } ?? "—",
                 r.chordResidualDB.map { String(format: "%.1f", $0) } ?? "—"]
            }))

        var sweep: [SweepRow] = []
        if args.has("sweep") {
            sweep = try runSweep()
            print("\nsettings sweep: residual beyond the sinusoids (mean of 4 tones; of 4 chords), CPU per second (stereo, 10 s), position tolerance; observed")
            print(BenchTable.render(
                ["settings", "tempo", "tone dB", "chord dB", "click jitter ms", "clicks wrong %", "CPU ms/s", "position ± ms"],
                sweep.map { r in
                    [r.settings, String(format: "%.2f", r.tempo), String(format: "%.1f", r.toneResidualDB),
                     String(format: "%.1f", r.chordResidualDB), String(format: "%.2f", r.clickJitterMs),
                     String(format: "%.1f", r.clickErrorsPercent), String(format: "%.3f", r.cpuPerSecond * 1000),
                     String(format: "%.1f", r.positionToleranceMs)]
                }))
            let settingsNames = sweep.reduce(into: [String]()) { names, row in
                if !names.contains(row.settings) { names.append(row.settings) }
            }
            print("\nmean over the tempi (dB; lower is better)")
            print(BenchTable.render(
                ["settings", "tone dB", "chord dB", "both dB", "click jitter ms", "clicks wrong %", "CPU ms/s"],
                settingsNames.map { name in
                    let own = sweep.filter { $0.settings == name }
                    func mean(_ value: (SweepRow) -> Double) -> Double { own.map(value).reduce(0, +) / Double(own.count) }
                    let tone = mean(\.toneResidualDB), chord = mean(\.chordResidualDB)
                    return [name, String(format: "%.1f", tone), String(format: "%.1f", chord),
                            String(format: "%.1f", (tone + chord) / 2), String(format: "%.2f", mean(\.clickJitterMs)),
                            String(format: "%.1f", mean(\.clickErrorsPercent)), String(format: "%.3f", mean(\.cpuPerSecond) * 1000)]
                }))
        }

        if args.has("sweep") {
            struct Report: Encodable { let rows: [Row]; let sweep: [SweepRow] }
            try bench.writeReport(Report(rows: rows, sweep: sweep))
        } else {
            try bench.writeReport(rows)
        }
    }

    // MARK: - Sources

    enum Source {
        case file(String)
        case synthesised(MemoryDecoder.Samples)

        var name: String {
            switch self {
            case .file(let path): URL(fileURLWithPath: path).lastPathComponent
            case .synthesised: "synthesised (chords and a little noise)"
            }
        }

        func makeDecoder() throws -> any AudioDecoder {
            switch self {
            case .file(let path): try DecoderRegistry.shared.open(path: path)
            case .synthesised(let samples): try MemoryDecoder(samples)
            }
        }
    }

    /// Interleaved Float32 in memory, served as a decoder: the "decode" of the synthesised source.
    final class MemoryDecoder: AudioDecoder {
        final class Samples {
            let values: [Float]
            let channels: Int
            init(_ values: [Float], channels: Int) { (self.values, self.channels) = (values, channels) }
        }
        let samples: Samples
        let format: AudioFormat
        var frameCount: Int { samples.values.count / samples.channels }
        private(set) var position = 0
        var info: AudioFileInfo { AudioFileInfo(container: "memory", codec: "PCM 32-bit float") }
        var warnings: [DecodeWarning] { [] }

        init(_ samples: Samples) throws {
            self.samples = samples
            format = try AudioFormat(sampleRate: StretchBench.rate, channelCount: samples.channels)
        }

        func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int {
            let frames = min(buffer.count / samples.channels, frameCount - position)
            guard frames > 0, let base = buffer.baseAddress else { return 0 }
            samples.values.withUnsafeBufferPointer { all in
                base.update(from: all.baseAddress! + position * samples.channels, count: frames * samples.channels)
            }
            position += frames
            return frames
        }

        func seek(toFrame frame: Int) throws {
            guard (0...frameCount).contains(frame) else { throw AudioError(.outOfRange, "frame \(frame) is outside 0...\(frameCount)") }
            position = frame
        }
    }

    /// Left an A major chord, right a C minor chord, each with noise 30 dB down.
    static func synthesiseStereo(seconds: Double) -> MemoryDecoder.Samples {
        let frames = Int(seconds * rate)
        var values = [Float](repeating: 0, count: 2 * frames)
        var state: UInt64 = 1
        let left = [440, 554.37, 659.26], right = [261.63, 311.13, 392.0]
        for f in 0..<frames {
            let t = Double(f) / rate
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let noise = (Double(state >> 40) / Double(1 << 24) - 0.5) * 0.03
            values[2 * f] = Float(left.reduce(noise) { $0 + 0.25 * sin(2 * .pi * $1 * t) })
            values[2 * f + 1] = Float(right.reduce(-noise) { $0 + 0.25 * sin(2 * .pi * $1 * t) })
        }
        return MemoryDecoder.Samples(values, channels: 2)
    }

    // MARK: - Measuring

    /// Reads `decoder` to its end in reads of 4096 frames, copying each into a second buffer
    /// (what a feeder does with a decoded buffer): the frames read and the thread CPU time.
    static func readAll(_ decoder: any AudioDecoder) throws -> (frames: Int, cpuSeconds: Double) {
        let channels = decoder.format.channelCount
        var buffer = [Float](repeating: 0, count: 4096 * channels)
        var copy = [Float](repeating: 0, count: 4096 * channels)
        var total = 0
        let start = HostTime.threadCPUSeconds()
        while true {
            let got = try buffer.withUnsafeMutableBufferPointer { try decoder.read(into: $0) }
            if got == 0 { break }
            copy.withUnsafeMutableBufferPointer { to in
                buffer.withUnsafeBufferPointer { from in to.baseAddress!.update(from: from.baseAddress!, count: got * channels) }
            }
            total += got
        }
        let cpu = HostTime.threadCPUSeconds() - start
        // Keep the copy observable, so that it is not optimised away.
        if copy[0].isNaN { print("", terminator: "") }
        return (total, cpu)
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        let n = sorted.count
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2
    }

    // MARK: - Quality

    enum Quality {
        /// Stretches mono `frequencies` (amplitudes summing to 0.75) for `seconds`.
        static func stretch(_ frequencies: [Double], seconds: Double, tempo: Double,
                            settings: TimeStretcher.Settings) throws -> [Float] {
            let frames = Int(seconds * rate)
            let amplitude = 0.75 / Double(frequencies.count)
            let values = (0..<frames).map { f -> Float in
                let t = Double(f) / rate
                var x = 0.0
                for (k, hz) in frequencies.enumerated() { x += amplitude * sin(2 * .pi * hz * t + Double(k)) }
                return Float(x)
            }
            let decoder = try TimeStretchedDecoder(
                wrapping: MemoryDecoder(MemoryDecoder.Samples(values, channels: 1)), tempo: tempo, settings: settings)
            return try decoder.decodeAll().samples
        }

        static func measure(tempo: Double, settings: TimeStretcher.Settings) throws
            -> (frequencyError: Double, chordResidualDB: Double) {
            let tone = try stretch([440], seconds: 10, tempo: tempo, settings: settings)
            let frequency = dominantFrequency(tone, around: 440)
            let chordFrequencies = [440, 554.37, 659.26]
            let chord = try stretch(chordFrequencies, seconds: 6, tempo: tempo, settings: settings)
            return (100 * (frequency - 440) / 440, 10 * log10(residual(chord, frequencies: chordFrequencies)))
        }

        /// The frequency of the highest spectral peak within ±20 % of `around` over the middle
        /// 32768 frames (Hann window, Goertzel on a 1 Hz grid, then 0.01 Hz).
        static func dominantFrequency(_ x: [Float], around: Double) -> Double {
            let n = min(32_768, x.count)
            let start = (x.count - n) / 2
            let windowed = (0..<n).map { i in Double(x[start + i]) * (0.5 - 0.5 * cos(2 * .pi * Double(i) / Double(n - 1))) }
            func magnitude(_ hz: Double) -> Double {
                let c = 2 * cos(2 * .pi * hz / rate)
                var s1 = 0.0, s2 = 0.0
                for v in windowed {
                    let s0 = v + c * s1 - s2
                    s2 = s1
                    s1 = s0
                }
                return s1 * s1 + s2 * s2 - c * s1 * s2
            }
            func peak(_ grid: StrideThrough<Double>) -> Double {
                var best = 0.0, bestMagnitude = -1.0
                for hz in grid {
                    let m = magnitude(hz)
                    if m > bestMagnitude { (best, bestMagnitude) = (hz, m) }
                }
                return best
            }
            let coarse = peak(stride(from: around * 0.8, through: around * 1.2, by: 1))
            return peak(stride(from: coarse - 1, through: coarse + 1, by: 0.01))
        }

        /// Clicks (10 ms bursts of 3 kHz decaying in 1.5 ms, peak 0.8) every 250 ms over a quiet
        /// C major chord (0.1), `seconds` long, stretched: how regularly the clicks come out.
        /// Returns the RMS deviation of the clicks' onsets from an even grid at the stretched
        /// spacing (after removing the mean offset), in milliseconds, and the share of clicks
        /// doubled or lost, in percent.
        static func clickTiming(seconds: Double, tempo: Double, settings: TimeStretcher.Settings) throws
            -> (jitterMs: Double, errorsPercent: Double) {
            let frames = Int(seconds * rate), period = Int(0.25 * rate)
            let values = (0..<frames).map { f -> Float in
                let t = Double(f) / rate
                var x = 0.0
                for hz in [261.63, 329.63, 392.0] { x += 0.1 / 3 * sin(2 * .pi * hz * t) }
                let sinceClick = Double(f % period) / rate
                if sinceClick < 0.01 { x += 0.8 * exp(-sinceClick / 0.0015) * sin(2 * .pi * 3000 * sinceClick) }
                return Float(x)
            }
            let decoder = try TimeStretchedDecoder(
                wrapping: MemoryDecoder(MemoryDecoder.Samples(values, channels: 1)), tempo: tempo, settings: settings)
            let out = try decoder.decodeAll().samples
            // Onsets: the envelope (one pole, 0.5 ms) rising through 0.3 after 20 ms below 0.15.
            var onsets: [Int] = []
            var envelope = 0.0, quietFrames = Int.max / 2
            let pole = exp(-1 / (0.0005 * rate)), quietNeeded = Int(0.02 * rate)
            for (i, v) in out.enumerated() {
                envelope = max(Double(abs(v)), envelope * pole)
                if envelope > 0.3, quietFrames >= quietNeeded { onsets.append(i) }
                quietFrames = envelope < 0.15 ? quietFrames + 1 : 0
            }
            let spacing = Double(period) / tempo
            let deviations = onsets.map { o -> Double in
                let k = (Double(o) / spacing).rounded()
                return Double(o) - k * spacing
            }
            let offset = deviations.reduce(0, +) / Double(max(1, deviations.count))
            let jitter = (deviations.reduce(0) { $0 + ($1 - offset) * ($1 - offset) } / Double(max(1, deviations.count))).squareRoot()
            let matched = Set(onsets.map { (Double($0 - Int(offset)) / spacing).rounded() })
            let expected = Int(seconds / 0.25)
            let errors = (onsets.count - matched.count) + max(0, expected - matched.count)
            return (1000 * jitter / rate, 100 * Double(errors) / Double(expected))
        }

        /// Power left after fitting `frequencies` (a cosine and a sine each, free in every block
        /// of 2048 frames) over the middle three quarters of `x`, over the power of `x`.
        static func residual(_ x: [Float], frequencies: [Double]) -> Double {
            let block = 2048, m = 2 * frequencies.count
            // The basis and its normal matrix are the same in every block.
            var basis = [[Double]](repeating: [Double](repeating: 0, count: block), count: m)
            for (k, hz) in frequencies.enumerated() {
                for i in 0..<block {
                    let w = 2 * .pi * hz * Double(i) / rate
                    basis[2 * k][i] = cos(w)
                    basis[2 * k + 1][i] = sin(w)
                }
            }
            var normal = [[Double]](repeating: [Double](repeating: 0, count: m), count: m)
            for r in 0..<m {
                for c in 0..<m { normal[r][c] = zip(basis[r], basis[c]).reduce(0) { $0 + $1.0 * $1.1 } }
            }
            var left = 0.0, total = 0.0
            var start = x.count / 8
            while start + block < x.count * 7 / 8 {
                var a = normal
                var rhs = (0..<m).map { r in (0..<block).reduce(0.0) { $0 + basis[r][$1] * Double(x[start + $1]) } }
                // Gaussian elimination: the matrix is symmetric positive definite.
                for p in 0..<m {
                    for r in (p + 1)..<m {
                        let q = a[r][p] / a[p][p]
                        for c in p..<m { a[r][c] -= q * a[p][c] }
                        rhs[r] -= q * rhs[p]
                    }
                }
                var coefficients = [Double](repeating: 0, count: m)
                for r in stride(from: m - 1, through: 0, by: -1) {
                    var s = rhs[r]
                    for c in (r + 1)..<m { s -= a[r][c] * coefficients[c] }
                    coefficients[r] = s / a[r][r]
                }
                for i in 0..<block {
                    var fit = 0.0
                    for r in 0..<m { fit += coefficients[r] * basis[r][i] }
                    let v = Double(x[start + i])
                    left += (v - fit) * (v - fit)
                    total += v * v
                }
                start += block
            }
            return left / max(total, 1e-30)
        }
    }

    // MARK: - Sweep

    static func runSweep() throws -> [SweepRow] {
        typealias S = TimeStretcher.Settings
        let candidates: [S] = [
            .default,
            S(sequenceMilliseconds: 20), S(sequenceMilliseconds: 30), S(sequenceMilliseconds: 40),
            S(sequenceMilliseconds: 50), S(sequenceMilliseconds: 60), S(sequenceMilliseconds: 80),
            S(sequenceMilliseconds: 100),
            S(seekWindowMilliseconds: 10), S(seekWindowMilliseconds: 15), S(seekWindowMilliseconds: 20),
            S(seekWindowMilliseconds: 25), S(seekWindowMilliseconds: 30), S(seekWindowMilliseconds: 40),
            S(seekWindowMilliseconds: 25, overlapMilliseconds: 12), S(seekWindowMilliseconds: 25, overlapMilliseconds: 16),
            S(overlapMilliseconds: 4), S(overlapMilliseconds: 16), S(overlapMilliseconds: 24),
            S(quickSeek: true),
        ]
        let tones: [[Double]] = [[220], [440], [700], [1250]]
        let chords: [[Double]] = [[440, 554.37, 659.26], [196, 246.94, 293.66], [261.63, 311.13, 392], [150, 1000, 1234]]
        let stereo = synthesiseStereo(seconds: 10)
        var rows: [SweepRow] = []
        for settings in candidates {
            for tempo in [0.5, 0.75, 1.5, 2] {
                func meanDB(_ signals: [[Double]]) throws -> Double {
                    var sum = 0.0
                    for frequencies in signals {
                        let out = try Quality.stretch(frequencies, seconds: 6, tempo: tempo, settings: settings)
                        sum += Quality.residual(out, frequencies: frequencies)
                    }
                    return 10 * log10(sum / Double(signals.count))
                }
                var times: [Double] = []
                var outputFrames = 0
                var tolerance = 0.0
                for _ in 0..<3 {
                    let decoder = try TimeStretchedDecoder(wrapping: MemoryDecoder(stereo), tempo: tempo, settings: settings)
                    tolerance = decoder.positionToleranceFrames
                    let (frames, cpu) = try readAll(decoder)
                    outputFrames = frames
                    times.append(cpu)
                }
                let clicks = try Quality.clickTiming(seconds: 20, tempo: tempo, settings: settings)
                rows.append(SweepRow(
                    settings: settings == .default ? "default (\(settings))" : settings.description, tempo: tempo,
                    toneResidualDB: try meanDB(tones), chordResidualDB: try meanDB(chords),
                    cpuPerSecond: median(times) / (Double(outputFrames) / rate),
                    positionToleranceMs: 1000 * tolerance / rate,
                    clickJitterMs: clicks.jitterMs, clickErrorsPercent: clicks.errorsPercent))
            }
        }
        return rows
    }
}
