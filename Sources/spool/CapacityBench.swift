import Foundation
import Spool
import SpoolResampling

/// `spool bench capacity [--seconds S] [--quality LEVEL] [--max N]`: the most voices each
/// back-end plays in real time on the null device (256 × 3 frames at 48 kHz), every voice a
/// looping one-second stereo sine at 44.1 kHz converted to 48 kHz, with no underrun and no
/// late period over S seconds (20 by default), at each resampling quality; OpenAL Soft on
/// plain sources with its matching resampler in the same run.
///
/// A count passes when, after a second's settling, the S seconds that follow have no voice
/// underrun (the queue's and Spool's OpenAL voices count them) and no period the null device
/// rendered late (its xruns), at the first try or the second. The search doubles the count
/// until one fails, then halves the interval between the last pass and the first failure down
/// to one voice (or 2 % of it).
enum CapacityBench {
    struct Row: Codable {
        let backend: String
        let quality: String
        let resampler: String
        /// The most voices that passed.
        let voices: Int
        /// The first count that failed (nil: the most the back-end mixes, or `--max`, passed).
        let failedAt: Int?
        let seconds: Double
        let periodFrames: Int
        let periodCount: Int
        var kind = "observed"
    }

    static let configuration = OutputConfiguration(sampleRate: 48_000, channelCount: 2, periodFrames: 256, periodCount: 3)

    static func run(_ words: [String]) throws {
        let args = try Arguments(words, valued: ["seconds", "quality", "max", "json", "backends"], switches: ["help"])
        if args.has("help") { print(BenchCommand.help); return }
        let seconds = try args.double("seconds", in: 1...600) ?? 20
        let maximum = try args.int("max", in: 1...4096) ?? 256
        let levels = try MixBench.qualities(args.string("quality"))
        let backends = (args.string("backends") ?? "queue,openal,openal-soft").split(separator: ",").map(String.init)
        guard backends.allSatisfy({ ["queue", "openal", "openal-soft"].contains($0) }) else {
            throw UsageError("--backends lists queue, openal and openal-soft")
        }
        let tone = try PCMBuffer(format: AudioFormat(sampleRate: 44_100, channelCount: 2),
                                 samples: MixBench.toneSamples(frames: 44_100, rate: 44_100, frequency: 441))
        var rows: [Row] = []
        for quality in levels {
            for backend in backends {
                let resampler: String
                let trial: (Int) throws -> Bool
                switch backend {
                case "openal-soft":
                    let peer = try OpenALSoftPeer.resampler(named: MixBench.peerResampler[quality] ?? "linear")
                    resampler = peer.description
                    // OpenAL Soft has 256 sources: more cannot be asked of it.
                    trial = { voices in
                        guard voices <= OpenALDevice.defaultSourceLimit else { return false }
                        let failures = try OpenALSoftPeer.playInRealTime(voices: voices, seconds: seconds + 1,
                                                                         configuration: configuration, sourceRate: 44_100,
                                                                         resampler: peer)
                        if failures.total > 0 {
                            printError("spool: openal-soft \(quality), \(voices) voices: \(failures.dry) sources ran dry, "
                                       + "\(failures.late) late periods")
                        }
                        return failures.total == 0
                    }
                default:
                    resampler = "\(QueueResampler.fixedKind(quality))"
                    trial = { voices in try sustains(backend: backend, voices: voices, quality: quality, tone: tone, seconds: seconds) }
                }
                // Each back-end mixes at most 256 voices (the queue engine's queues, OpenAL Soft's sources).
                let limit = backend == "queue" ? QueueEngine.maximumQueues : OpenALDevice.defaultSourceLimit
                let (passed, failed) = try search(maximum: min(maximum, limit), trial)
                let row = Row(backend: backend, quality: quality.rawValue, resampler: resampler, voices: passed, failedAt: failed,
                              seconds: seconds, periodFrames: configuration.periodFrames, periodCount: configuration.periodCount)
                printError("spool: \(backend) \(quality): \(passed) voices" + (failed.map { " (\($0) failed)" } ?? ""))
                rows.append(row)
            }
        }
        print("voices sustained in real time, each a 44.1 kHz stereo sine converted to 48 kHz, on the null device at "
              + "\(configuration.periodFrames) × \(configuration.periodCount) frames; no underrun or late period over "
              + "\(String(format: "%g", seconds)) s; observed")
        print(BenchCommand.table(["backend", "quality", "resampler", "voices", "first failing"], rows.map { r in
            [r.backend, r.quality, r.resampler, r.failedAt == nil ? "≥ \(r.voices) (all)" : "\(r.voices)",
             r.failedAt.map { "\($0)" } ?? "—"]
        }))
        for quality in levels {
            let of = rows.filter { $0.quality == quality.rawValue }
            guard let peer = of.first(where: { $0.backend == "openal-soft" }), peer.voices > 0 else { continue }
            for r in of where r.backend != "openal-soft" {
                print("\(quality): \(r.backend) / OpenAL Soft \(peer.resampler): "
                      + String(format: "%.2f×", Double(r.voices) / Double(peer.voices)))
            }
        }
        if let json = args.string("json") { try BenchCommand.writeJSON(rows, to: json) }
    }

