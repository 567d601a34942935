import Foundation
import Spool
import SpoolBenchmarks

/// `spool`: inspect, decode, play and benchmark audio with Spool.
let usage = """
    usage: spool <command> [options]

    commands:
      info [--json] FILE...                 container, codec, format, exact length, tags
      decode FILE --output PATH|- [--start SECONDS] [--duration SECONDS]
                                            PCM out: .wav → WAV float32, else raw float32 LE
      play FILE [--backend queue|openal] [--output default|null|wav:PATH] ...
                                            play a file, or render it offline to WAV
      effects DIR [NAME...] [--backend queue|openal] [--output default|null|pulse[:SINK]|alsa:NAME]
                                            load a folder of sounds, play each, time each trigger
      bench decode|cache|mix|capacity|resample|latency|player|effects|stream|stretch|soak ...
                                            the benchmarks ('spool bench --help' lists them)

    'spool <command> --help' tells more.
    """

/// The subcommands, for the hint after a usage error.
let commands: Set<String> = ["info", "decode", "play", "effects", "bench"]

// The C libraries' own messages (libasound's errors, OpenAL Soft's log) are dropped unless
// SPOOL_DIAGNOSTICS is set, when they are printed as Spool's lines.
if ProcessInfo.processInfo.environment["SPOOL_DIAGNOSTICS"].map({ !$0.isEmpty }) == true {
    Diagnostics.setLibraryMessageHandler { printError("spool: \($0)") }
}

// Past the file-size limit (RLIMIT_FSIZE) a write fails with EFBIG and is reported, rather
// than raising SIGXFSZ, which would end the tool with a file cut anywhere.
signal(SIGXFSZ, SIG_IGN)

// Players come and go for as long as the tool runs (a playlist, a soak): their large buffers
// are each mapped on their own, not left in the heap arenas (AllocatorPolicy).
try? AllocatorPolicy.fixLargeBlockThreshold()

var words = Array(CommandLine.arguments.dropFirst())
guard let command = words.first else {
    printError(usage)
    exit(2)
}
words.removeFirst()
do {
    switch command {
    case "info": try InfoCommand.run(words)
    case "decode": try DecodeCommand.run(words)
    case "play": try PlayCommand.run(words)
    case "effects": try EffectsCommand.run(words)
    case "bench": try BenchCommand.run(words)
    case "--help", "-h", "help": print(usage)
    default: throw UsageError("unknown command '\(command)'")
    }
    exit(0)
} catch let error as UsageError {
    printError("spool: \(error.message)")
    printError(commands.contains(command) ? "try 'spool \(command) --help'" : "try 'spool --help'")
    exit(2)
} catch is ExitFailure {
    exit(1)
} catch let error as AudioError {
    printError("spool: \(error.message)")
    exit(1)
} catch {
    printError("spool: \(error)")
    exit(1)
}
