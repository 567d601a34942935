import Foundation
import Spool

/// `spool play FILE [--backend queue|openal] [--output default|null|wav:PATH] …`
enum PlayCommand {
    static let help = """
        usage: spool play FILE [--backend queue|openal] [--output default|null|alsa:NAME|wav:PATH]
                               [--device-rate HZ] [--buffer-frames N] [--buffers N] [--volume X]
                               [--pan X] [--rate X] [--loops N]

        Plays FILE through a back-end: the buffer queue (default) or OpenAL Soft.
        --output default  the system's sound server or card; falls back to the null device,
                          with a one-line notice, where none can be opened
        --output null     a clock-paced device that plays to nowhere
        --output wav:PATH renders offline, as fast as the CPU allows, to a WAV file
        --buffer-frames and --buffers set the output device's period size and count.
        --loops N plays the file N more times (-1: until interrupted).
        """

    struct Options {
        var backend = "queue"
        var output = "default"
        var configuration = OutputConfiguration()
        var volume: Float = 1
        var pan: Float = 0
        var rate: Float = 1
        var loops = 0
    }

    static func run(_ words: [String]) throws {
        let args = try Arguments(words, valued: ["backend", "output", "device-rate", "buffer-frames", "buffers",
                                                 "volume", "pan", "rate", "loops"], switches: ["help"])
        if args.has("help") { print(help); return }
        guard args.operands.count == 1, let path = args.operands.first else { throw UsageError("play needs exactly one FILE") }
        var options = Options()
        options.backend = args.string("backend") ?? "queue"
        guard ["queue", "openal"].contains(options.backend) else { throw UsageError("--backend is queue or openal") }
        options.output = args.string("output") ?? "default"
        options.configuration = OutputConfiguration(
            sampleRate: try args.double("device-rate", in: 8_000...192_000),
            channelCount: 2,
            periodFrames: try args.int("buffer-frames", in: 16...65_536) ?? 1024,
            periodCount: try args.int("buffers", in: 2...32) ?? 3)
        options.volume = Float(try args.double("volume", in: 0...1) ?? 1)
        options.pan = Float(try args.double("pan", in: -1...1) ?? 0)
        options.rate = Float(try args.double("rate", in: 0.5...2) ?? 1)
        options.loops = try args.int("loops", in: -1...1_000_000) ?? 0

        let decoder = try DecoderRegistry.shared.open(path: path)
        // Without --device-rate the device runs at the file's rate: no conversion at all.
        if options.configuration.sampleRate == nil { options.configuration.sampleRate = decoder.format.sampleRate }
        if options.output.hasPrefix("wav:"), options.loops < 0 {
            throw UsageError("--loops -1 would render forever; give a count with --output wav:PATH")
        }
        let output = try PlaybackOutput.open(backend: options.backend, output: options.output,
                                             configuration: options.configuration)
        if let notice = output.notice { printError("spool: \(notice)") }
        let voice = try output.backend.makeVoice(format: decoder.format)
        try voice.setVolume(options.volume)
        try voice.setPan(options.pan)
        try voice.setPlaybackRate(options.rate)
        let feeder = try VoiceFeeder(voice: voice, source: .decoder(decoder),
                                     bufferFrames: max(1024, options.configuration.periodFrames * 2),
                                     buffersAhead: 3, numberOfLoops: options.loops)
        let done = DispatchSemaphore(value: 0)
        let failure = LockedBox<AudioError?>(nil)
        feeder.setCompletion { outcome in
            if case .failed(let error) = outcome { failure.value = error }
            done.signal()
        }
        try feeder.prime()
        let start = HostTime.now()
        try voice.start()
        printError("spool: playing \(path) (\(decoder.format), \(String(format: "%.2f", decoder.duration)) s) on \(output.description)")
        if let offline = output.renderOffline {
            // Exactly the file's frames, converted to the device's rate and the playback rate.
            let passes = Double(options.loops + 1)
            let total = Int((Double(decoder.frameCount) * passes * output.backend.outputFormat.sampleRate
                / decoder.format.sampleRate / Double(options.rate)).rounded())
            try offline(total)
            try output.finish?()
        } else {
            done.wait()
            // What the device still holds plays out before the program exits.
            Thread.sleep(forTimeInterval: voice.outputLatency)
        }
        let seconds = HostTime.seconds(from: start, to: HostTime.now())
        let underruns = voice.underrunCount
        printError("spool: played \(voice.framesPlayed) frames in \(String(format: "%.2f", seconds)) s, "
                   + "\(underruns) underrun\(underruns == 1 ? "" : "s")")
        voice.dispose()
        if let error = failure.value { throw error }
    }
}

/// A value behind a lock, for results handed between threads.
final class LockedBox<T: Sendable>: @unchecked Sendable {
    // Sendable: `stored` is only touched with `lock` held.
    private let lock = NSLock()
    private var stored: T
    init(_ value: T) { stored = value }
    var value: T {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