    /// The largest count `trial` passes, doubling from 8 then bisecting. A count fails only
    /// when it fails twice running: a lone late period comes from the machine's scheduling
    /// now and then whatever the load, an overload fails every time.
    /// - Returns: That count (0 when even one fails), and the first count that failed.
    static func search(maximum: Int, _ once: (Int) throws -> Bool) throws -> (passed: Int, failed: Int?) {
        func trial(_ count: Int) throws -> Bool { try once(count) || once(count) }
        var passed = 0
        var failed: Int?
        var count = min(8, maximum)
        while failed == nil {
            if try trial(count) {
                passed = count
                if count == maximum { break }
                count = min(maximum, count * 2)
            } else {
                failed = count
            }
        }
        while let high = failed, high - passed > max(1, passed / 50) {
            let middle = (passed + high) / 2
            if try trial(middle) { passed = middle } else { failed = middle }
        }
        return (passed, failed)
    }

    /// Whether `voices` voices of `backend` play `seconds` on the null device with no underrun
    /// and no late period, after a second's settling.
    static func sustains(backend name: String, voices: Int, quality: ResamplingQuality, tone: PCMBuffer,
                         seconds: Double) throws -> Bool {
        let backend: any PlaybackBackend
        let xruns: () -> Int
        switch name {
        case "queue":
            let device = try NullDevice(configuration: configuration)
            let queue = try BufferQueueBackend(device: device)
            queue.engine.resamplingQuality = quality
            backend = queue
            xruns = { device.xrunCount }
        default:
            let openAL = try OpenALBackend(.null(configuration))
            openAL.resamplingQuality = quality
            backend = openAL
            xruns = { openAL.device.xrunCount }
        }
        defer { (backend as? OpenALBackend)?.device.close() }
        var feeders: [VoiceFeeder] = []
        for _ in 0..<voices {
            let voice: any PlaybackVoice
            do { voice = try backend.makeVoice(format: tone.format, quality: quality) } catch { return false }
            try voice.setVolume(1 / Float(voices), rampSeconds: 0)
            let feeder = try VoiceFeeder(voice: voice, source: .buffer(tone), bufferFrames: 4096, buffersAhead: 3,
                                         numberOfLoops: -1)
            try feeder.prime()
            try voice.start(atHostTime: nil)
            feeders.append(feeder)
        }
        defer { for feeder in feeders { feeder.voice.dispose() } }
        Thread.sleep(forTimeInterval: 1)
        let underrunsBefore = feeders.reduce(0) { $0 + $1.voice.underrunCount }, xrunsBefore = xruns()
        Thread.sleep(forTimeInterval: seconds)
        let underruns = feeders.reduce(0) { $0 + $1.voice.underrunCount } - underrunsBefore
        let late = xruns() - xrunsBefore
        if underruns > 0 || late > 0 {
            printError("spool: \(name) \(quality), \(voices) voices: \(underruns) underruns, \(late) late periods")
        }
        return underruns == 0 && late == 0
    }
}
