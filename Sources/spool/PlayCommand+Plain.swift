import Foundation
import Spool
import SpoolBenchmarks

extension PlaySession {
    /// Plays the files in real time without a terminal (a pipe, a log, CI): plain lines on
    /// the standard error, no escape codes, no keys. A line when a file starts, one at each
    /// quarter of it (of each pass, when it loops), a line when a URL's audio runs out before
    /// its download and when it plays on, and its summary; with `--quiet` only errors.
    func playPlain() throws {
        let quiet = options.quiet
        var follower = FileFollower()
        var marks: QuarterMarks?
        var buffering = false
        func look() {
            reportFailures()
            for change in follower.follow(playlist.passages, underruns: player.underrunCount) where !quiet {
                switch change {
                case .started(let file):
                    printError(startLine(file))
                    marks = QuarterMarks(startingAt: file.passage.startTime, duration: file.passage.duration)
                    for line in marks?.lines(at: file.passage.currentTime) ?? [] { printError(line) }
                case .moved(let file):
                    for line in marks?.lines(at: file.passage.currentTime) ?? [] { printError(line) }
                case .ended(let file):
                    if file.reachedTheEnd { for line in marks?.linesAtTheEnd() ?? [] { printError(line) } }
                    printError(summaryLine(file))
                }
            }
            if (player.state == .buffering) != buffering {
                buffering.toggle()
                if !quiet { printError(buffering ? "spool: buffering…" : "spool: playing on") }
            }
        }
        try player.play()
        while !reports.waitForEnd(seconds: 0.1) { look() }
        finish()
        look()
        if !quiet, let last = follower.leave() {
            if last.reachedTheEnd { for line in marks?.linesAtTheEnd() ?? [] { printError(line) } }
            printError(summaryLine(last))
        }
        // What the device still holds plays out before the program exits.
        Thread.sleep(forTimeInterval: output.backend.outputLatency)
    }
}

/// The quarters of a file a plain progress line is printed at: 25, 50 and 75 % of each
/// pass, each once, in order, even when one look at the player finds two passed.
struct QuarterMarks {
    private let duration: Double
    private var passed: Int
    private var pass = 1
    private var lastPosition: Double

    init(startingAt position: Double, duration: Double) {
        self.duration = duration
        lastPosition = position
        passed = Self.quarter(position, duration)
    }

    private static func quarter(_ position: Double, _ duration: Double) -> Int {
        duration > 0 ? min(3, max(0, Int(position / duration * 4))) : 0
    }

    /// The lines for the marks passed since the last look, given where the player is now.
    mutating func lines(at position: Double) -> [String] {
        var lines: [String] = []
        // Back near the start: a loop began a new pass; the old pass's marks not yet seen
        // were passed on the way to its end.
        if position < lastPosition - duration / 8 {
            lines += marks(upTo: 3, at: lastPosition)
            pass += 1
            passed = 0
        }
        lastPosition = position
        return lines + marks(upTo: Self.quarter(position, duration), at: position)
    }

    /// The lines for the marks of the last pass not yet seen, once the file played to its end
    /// (the last look may have come before its last quarter).
    mutating func linesAtTheEnd() -> [String] { marks(upTo: 3, at: duration) }

    private mutating func marks(upTo quarter: Int, at position: Double) -> [String] {
        guard quarter > passed else { return [] }
        defer { passed = quarter }
        let of = pass > 1 ? " of pass \(pass)" : ""
        return ((passed + 1)...quarter).map { mark in
            "spool: \(mark * 25)%\(of) (\(StatusScreen.clock(position)) of \(StatusScreen.clock(duration)))"
        }
    }
}
