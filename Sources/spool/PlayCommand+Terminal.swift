import Foundation
import Glibc
import Spool
import SpoolBenchmarks

extension PlaySession {
    /// Where to go when a key ends a file's turn.
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
        player.setMeteringEnabled(true)
        let terminal = try TerminalMode()
        defer { terminal.restore() }
        var screen = StatusScreen(terminal: terminal)
        screen.print("spool: playing on \(output.description)")
        screen.print(Self.keyHelp)
        var keys = KeyDecoder()
        var follower = FileFollower()
        var note: (text: String, until: UInt64)?
        /// Prints what changed since the last look: a file's title when it starts, its
        /// summary when it ends, the errors told.
        func look() {
            for error in reports.takeFailures() {
                screen.finishBlock()
                report(error)
            }
            for change in follower.follow(playlist.passages, underruns: player.underrunCount) {
                switch change {
                case .started(let file):
                    screen.finishBlock()
                    let passage = file.passage
                    screen.print("[\(first + file.index + 1)/\(paths.count)] \(URL(fileURLWithPath: path(ofItem: file.index)).lastPathComponent)  "
                                 + "\(passage.info.container) · \(passage.info.codec) · \(passage.format) · "
                                 + "\(StatusScreen.clock(passage.duration))")
                case .moved: break
                case .ended(let file): close(file, playedToTheEnd: file.reachedTheEnd)
                }
            }
        }
        /// Leaves the block showing where the file ended, then its summary.
        func close(_ file: FileFollower.Heard, playedToTheEnd: Bool) {
            var last = PlayerSnapshot(self, metering: false, note: nil)
            last.elapsed = playedToTheEnd ? file.passage.duration : file.passage.currentTime
            last.duration = file.passage.duration
            last.state = playedToTheEnd ? .stopped : last.state
            screen.draw(last)
            screen.finishBlock()
            printError(summaryLine(file))
        }
        try player.play()
        var quit = false
        while !quit {
            let signal = pendingSignal.load(ordering: .relaxed)
            if signal != 0 {
                try? playlist.stop()
                screen.finishBlock()
                terminal.dieOf(signal: signal)
            }
            guard let bytes = terminal.readKeys(waitingAtMost: 100) else {
                try? playlist.stop()  // the terminal went away
                break
            }
            // An Escape with nothing after it for a whole refresh was the Escape key.
            if bytes.isEmpty, keys.isWaiting { keys.flush() }
            for key in keys.keys(from: bytes) {
                if key == .interrupt {
                    try? playlist.stop()
                    screen.finishBlock()
                    terminal.dieOf(signal: SIGINT)
                }
                look()
                switch act(on: key, follower: &follower) {
                case .turn(let turn):
                    if let file = follower.leave() { close(file, playedToTheEnd: false) }
                    do {
                        switch turn {
                        case .next: try playlist.advanceToNextItem()
                        case .previous: try playlist.previous()
                        case .quit:
                            try playlist.stop()
                            quit = true
                        }
                    } catch let error as AudioError {
                        note = (error.message, HostTime.now() + 4_000_000_000)
                    }
                case .note(let text):
                    note = (text, HostTime.now() + 4_000_000_000)
                case .done:
                    break
                }
                if quit { break }
            }
            if quit { break }
            look()
            if reports.finished {
                finish()
                look()
                if let file = follower.leave() { close(file, playedToTheEnd: file.reachedTheEnd) }
                // The last file played to its end: what the device still holds plays out first.
                Thread.sleep(forTimeInterval: output.backend.outputLatency)
                break
            }
            if let shown = note, shown.until < HostTime.now() { note = nil }
            if let file = follower.heard {
                var snapshot = PlayerSnapshot(self, metering: true, note: note?.text)
                snapshot.elapsed = file.passage.currentTime
                snapshot.duration = file.passage.duration
                // A mono file plays the same on both channels of the stream: one meter, M.
                if file.passage.format.channelCount == 1 { snapshot.levels = Array(snapshot.levels.prefix(1)) }
                screen.draw(snapshot)
            }
        }
        screen.finishBlock()
    }

    /// What a key did.
    enum KeyOutcome {
        case done
        case turn(Turn)
        /// A note for the status line: why the key could not be carried out.
        case note(String)
    }

    /// Carries out `key` on the playlist, keeping what the listener set.
    func act(on key: PlayerKey, follower: inout FileFollower) -> KeyOutcome {
        do {
            switch key {
            case .character(" "):
                if player.state == .playing { try playlist.pause() } else { try playlist.play() }
            case .left, .right:
                let time = playlist.currentTime + (key == .left ? -5 : 5)
                follower.seekedWithinFile()
                try playlist.seek(to: max(0, time))
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
                let loops = playlist.numberOfLoops == 0 ? -1 : 0
                try playlist.setNumberOfLoops(loops)
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

}
