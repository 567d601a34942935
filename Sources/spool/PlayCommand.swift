import Foundation
import Glibc
import Spool
import SpoolBenchmarks

/// `spool play FILE… [--backend queue|openal] [--output default|null|pulse[:SINK]|alsa:NAME|wav:PATH] …`:
/// plays files one after another, without a gap, through a `Playlist`, with a status display
/// and keys on a terminal, plain progress lines elsewhere, or renders them offline to a WAV file.
enum PlayCommand {
    static let help = """
        usage: spool play FILE|-... [--backend queue|openal] [--output default|null|pulse[:SINK]|alsa:NAME|wav:PATH]
                                  [--device-rate HZ] [--buffer-frames N] [--buffers N] [--volume X]
                                  [--pan X] [--rate X] [--time-stretch|--varispeed] [--loops N]
                                  [--start SECONDS] [--quiet]

        Plays each FILE in turn, without a gap between them (each converted to the output's
        rate and channels), through a back-end: the buffer queue (default) or OpenAL Soft.
        FILE - reads standard input as a stream, once (cat song.mp3 | spool play -).
        --output default  the system's sound server or card (PulseAudio, then ALSA); falls
                          back to the null device, with a one-line notice, where none opens
        --output null     a clock-paced device that plays to nowhere
        --output pulse    the PulseAudio server, on its default sink or on SINK (pulse:SINK);
                          the queue back-end only (OpenAL Soft has its own PulseAudio driver)
        --output wav:PATH renders offline, as fast as the CPU allows, to a WAV file
        --device-rate HZ  the output's rate (default: the highest of the files' rates, so that
                          none plays below its own)
        --buffer-frames and --buffers set the output device's period size and count.
        --volume X        0...1            --pan X   -1 (left)...1 (right)
        --rate X          speed, 0.5...2; --time-stretch keeps the pitch (the default, as
                          AVAudioPlayer), --varispeed lets it follow the speed
        --loops N         plays each file N more times (-1: until stopped)
        --start SECONDS   starts each file there
        --quiet           prints nothing but errors

        On a terminal it shows the file, elapsed time and duration, a progress bar, volume,
        rate, loop and a level meter per channel, and takes keys:
          space pause/resume   ←/→ seek -/+5 s   ↑/↓ volume -/+0.1   [/] rate -/+0.1
          t time-stretch/varispeed   l loop on/off   n/p next/previous file   q quit
        Elsewhere (a pipe, a log) it prints a line when a file starts, at each quarter of it,
        and when it ends: "spool: played N frames in S s, U underruns".
        Exit status 1 when a file is damaged (every frame that decodes still plays, and the
        damage is reported) or cannot be read; as 'spool decode'.
        """

    struct Options {
        var backend = "queue"
        var output = "default"
        var configuration = OutputConfiguration()
        var settings = PlaySettings()
        var quiet = false
        var paths: [String] = []
        /// Standard input, when a path is `-`: opened once, before anything plays.
        var standardInput: PlaylistStream?
    }

    static func run(_ words: [String]) throws {
        let args = try Arguments(words, valued: ["backend", "output", "device-rate", "buffer-frames", "buffers",
                                                 "volume", "pan", "rate", "loops", "start"],
                                 switches: ["help", "time-stretch", "varispeed", "quiet"])
        if args.has("help") { print(help); return }
        var options = try parse(args)

        // A name mistyped is told before anything plays, not after the files before it.
        for path in options.paths where !StandardInput.names(path) && StandardInput.remoteURL(path) == nil && access(path, R_OK) != 0 {
            throw AudioError(.fileNotFound, "\(path): cannot open: \(String(cString: strerror(errno)))")
        }
        // Without --device-rate the device runs at the highest rate among the files: none is
        // resampled down, and a single file (or files of one rate) plays unconverted. Files
        // before the first that opens are reported once, here, and not tried again; a later
        // file that does not open is left to the playlist, which reports it when it comes.
        if options.paths.contains(where: StandardInput.names) {
            do {
                options.standardInput = PlaylistStream(name: StandardInput.name, decoder: try StandardInput.open("-"))
            } catch let error as AudioError {
                printError("spool: \(error.message)")
                throw ExitFailure(error)
            }
        }
        var configuration = options.configuration
        var first = 0
        var failure: AudioError?
        if configuration.sampleRate == nil {
            while first < options.paths.count, configuration.sampleRate == nil {
                do {
                    configuration.sampleRate = try sampleRate(of: options.paths[first], options)
                } catch {
                    let error = error as? AudioError ?? AudioError(.unsupportedFormat, "\(options.paths[first]): \(error)")
                    printError("spool: \(error.message)")
                    failure = failure ?? error
                    first += 1
                }
            }
            if let failure, first == options.paths.count { throw ExitFailure(failure) }
            for path in options.paths.dropFirst(first + 1) {
                guard let rate = try? sampleRate(of: path, options) else { continue }
                configuration.sampleRate = max(configuration.sampleRate ?? rate, rate)
            }
        }
        if let failure = try play(options, configuration: configuration, first: first, failure: failure) {
            throw ExitFailure(failure)
        }
    }

