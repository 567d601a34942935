import Foundation
import Spool
import SpoolBenchmarks

/// `spool effects DIR [NAME…]`: loads a folder of sounds and plays each in turn.
enum EffectsCommand {
    static let help = """
        usage: spool effects DIR [NAME...] [--backend queue|openal] [--output default|null|pulse[:SINK]|alsa:NAME]
                             [--device-rate HZ] [--buffer-frames N] [--buffers N]

        Loads every sound in DIR (MP3, Ogg, Opus, WAV, AIFF, CAF, FLAC) as a system sound,
        converted once to the output's format, lists the files that could not be loaded, then
        plays each sound in turn (or the NAMEs given, with or without extension), printing how
        long each took from play() to its first frame leaving the device.
        """

    static func run(_ words: [String]) throws {
        let args = try Arguments(words, valued: ["backend", "output", "device-rate", "buffer-frames", "buffers"],
                                 switches: ["help"])
        if args.has("help") { print(help); return }
        guard let directory = args.operands.first else { throw UsageError("effects needs a folder") }
        let backendName = args.string("backend") ?? "queue"
        guard ["queue", "openal"].contains(backendName) else { throw UsageError("--backend is queue or openal") }
        let output = args.string("output") ?? "default"
        guard !output.hasPrefix("wav:") else { throw UsageError("effects plays in real time: --output is default, null, pulse[:SINK] or alsa:NAME") }
        let configuration = OutputConfiguration(
            sampleRate: try args.double("device-rate", in: 8_000...192_000) ?? 48_000, channelCount: 2,
            periodFrames: try args.int("buffer-frames", in: 16...65_536) ?? 256,
            periodCount: try args.int("buffers", in: 2...32) ?? 3)
        let opened = try PlaybackOutput.open(backend: backendName, output: output, configuration: configuration)
        if let notice = opened.notice { printError("spool: \(notice)") }
        // Sound effects are events to the sound server's policies (AudioSession's ambient).
        opened.backend.setOutputRole("event")
        let effects = try SoundEffects(backend: opened.backend)
        let bank = try SoundBank(effects: effects)
        let report = try bank.load(directory: URL(fileURLWithPath: directory))
        print("\(report.loaded.count) sound\(report.loaded.count == 1 ? "" : "s") loaded from \(directory) on \(opened.description)")
        for failure in report.failures { print("  could not load \(failure.name): \(failure.error.message)") }
        let names = args.operands.count > 1 ? Array(args.operands.dropFirst()) : bank.names
        let rate = effects.format.sampleRate
        var failed = false
        for name in names {
            let sound: SystemSound
            do { sound = try bank.sound(named: name) } catch let error as AudioError {
                printError("spool: \(error.message)")
                failed = true
                continue
            }
            let done = DispatchSemaphore(value: 0)
            let token = sound.addCompletion { _ in done.signal() }
            let t0 = HostTime.now()
            let play = try sound.play()
            let latency = firstFrameHeard(since: t0, rate: rate, played: { play.framesPlayed },
                                          latency: { play.outputLatency }).map { $0 * 1000 }
            _ = done.wait(timeout: .now() + sound.buffer.duration + 2)
            sound.removeCompletion(token)
            let shown = latency.map { String(format: "%.2f ms", $0) } ?? "not seen within 2 s"
            print("  \(URL(fileURLWithPath: sound.name).lastPathComponent): \(String(format: "%.2f", sound.buffer.duration)) s, "
                  + "play() → first frame heard \(shown)")
        }
        Thread.sleep(forTimeInterval: opened.backend.outputLatency)
        if failed { throw ExitFailure(AudioError(.fileNotFound, "some names were not in the folder")) }
    }
}
