import Foundation
import Glibc
import Spool

extension PlaySession {
    /// Where to go when a file's turn ends.
    enum Turn {
        case next, previous, quit
    }

    /// The keys, as the screen lists them.
    static let keyHelp = "keys: space pause · ←/→ seek 5 s · ↑/↓ volume · [ ] rate · t pitch · l loop · n/p file · q quit"

    /// Plays the files on a terminal: a status block redrawn ten times a second and keys
    /// read as they are typed (see `PlayCommand.help`). The terminal is put back as it was on
    /// every way out: the end of the last file, `q`, an error thrown, Ctrl-C and the signals
    /// that end a program (then the process dies of the signal, as without the player).
    func playOnTerminal() throws {
        settings.metering = true
        let terminal = try TerminalMode()
        defer { terminal.restore() }
        var screen = StatusScreen(terminal: terminal)
        screen.print("spool: playing on \(output.description)")
        screen.print(Self.keyHelp)
        var keys = KeyDecoder()
        var index = first
        var drain = false
        tracks: while index < paths.count {
            guard let track = reporting(on: &screen, { try makeTrack(index) }) else {
                index += 1
                continue
            }
            let player = track.player
            screen.print("[\(index + 1)/\(paths.count)] \(track.name)  \(player.info.container) · \(player.info.codec) · "
                         + "\(player.format) · \(StatusScreen.clock(player.duration))")
            let start = HostTime.now()
            guard reporting(on: &screen, { try player.play() }) != nil else {
                index += 1
                continue
            }
            var note: (text: String, until: UInt64)?
            var turn = Turn.next
            playing: while true {
                let signal = pendingSignal.load(ordering: .relaxed)
                if signal != 0 {
                    try? player.stop()
                    screen.finishBlock()
                    terminal.dieOf(signal: signal)
                }
                guard let bytes = terminal.readKeys(waitingAtMost: 100) else {
                    turn = .quit  // the terminal went away
                    try? player.stop()
                    break
                }
                // An Escape with nothing after it for a whole refresh was the Escape key.
                if bytes.isEmpty, keys.isWaiting { keys.flush() }
                for key in keys.keys(from: bytes) {
                    if key == .interrupt {
                        try? player.stop()
                        screen.finishBlock()
                        terminal.dieOf(signal: SIGINT)
                    }
                    switch act(on: key, player) {
                    case .turn(let next):
                        turn = next
                        try? player.stop()
                        break playing
                    case .note(let text):
                        note = (text, HostTime.now() + 4_000_000_000)
                    case .done:
                        break
                    }
                }
                if track.events.ending != nil {
                    drain = true
                    break
                }
                if let shown = note, shown.until < HostTime.now() { note = nil }
                screen.draw(PlayerSnapshot(player, metering: true, note: note?.text))
            }
            if track.events.ending != nil {
                // Played to the end: the block shows the end, not the player's rewound 0.
                var last = PlayerSnapshot(player, metering: false, note: nil)
                last.elapsed = last.duration
                last.levels = []
                screen.draw(last)
            } else {
                drain = false
            }
            screen.finishBlock()
            // The delivery that told of the end holds the player until it returns; let it return,
            // so the player goes here, on this thread.
            eventQueue.sync {}
            if let error = track.events.ending?.error { report(error) }
            printError(track.summaryLine(seconds: HostTime.seconds(from: start, to: HostTime.now())))
            switch turn {
            case .next: index += 1
            case .previous: index = max(first, index - 1)
            case .quit: break tracks
            }
        }
        // The last file played to its end: what the device still holds plays out first.
        if drain { Thread.sleep(forTimeInterval: output.backend.outputLatency) }
    }

    /// What a key did.
    enum KeyOutcome {
        case done
        case turn(Turn)
        /// A note for the status line: why the key could not be carried out.
        case note(String)
    }

    /// Carries out `key` on `player`, keeping what the listener set for the next files.
    func act(on key: PlayerKey, _ player: AudioPlayer) -> KeyOutcome {
        do {
            switch key {
            case .character(" "):
                if player.state == .playing { try player.pause() } else { try player.play() }
            case .left:
                try player.setCurrentTime(max(0, player.currentTime - 5))
            case .right:
                try player.setCurrentTime(player.currentTime + 5)
            case .up, .down:
                // In tenths, so that steps land on 0.1, 0.2, … and not on their float sums.
                let tenths = (player.volume * 10).rounded() + (key == .up ? 1 : -1)
                let volume = min(10, max(0, tenths)) / 10
                try player.setVolume(volume, fadeDuration: 0.05)
                settings.volume = volume
            case .character("["), .character("]"):
                let tenths = (player.rate * 10).rounded() + (key == .character("]") ? 1 : -1)
                let rate = min(20, max(5, tenths)) / 10
                try undoing(player, { try player.setRate(rate) }, by: { [old = player.rate] in try player.setRate(old) })
                settings.rate = rate
            case .character("t"):
                let mode: AudioPlayer.RateMode = player.rateMode == .timeStretch ? .varispeed : .timeStretch
                try undoing(player, { try player.setRateMode(mode) },
                            by: { [old = player.rateMode] in try player.setRateMode(old) })
                settings.rateMode = mode
            case .character("l"):
                let loops = player.numberOfLoops == 0 ? -1 : 0
                try player.setNumberOfLoops(loops)
                settings.numberOfLoops = loops
            case .character("n"): return .turn(.next)
            case .character("p"): return .turn(.previous)
            case .character("q"), .character("Q"): return .turn(.quit)
            default: break
            }
        } catch let error as AudioError {
            return .note(error.message)
        } catch {
            return .note("\(error)")
        }
        return .done
    }

    /// Runs `change`; when it throws, runs `undo` and restarts a player that was playing.
    ///
    /// `AudioPlayer` keeps a rate or rate mode it refused (a time-stretch it cannot make) and,
    /// when playing, leaves its voice stopped while it still says `.playing`; a pause and a
    /// play after the old value is back start the voice again where it stands.
    private func undoing(_ player: AudioPlayer, _ change: () throws -> Void, by undo: () throws -> Void) throws {
        let wasPlaying = player.state == .playing
        do { try change() } catch {
            try? undo()
            if wasPlaying {
                try? player.pause()
                try? player.play()
            }
            throw error
        }
    }

    /// `reporting(_:)` for the terminal: the status block ends before the error's line.
    func reporting<T>(on screen: inout StatusScreen, _ body: () throws -> T) -> T? {
        do { return try body() } catch {
            screen.finishBlock()
            return reporting { throw error }
        }
    }
}