    /// The rate of a file, or of standard input (`-`) opened already.
    private static func sampleRate(of path: String, _ options: Options) throws -> Double {
        if StandardInput.names(path), let stream = options.standardInput { return stream.format.sampleRate }
        return try StandardInput.open(path).format.sampleRate
    }

    /// Opens the output and plays the files on it.
    /// - Returns: The first error reported, if any.
    private static func play(_ options: Options, configuration: OutputConfiguration, first: Int,
                             failure: AudioError?) throws -> AudioError? {
        let output = try PlaybackOutput.open(backend: options.backend, output: options.output, configuration: configuration)
        if let notice = output.notice, !options.quiet { printError("spool: \(notice)") }
        let session = try PlaySession(options: options, output: output, first: first, failure: failure)
        if output.offline != nil {
            try session.renderOffline()
        } else if !options.quiet, TerminalMode.isInteractive {
            try session.playOnTerminal()
        } else {
            try session.playPlain()
        }
        session.finish()
        return session.failure
    }

    static func parse(_ args: Arguments) throws -> Options {
        var options = Options()
        options.paths = args.operands
        guard !options.paths.isEmpty else { throw UsageError("play needs a FILE") }
        options.backend = args.string("backend") ?? "queue"
        guard ["queue", "openal"].contains(options.backend) else { throw UsageError("--backend is queue or openal") }
        options.output = args.string("output") ?? "default"
        options.configuration = OutputConfiguration(
            sampleRate: try args.double("device-rate", in: 8_000...192_000),
            channelCount: 2,
            periodFrames: try args.int("buffer-frames", in: 16...65_536) ?? 1024,
            periodCount: try args.int("buffers", in: 2...32) ?? 3)
        var settings = PlaySettings()
        settings.volume = Float(try args.double("volume", in: 0...1) ?? 1)
        settings.pan = Float(try args.double("pan", in: -1...1) ?? 0)
        settings.rate = Float(try args.double("rate", in: 0.5...2) ?? 1)
        if args.has("time-stretch"), args.has("varispeed") { throw UsageError("--time-stretch and --varispeed exclude each other") }
        settings.rateMode = args.has("varispeed") ? .varispeed : .timeStretch
        settings.numberOfLoops = try args.int("loops", in: -1...1_000_000) ?? 0
        settings.startSeconds = try args.double("start", in: 0...Double(Int32.max)) ?? 0
        if options.output.hasPrefix("wav:"), settings.numberOfLoops < 0 {
            throw UsageError("--loops -1 would render forever; give a count with --output wav:PATH")
        }
        if options.paths.filter(StandardInput.names).count > 1 { throw UsageError("standard input (-) can be played once") }
        if options.paths.contains(where: StandardInput.names), settings.numberOfLoops != 0 {
            throw UsageError("standard input (-) plays once: --loops needs files")
        }
        options.quiet = args.has("quiet")
        options.settings = settings
        return options
    }
}

/// The files of one `spool play`, the playlist they play in on the shared output, what the
/// listener set and what went wrong.
final class PlaySession {
    typealias Options = PlayCommand.Options
    let options: Options
    let output: PlaybackOutput
    /// The first file to play: those before it did not open.
    let first: Int
    /// What the listener set.
    var settings: PlaySettings
    /// The files from `first` on, joined.
    let playlist: Playlist
    let reports: PlaylistReports
    /// The first error reported; the command exits with status 1 when there is one.
    private(set) var failure: AudioError?
    /// Where the playlist delivers its events: a queue of the command's own (the main thread
    /// runs the command's loop, not a dispatch main queue).
    let eventQueue = DispatchQueue(label: "spool.play.events")
    /// The audio session the player belongs to: `playback` on the command's output, so a
    /// call in another program interrupts it; it resumes by itself when the call ends.
    let audioSession: AudioSession

