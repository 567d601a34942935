import Foundation
import Spool

/// `spool bench effects`: 64 sound effects at once, and how soon one starts.
///
/// - **mix**: `--voices` (64) system sounds playing at once at 48 kHz stereo, rendered offline
///   for `--seconds`: `SoundEffects` on each back-end, against OpenAL Soft playing the same
///   sounds from static buffers (one `alBufferData` each, shared by every source), all timed
///   alike by the rendering thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), where each back-end
///   mixes and runs its handlers offline. Median of `--runs`. Observed.
/// - **trigger**: `--triggers` (200) plays of a 20 ms sound on the null device at 128 × 3
///   frames, each from `play()` to its first frame leaving the device (the frames the play
///   reports taken, less what the output still holds): p50/p99 against the floor (P−1)·F…P·F.
///   Modelled (the null device's clock).
enum EffectsBench {
    struct MixRow: Codable {
        let backend: String
        let path: String
        let voices: Int
        let cpuSeconds: Double
        let audioSeconds: Double
        /// Seconds of audio mixed per second of the rendering thread's CPU time.
        let realTimeFactor: Double
        let cpuPercentPerVoice: Double
        var timing = "observed"
    }

    struct TriggerRow: Codable {
        let backend: String
        let periodFrames: Int
        let periods: Int
        let triggers: Int
        let floorMinMs: Double
        let floorMaxMs: Double
        let p50Ms: Double
        let p99Ms: Double
        var timing = "modelled"
    }

    struct Report: Codable {
        let mix: [MixRow]
        let trigger: [TriggerRow]
    }

    static func run(_ words: [String]) throws {
        guard let bench = try BenchInvocation(words, valued: ["voices", "seconds", "runs", "triggers"]) else { return }
        let args = bench.arguments
        let voices = try args.int("voices", in: 1...256) ?? 64
        let seconds = try args.double("seconds", in: 0.5...60) ?? 5
        let runs = try args.int("runs", in: 1...20) ?? 3
        let triggers = try args.int("triggers", in: 1...10_000) ?? 200
        let sounds = try (0..<8).map { try sound(index: $0, seconds: seconds + 1) }

        var mix: [MixRow] = []
        for path in ["queue effects", "openal effects", "openal static buffers"] {
            let cpu = try (0..<runs).map { _ in try measureMix(path, sounds: sounds, voices: voices, seconds: seconds) }.sorted()
            let median = cpu[cpu.count / 2]
            mix.append(MixRow(backend: path.hasPrefix("queue") ? "queue" : "openal", path: path, voices: voices,
                              cpuSeconds: median, audioSeconds: seconds, realTimeFactor: seconds / median,
                              cpuPercentPerVoice: median / seconds * 100 / Double(voices)))
        }
        print("\(voices) sound effects at once, 48 kHz stereo, \(String(format: "%g", seconds)) s rendered offline; "
              + "CPU time of the rendering thread, median of \(runs) runs; observed")
        print(BenchTable.render(["path", "cpu ms", "× real time", "cpu % per voice", "× openal static"], mix.map { r in
            [r.path, String(format: "%.1f", r.cpuSeconds * 1000), String(format: "%.0f", r.realTimeFactor),
             String(format: "%.4f", r.cpuPercentPerVoice),
             String(format: "%.2f", r.realTimeFactor / (mix.last?.realTimeFactor ?? r.realTimeFactor))]
        }))

        var trigger: [TriggerRow] = []
        for backend in ["queue", "openal"] { trigger.append(try measureTriggers(backend, count: triggers)) }
        print("\nplay() → first frame leaving the null device, \(triggers) triggers of a 20 ms sound; modelled (the null device's clock)")
        print(BenchTable.render(["backend", "F×P", "floor ms", "p50 ms", "p99 ms", "p99 above the floor's top"], trigger.map { r in
            ["\(r.backend)", "\(r.periodFrames)×\(r.periods)", String(format: "%.2f–%.2f", r.floorMinMs, r.floorMaxMs),
             String(format: "%.2f", r.p50Ms), String(format: "%.2f", r.p99Ms), String(format: "%+.2f ms", r.p99Ms - r.floorMaxMs)]
        }))
        try bench.writeReport(Report(mix: mix, trigger: trigger))
    }

