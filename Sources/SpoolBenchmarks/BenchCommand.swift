import Foundation
import Spool

/// `spool bench <name> …`: the benchmarks. Each prints a table on stdout and, with
/// `--json PATH`, writes the same figures as JSON.
package enum BenchCommand {
    package static let help = """
        usage: spool bench <benchmark> [options]

        benchmarks:
          decode FILE... [--repeat N] [--in-process] [--json PATH]
                'spool decode FILE --output -' against the reference decoder for its format
                (mpg123, oggdec, flac, sox, opusdec), both whole processes timed alike;
                --in-process: Spool's decode loop against the bare C library's, one process
          cache [DIR] [--budget-mb N] [--repeat N] [--hits N] [--json PATH]
                buffer cache on a folder (default Fixtures): cold load serial vs parallel,
                hit latency p50/p99, bytes held against the budget (N MiB, default 64)
          latency [--backends queue,openal] [--output null|default|pulse[:SINK]|alsa:NAME] [--buffer-frames LIST]
                  [--buffers LIST] [--device-rate HZ] [--starts N] [--seconds S] [--load] [--json PATH]
                  [--chart PATH.svg] [--acoustic]
                start and output latency, refill turnaround and underruns of each back-end
                ('spool bench latency --help' tells more)
          mix [--voices N] [--seconds S] [--period FRAMES] [--converted SHARE] [--runs N]
              [--quality fast|balanced|high|all] [--backends queue,openal,openal-soft] [--limiter] [--json PATH]
              [--chart PATH.svg]
                the buffer-queue engine and the OpenAL back-end mixing N voices offline at each
                resampling quality (--converted SHARE of them rate-converted, default 0.5;
                median of --runs N, the sides alternating run by run), against OpenAL Soft
                converting them by itself with its matching resampler (linear, 23rd-order sinc)
                in the same run; --limiter adds the queue engine with its output limiter on,
                the mix past full scale, and what the limiter costs
          capacity [--seconds S] [--quality fast|balanced|high|all] [--max N]
              [--backends queue,openal,openal-soft] [--json PATH] [--chart PATH.svg]
                the most voices each back-end plays in real time on the null device (256 × 3
                frames, 48 kHz), every voice converted from 44.1 kHz, with no underrun or late
                period over S s (default 20), at each quality; OpenAL Soft with its matching
                resampler in the same run; the queue's engine is made for --max voices (default
                256), and OpenAL Soft given as many sources (its `sources` setting)
          resample [--seconds S] [--repeats N] [--quick] [--resamplers LIST] [--peers LIST | --no-peer]
              [--json PATH]
                every resampler at 44.1→48, 48→44.1, 22.05→48, 32→48 and 16→48 kHz, mono and
                stereo: SNR, aliasing/imaging, frequency error and speed (S s per run, default 3;
                --quick: 0.2 s, 3 runs); then OpenAL Soft's resamplers (--peers: names such as
                linear,23rd; default all) through the same analysis, quality only
          player [--backends queue,openal] [--starts N] [--buffer-frames F] [--buffers P] [--rate X]
                 [--seconds S] [--file PATH] [--json PATH]
                AudioPlayer against a bare voice: play() → first frame on the null device
                (p50/p99), CPU of plain, time-stretched and varispeed playback, and the
                resident set while it plays a long file (default: a synthesised 8-minute WAV)
          effects [--voices N] [--seconds S] [--runs N] [--triggers N] [--creations N] [--json PATH]
                N system sounds at once offline (SoundEffects on each back-end, against OpenAL
                Soft's static buffers), CPU per voice; play() → first frame at 128 × 3; and
                makeVoice's time p50/p99 on each back-end, same rate and converted at each level
          stream [FILE...] [--repeat N] [--hours H] [--no-memory] [--json PATH]
                StreamParser + StreamDecoder against the file decoder on the same bytes in memory
                (default: a fixture of each format), and the resident set while H hours
                (default 1) of audio stream through
          stream --url URL [--starts N] [--memory-url URL] [--json PATH]
                play while downloading (scripts/stream-bench.sh serves both from nginx): opening
                to first frame heard against the link's first chunk + one period, and the resident set
                while every frame of a long URL decodes as fast as the CPU allows
          stretch [FILE] [--seconds S] [--runs N] [--tempi LIST] [--sweep] [--json PATH]
                time-stretch (pitch kept) CPU per second against decode + copy, at tempi 1.5 and
                0.75 by default, and its duration and frequency errors; --sweep compares settings
          soak [--minutes M] [--cycles N] [--threads T] [--fixtures DIR] [--backends queue,openal] [--parts LIST] [--json PATH]
                M minutes (default 60) of real use: on each back-end's null device a looping
                player, a repeating playlist and an effect every 100 ms; each back-end offline
                as fast as the CPU allows; N player cycles (default 10 000: make, play, seek,
                pause, play, stop or release) from T threads (default 4). Resident set, threads
                and descriptors sampled every second must stay flat after the warm-up, and no
                call may take over 1 s (scripts/soak.sh); --parts runs some of player, playlist,
                effects, offline, cycles
        """

    package static func run(_ words: [String]) throws {
        guard let name = words.first else { throw UsageError("bench needs a benchmark name\n\(help)") }
        let rest = Array(words.dropFirst())
        switch name {
        case "decode": try DecodeBench.run(rest)
        case "cache": try CacheBench.run(rest)
        case "mix": try MixBench.run(rest)
        case "capacity": try CapacityBench.run(rest)
        case "latency": try LatencyBench.run(deviceRateSpelledRate(rest))
        case "latency-worker": try LatencyWorker.run(rest)
        case "resample": try ResampleBench.run(rest)
        case "player": try PlayerBench.run(rest)
        case "stretch": try StretchBench.run(rest)
        case "effects": try EffectsBench.run(rest)
        case "stream": try StreamBench.run(rest)
        case "soak": try SoakBench.run(rest)
        case "--help", "-h": print(help)
        default: throw UsageError("unknown benchmark '\(name)'")
        }
    }

    /// The device rate is `--device-rate` in every command (`spool play` too, where `--rate` is
    /// the playback rate); the latency bench also takes its older spelling `--rate`, which is
    /// what it reads.
    static func deviceRateSpelledRate(_ words: [String]) -> [String] {
        words.map { word in
            if word == "--device-rate" { return "--rate" }
            if word.hasPrefix("--device-rate=") { return "--rate=" + word.dropFirst("--device-rate=".count) }
            return word
        }
    }
}
