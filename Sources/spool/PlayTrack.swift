import Dispatch
import Foundation
import Spool

/// What the listener set, carried from one file to the next: a volume turned down on the first
/// file stays down on the second.
struct PlaySettings {
    var volume: Float = 1
    var pan: Float = 0
    var rate: Float = 1
    var rateMode = AudioPlayer.RateMode.timeStretch
    var numberOfLoops = 0
    var startSeconds: Double = 0
    var metering = false
}

/// One file of the command line, playing through its own `AudioPlayer` on the shared back-end.
final class PlayTrack {
    let path: String
    let player: AudioPlayer
    /// Counts the frames and underruns of this file's voice.
    let counter: CountingBackend
    /// Held here: the player holds its delegate weakly.
    let events: TrackEvents

    /// Makes the player for `path` with the settings applied; `--start` is applied here too.
    /// - Throws: The player's `AudioError` (the file cannot be opened or decoded, a setting
    ///   is refused); `.outOfRange` when `--start` lies past the end.
    init(path: String, backend: any PlaybackBackend, eventQueue: DispatchQueue, settings: PlaySettings) throws {
        self.path = path
        counter = CountingBackend(backend)
        player = try AudioPlayer(contentsOf: URL(fileURLWithPath: path), backend: counter, eventQueue: eventQueue)
        events = TrackEvents()
        player.delegate = events
        try player.setVolume(settings.volume)
        try player.setPan(settings.pan)
        try player.setRateMode(settings.rateMode)
        try player.setEnableRate(true)
        try player.setRate(settings.rate)
        try player.setNumberOfLoops(settings.numberOfLoops)
        player.setMeteringEnabled(settings.metering)
        if settings.startSeconds > 0 {
            guard settings.startSeconds < player.duration else {
                throw AudioError(.outOfRange, "\(path): --start \(Self.seconds(settings.startSeconds)) s is past the end "
                                 + "(\(Self.seconds(player.duration)) s)")
            }
            try player.setCurrentTime(settings.startSeconds)
        }
    }

    /// The file name without its folder, for the screen.
    var name: String { URL(fileURLWithPath: path).lastPathComponent }

    /// What `spool play` says when a file starts: its path, format and length, and where it plays.
    func startLine(on output: String) -> String {
        "spool: playing \(path) (\(player.format), \(Self.seconds(player.duration)) s) on \(output)"
    }

    /// The line that closes a file: frames played, the time it took, and the underruns.
    func summaryLine(seconds: Double) -> String {
        let underruns = counter.underrunCount
        return "spool: played \(counter.framesPlayed) frames in \(Self.seconds(seconds)) s, "
            + "\(underruns) underrun\(underruns == 1 ? "" : "s")"
    }

    /// Source frames left to play from where the player stands, every loop pass included;
    /// nil for endless looping.
    var framesLeft: Int? {
        let loops = player.numberOfLoops
        guard loops >= 0 else { return nil }
        let frameCount = player.format.frames(forSeconds: player.duration)
        return frameCount - player.currentFrame + frameCount * loops
    }

    static func seconds(_ value: Double) -> String { String(format: "%.2f", value) }
}

/// The player's events for one file, kept for the command's loop to read; the delegate runs
/// on the player's event queue.
final class TrackEvents: AudioPlayerDelegate, Sendable {
    /// How a file's playback ended by itself.
    struct Ending: Sendable {
        var successfully: Bool
        /// The decode error, or the loss of the output, that ended it early.
        var error: AudioError?
    }

    private struct Heard: Sendable {
        var finished: Bool?
        var error: AudioError?
    }

    private let heard = Locked(Heard())
    private let finished = DispatchSemaphore(value: 0)

    func audioPlayerDidFinishPlaying(_ player: AudioPlayer, successfully flag: Bool) {
        heard.withLock { $0.finished = flag }
        finished.signal()
    }

    // The error comes before the finished event that follows it.
    func audioPlayerDecodeErrorDidOccur(_ player: AudioPlayer, error: AudioError) {
        heard.withLock { $0.error = $0.error ?? error }
    }

    func audioPlayerOutputDidEnd(_ player: AudioPlayer, error: AudioError) {
        heard.withLock { $0.error = $0.error ?? error }
    }

    /// How playback ended, once the finished event has come; nil before.
    var ending: Ending? {
        heard.withLock { h in h.finished.map { Ending(successfully: $0, error: h.error) } }
    }

    /// Waits up to `seconds` for the finished event.
    /// - Returns: Whether it has come.
    func waitForEnd(seconds: Double) -> Bool {
        guard finished.wait(timeout: .now() + seconds) == .success else { return false }
        finished.signal()  // it stays come for the next wait
        return true
    }
}
