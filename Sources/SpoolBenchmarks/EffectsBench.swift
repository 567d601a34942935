import Foundation
import Spool
import SpoolResampling

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
/// - **voice creation**: `makeVoice` on each back-end (an offline device at 48 kHz), for a
///   48 kHz source and for a 44.1 kHz one converted at each resampling level, `--creations`
///   (200) times each: p50/p99 of the call's wall time, what a program pays to start a sound
///   on a new voice. Each voice plays a 20 ms sound through and is disposed of; its converters
///   go back to `VoiceResamplerPool`, which makes the streams it fed anew in the background
///   (timed too: what a voice gone costs off the caller's path) before the next is made, as
///   between two triggers. Beside it, 20 made from nothing, the pool emptied before each
///   (the first voice of its format in a process). Observed.
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

    struct CreationRow: Codable {
        let backend: String
        let sourceRate: Double
        let quality: String
        let creations: Int
        let p50Microseconds: Double
        let p99Microseconds: Double
        /// The pool emptied before each (20 of them).
        let coldP50Microseconds: Double
        let coldP99Microseconds: Double
        /// The pool's background work for each voice gone (its fed streams made anew), median.
        let renewalP50Microseconds: Double
        var timing = "observed"
    }

    struct Report: Codable {
        let mix: [MixRow]
        let trigger: [TriggerRow]
        let creation: [CreationRow]
    }

    static func run(_ words: [String]) throws {
        guard let bench = try BenchInvocation(words, valued: ["voices", "seconds", "runs", "triggers", "creations"]) else { return }
        let args = bench.arguments
        let voices = try args.int("voices", in: 1...256) ?? 64
        let seconds = try args.double("seconds", in: 0.5...60) ?? 5
        let runs = try args.int("runs", in: 1...20) ?? 3
        let triggers = try args.int("triggers", in: 1...10_000) ?? 200
        let creations = try args.int("creations", in: 1...100_000) ?? 200
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

        var creation: [CreationRow] = []
        for backend in ["queue", "openal"] { creation += try measureCreation(backend, count: creations) }
        print("\nmakeVoice on an offline device at 48 kHz, \(creations) voices each playing 20 ms and disposed of "
              + "(converters from a voice gone), 20 made from nothing (first of their format), and the pool's "
              + "background work per voice gone; observed")
        print(BenchTable.render(["backend", "source", "quality", "p50 µs", "p99 µs", "first p50 µs", "first p99 µs",
                                 "background p50 µs"], creation.map { r in
            [r.backend, String(format: "%g kHz", r.sourceRate / 1000), r.quality,
             String(format: "%.1f", r.p50Microseconds), String(format: "%.1f", r.p99Microseconds),
             String(format: "%.0f", r.coldP50Microseconds), String(format: "%.0f", r.coldP99Microseconds),
             String(format: "%.0f", r.renewalP50Microseconds)]
        }))
        try bench.writeReport(Report(mix: mix, trigger: trigger, creation: creation))
    }

    /// `makeVoice`'s wall time on `name`'s back-end: a 48 kHz source, then a 44.1 kHz one at
    /// each resampling level.
    private static func measureCreation(_ name: String, count: Int) throws -> [CreationRow] {
        let configuration = OutputConfiguration(sampleRate: 48_000, channelCount: 2, periodFrames: 256, periodCount: 2)
        let (backend, renderer) = try OfflineBackend.open(name, configuration)
        defer { (backend as? OpenALBackend)?.device.close() }
        let out = UnsafeMutableBufferPointer<Float>.allocate(capacity: 2_048 * 2)
        defer { out.deallocate() }
        var cases: [(rate: Double, quality: ResamplingQuality?)] = [(48_000, nil)]
        for quality in [ResamplingQuality.fast, .balanced, .high] { cases.append((44_100, quality)) }
        return try cases.map { rate, quality in
            let format = try AudioFormat(sampleRate: rate, channelCount: 2)
            let click = try PCMBuffer(format: format, samples: (0..<Int(rate * 0.02) * 2).map { Float(sin(Double($0) * 0.03) * 0.1) })
            var renewals: [Double] = []
            func made() throws -> Double {
                let t0 = HostTime.now()
                let voice = try quality.map { try backend.makeVoice(format: format, quality: $0) } ?? backend.makeVoice(format: format)
                let microseconds = Double(HostTime.now() - t0) / 1e3
                try voice.enqueue(click)
                try voice.start()
                for _ in 0..<2 { try renderer.render(frames: 1_024, into: out) }
                voice.dispose()
                // Between two triggers: the pool makes anew what the voice fed.
                let r0 = HostTime.now()
                VoiceResamplerPool.shared.settle()
                renewals.append(Double(HostTime.now() - r0) / 1e3)
                return microseconds
            }
            var cold: [Double] = []
            for _ in 0..<20 {
                VoiceResamplerPool.shared.removeAll()
                cold.append(try made())
            }
            var times: [Double] = []
            renewals = []
            for _ in 0..<(count + 5) { times.append(try made()) }
            times.removeFirst(5)
            return CreationRow(backend: name, sourceRate: rate, quality: quality.map { "\($0)" } ?? "none (same rate)",
                               creations: count, p50Microseconds: percentile(times, 50), p99Microseconds: percentile(times, 99),
                               coldP50Microseconds: percentile(cold, 50), coldP99Microseconds: percentile(cold, 99),
                               renewalP50Microseconds: percentile(renewals, 50))
        }
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