    /// A stereo sound at 48 kHz: two tones of its own at −20 dBFS each.
    private static func sound(index: Int, seconds: Double) throws -> PCMBuffer {
        let frames = Int(seconds * 48_000)
        var samples = [Float](repeating: 0, count: frames * 2)
        let f1 = 300 + 50 * Double(index), f2 = 700 + 80 * Double(index)
        for i in 0..<frames {
            let t = Double(i) / 48_000
            samples[i * 2] = Float(0.1 * sin(2 * .pi * f1 * t))
            samples[i * 2 + 1] = Float(0.1 * sin(2 * .pi * f2 * t))
        }
        return try PCMBuffer(format: AudioFormat(sampleRate: 48_000, channelCount: 2), samples: samples)
    }

    /// Thread CPU seconds to render `seconds` with `voices` sounds playing on `path`.
    private static func measureMix(_ path: String, sounds: [PCMBuffer], voices: Int, seconds: Double) throws -> Double {
        let configuration = OutputConfiguration(sampleRate: 48_000, channelCount: 2, periodFrames: 256, periodCount: 2)
        let renderer: any OfflineRendering
        var keep: [AnyObject] = []
        switch path {
        case "queue effects", "openal effects":
            let backend: any PlaybackBackend
            if path == "queue effects" {
                let device = try OfflineDevice(configuration: configuration)
                backend = try BufferQueueBackend(device: device)
                renderer = device
            } else {
                let device = try OpenALDevice(.loopback(configuration), sourceLimit: voices + 4)
                backend = OpenALBackend(device: device)
                renderer = device
            }
            let effects = try SoundEffects(backend: backend, voiceLimit: voices)
            let systemSounds = try sounds.map { try SystemSound(buffer: $0, effects: effects) }
            for v in 0..<voices { try systemSounds[v % systemSounds.count].play() }
            keep = [effects] + systemSounds
        default:
            let device = try OpenALDevice(.loopback(configuration), sourceLimit: voices + 4)
            let buffers = try sounds.map { try device.makeStaticBuffer($0) }
            let sources = try (0..<voices).map { try device.makeStaticSource(playing: buffers[$0 % buffers.count]) }
            for source in sources { try source.play() }
            renderer = device
            keep = buffers + sources
        }
        let chunk = 256
        let out = UnsafeMutableBufferPointer<Float>.allocate(capacity: chunk * 2)
        defer { out.deallocate() }
        try renderer.render(frames: chunk, into: out)  // warm-up: the first mix
        let total = Int(seconds * 48_000)
        let cpu0 = HostTime.threadCPUSeconds()
        var done = 0
        while done < total {
            try renderer.render(frames: chunk, into: out)
            done += chunk
        }
        let cpu = HostTime.threadCPUSeconds() - cpu0
        withExtendedLifetime(keep) {}
        return cpu
    }

    private static func measureTriggers(_ name: String, count: Int) throws -> TriggerRow {
        let (periodFrames, periods) = (128, 3)
        let configuration = OutputConfiguration(sampleRate: 48_000, channelCount: 2, periodFrames: periodFrames, periodCount: periods)
        let backend: any PlaybackBackend = name == "queue"
            ? try BufferQueueBackend(device: NullDevice(configuration: configuration))
            : try OpenALBackend(.null(configuration))
        let effects = try SoundEffects(backend: backend)
        let click = try SystemSound(buffer: sound(index: 0, seconds: 0.02), effects: effects)
        var random = SplitMix(seed: 5)
        var latencies: [Double] = []
        let period = Double(periodFrames) / 48_000
        Thread.sleep(forTimeInterval: 0.2)
        for _ in 0..<count {
            Thread.sleep(forTimeInterval: period * random.nextUnit())
            let t0 = HostTime.now()
            let play = try click.play()
            if let heard = firstFrameHeard(since: t0, rate: 48_000, timeout: 1, played: { play.framesPlayed },
                                           latency: { play.outputLatency }) {
                latencies.append(heard)
            }
            let deadline = t0 + HostTime.nanoseconds(1)
            // Let it play out, so the next trigger finds a free voice as a program's would.
            while play.isPlaying && HostTime.now() < deadline { usleep(200) }
        }
        (backend as? OpenALBackend)?.device.close()
        let f = Double(periodFrames) / 48_000 * 1000
        return TriggerRow(backend: name, periodFrames: periodFrames, periods: periods, triggers: latencies.count,
                          floorMinMs: Double(periods - 1) * f, floorMaxMs: Double(periods) * f,
                          p50Ms: percentile(latencies, 50) * 1000, p99Ms: percentile(latencies, 99) * 1000)
    }
}