    /// Makes the playlist of the files from `first` on, with the settings applied.
    /// - Throws: The player's `AudioError` (a setting refused; no file opens).
    init(options: Options, output: PlaybackOutput, first: Int, failure: AudioError?) throws {
        self.options = options
        self.output = output
        self.first = first
        self.failure = failure
        settings = options.settings
        let items = options.paths[first...].map { path in
            if StandardInput.names(path), let stream = options.standardInput { return PlaylistItem.stream(stream) }
            return PlaylistItem.file(StandardInput.url(path))
        }
        playlist = try Playlist(items: items, backend: output.backend, eventQueue: eventQueue)
        reports = PlaylistReports(playlist)
        let player = playlist.player
        try player.setVolume(settings.volume)
        try player.setPan(settings.pan)
        try player.setRateMode(settings.rateMode)
        try player.setEnableRate(true)
        try player.setRate(settings.rate)
        try playlist.setNumberOfLoops(settings.numberOfLoops)
        if settings.startSeconds > 0 {
            for index in items.indices { try playlist.setStartTime(settings.startSeconds, forItemAt: index) }
        }
        audioSession = AudioSession(backend: output.backend)
        try audioSession.setCategory(.playback)
        audioSession.resumesAfterInterruption = true
        player.session = audioSession
        audioSession.setEventHandler { event in
            if let line = Self.sessionLine(event) { printError("spool: \(line)") }
        }
    }

    /// What `spool play` says of a session event: interruptions and a lost output, in a line.
    static func sessionLine(_ event: AudioSessionEvent) -> String? {
        switch event {
        case .interruption(.began(let source)): "interrupted by \(source); resumes when it ends"
        case .interruption(.ended(let shouldResume)): shouldResume ? "interruption ended: resuming" : "interruption ended"
        case .routeChange(let change) where change.reason == .oldDeviceUnavailable:
            "the output went away (\(change.previousRoute)): paused"
        case .routeChange, .mediaServicesWereReset: nil
        case .mediaServicesWereLost: "the sound server went away"
        }
    }

    var paths: [String] { options.paths }
    var player: AudioPlayer { playlist.player }

    /// The path of item `index` of the playlist.
    func path(ofItem index: Int) -> String { paths[first + index] }

    /// Prints `error` as the command's one line for it and remembers it for the exit status.
    func report(_ error: AudioError) {
        printError("spool: \(error.message)")
        failure = failure ?? error
    }

    /// Reports the errors the playlist told of since the last look.
    func reportFailures() {
        for error in reports.takeFailures() { report(error) }
    }

    /// Waits for the events of what has been heard so far, then reports the errors among them.
    func finish() {
        eventQueue.sync {}
        // The stream's consumer runs on a task of its own: give it the events just delivered.
        for _ in 0..<50 where !reports.finished && player.state == .stopped { Thread.sleep(forTimeInterval: 0.002) }
        reportFailures()
    }

    /// What `spool play` says when a file starts: its path, format and length, and where it plays.
    func startLine(_ file: FileFollower.Heard) -> String {
        "spool: playing \(path(ofItem: file.index)) (\(file.passage.format), \(Self.seconds(file.passage.duration)) s) "
            + "on \(output.description)"
    }

    /// The line that closes a file: its frames played, the time it took, and the underruns.
    func summaryLine(_ file: FileFollower.Heard) -> String {
        let underruns = player.underrunCount - file.underrunsAtStart
        let seconds = HostTime.seconds(from: file.startedAt, to: HostTime.now())
        return "spool: played \(file.frames) frames in \(Self.seconds(seconds)) s, "
            + "\(underruns) underrun\(underruns == 1 ? "" : "s")"
    }

    static func seconds(_ value: Double) -> String { String(format: "%.2f", value) }

    /// Runs `body`, reporting the error it throws instead of ending the command.
    /// - Returns: What `body` returned, or nil when it failed.
    func reporting<T>(_ body: () throws -> T) -> T? {
        do { return try body() } catch let error as AudioError {
            report(error)
        } catch {
            report(AudioError(.invalidState, "\(error)"))
        }
        return nil
    }
}
