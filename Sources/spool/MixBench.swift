import Foundation
import Spool

/// `spool bench mix --voices N [--seconds S]`: the buffer-queue engine mixing N voices
/// offline, half of them needing rate conversion (44.1 → 48 kHz), and OpenAL Soft mixing the
/// same voices on its loopback device in the same run.
enum MixBench {
    /// Share of the voices at 44.1 kHz (rate-converted); `--converted`.
    nonisolated(unsafe) static var convertedShare = 0.5

    struct Row: Encodable {
        let backend: String
        let voices: Int
        let audioSeconds: Double
        let wallSeconds: Double
        let cpuSeconds: Double
        /// Seconds of audio mixed per second of wall time.
        let realTimeFactor: Double
        /// Percent of one core each voice costs in real-time playback.
        let cpuPercentPerVoice: Double
    }

    static func run(_ words: [String]) throws {
        let args = try Arguments(words, valued: ["voices", "seconds", "period", "json", "converted"], switches: ["help"])
        if args.has("help") { print(BenchCommand.help); return }
        let voices = try args.int("voices", in: 1...64) ?? 16
        let seconds = try args.double("seconds", in: 0.1...600) ?? 10
        let period = try args.int("period", in: 64...8192) ?? 512
        convertedShare = try args.double("converted", in: 0...1) ?? 0.5
        var rows = [try queueEngine(voices: voices, seconds: seconds, periodFrames: period)]
        if let openAL = try openALRow(voices: voices, seconds: seconds, periodFrames: period) { rows.append(openAL) }
        print("\(voices) voices (half at 44.1 kHz, converted), \(String(format: "%g", seconds)) s at 48 kHz stereo, \(period)-frame periods")
        print(BenchCommand.table(
            ["backend", "wall ms", "cpu ms", "× real time", "cpu % per voice"],
            rows.map { r in
                [r.backend, String(format: "%.1f", r.wallSeconds * 1000), String(format: "%.1f", r.cpuSeconds * 1000),
                 String(format: "%.0f", r.realTimeFactor), String(format: "%.3f", r.cpuPercentPerVoice)]
            }))
        if rows.count == 2 {
            print(String(format: "queue engine / OpenAL Soft speed: %.2f×", rows[0].realTimeFactor / rows[1].realTimeFactor))
        }
        if let json = args.string("json") { try BenchCommand.writeJSON(rows, to: json) }
    }

    /// OpenAL Soft mixing the same voices (streaming sources, half at 44.1 kHz, its default
    /// resampler) on a loopback device in this process.
    static func openALRow(voices: Int, seconds: Double, periodFrames: Int) throws -> Row? {
        let (wall, cpu) = try benchmarkOpenALMix(voices: voices, seconds: seconds, rate: 48_000, periodFrames: periodFrames)
        return row("openal", voices: voices, seconds: seconds, wall: wall, cpu: cpu)
    }

    static func queueEngine(voices: Int, seconds: Double, periodFrames: Int) throws -> Row {
        let device = try OfflineDevice(configuration: OutputConfiguration(sampleRate: 48_000, periodFrames: periodFrames))
        let engine = QueueEngine(device: device)
        try engine.start()
        var queues: [BufferQueue] = []
        for v in 0..<voices {
            let rate: Double = Double(v) < Double(voices) * convertedShare ? 44_100 : 48_000
            let format = try AudioFormat(sampleRate: rate, channelCount: 2)
            let tone = try toneBuffer(format: format, frequency: 220 + 55 * Double(v))
            // The same decoded second goes round and round, in place, as a cached sound would.
            let queue = try BufferQueue(format: format, engine: engine) { queue, _ in try? queue.enqueue(tone) }
            try queue.setVolume(1 / Float(voices))
            for _ in 0..<2 { try queue.enqueue(tone) }
            try queue.start()
            queues.append(queue)
        }
        let total = Int(seconds * 48_000)
        let buffer = UnsafeMutableBufferPointer<Float>.allocate(capacity: periodFrames * 2)
        defer { buffer.deallocate() }
        try device.render(frames: periodFrames, into: buffer)  // warm-up: start commands, converters
        let (wall, cpu) = try measure {
            var done = 0
            while done < total {
                try device.render(frames: periodFrames, into: buffer)
                done += periodFrames
            }
        }
        let underruns = queues.reduce(0) { $0 + $1.underrunCount }
        if underruns > 0 { printError("spool: warning: \(underruns) underruns while mixing") }
        return row("queue", voices: voices, seconds: seconds, wall: wall, cpu: cpu)
    }

    static func row(_ backend: String, voices: Int, seconds: Double, wall: Double, cpu: Double) -> Row {
        Row(backend: backend, voices: voices, audioSeconds: seconds, wallSeconds: wall, cpuSeconds: cpu,
            realTimeFactor: seconds / wall, cpuPercentPerVoice: cpu / seconds / Double(voices) * 100)
    }

    static func toneBuffer(format: AudioFormat, frequency: Double) throws -> PCMBuffer {
        try PCMBuffer(format: format, samples: toneSamples(frames: Int(format.sampleRate), rate: format.sampleRate,
                                                           frequency: frequency))
    }

    /// Interleaved stereo sine at half scale.
    static func toneSamples(frames: Int, rate: Double, frequency: Double) -> [Float] {
        var samples = [Float](repeating: 0, count: frames * 2)
        for i in 0..<frames {
            let v = Float(sin(2 * .pi * frequency * Double(i) / rate)) * 0.5
            samples[2 * i] = v
            samples[2 * i + 1] = v
        }
        return samples
    }

    /// Wall-clock and this thread's CPU seconds for `body`.
    static func measure(_ body: () throws -> Void) throws -> (wall: Double, cpu: Double) {
        func cpuNow() -> Double {
            var t = timespec()
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
            return Double(t.tv_sec) + Double(t.tv_nsec) * 1e-9
        }
        let wall0 = BenchCommand.now(), cpu0 = cpuNow()
        try body()
        return (BenchCommand.now() - wall0, cpuNow() - cpu0)
    }
}
