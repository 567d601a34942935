import Foundation
import Spool

/// What the status lines show of a playing file at one moment.
struct PlayerSnapshot {
    var state: AudioPlayer.State
    var elapsed: Double
    var duration: Double
    var volume: Float
    var rate: Float
    var rateMode: AudioPlayer.RateMode
    var numberOfLoops: Int
    /// Average and peak power of each channel, dBFS.
    var levels: [(average: Float, peak: Float)]
    /// A short note for the listener (a key that could not be carried out), or nil.
    var note: String?
    /// Whether a call (or another session) interrupted the player.
    var interrupted = false

    /// Reads the session's player and playlist, measuring the meters first when `metering`
    /// is on; the times are the player's (the caller sets the file's).
    init(_ session: PlaySession, metering: Bool, note: String?) {
        let player = session.player
        state = player.state
        elapsed = player.currentTime
        duration = player.duration
        volume = player.volume
        rate = player.rate
        rateMode = player.rateMode
        numberOfLoops = session.playlist.numberOfLoops
        interrupted = session.audioSession.isInterrupted
        levels = []
        if metering {
            player.updateMeters()
            levels = (0..<player.numberOfChannels).map { channel in
                ((try? player.averagePower(forChannel: channel)) ?? -160, (try? player.peakPower(forChannel: channel)) ?? -160)
            }
        }
        self.note = note
    }
}

/// The status block of the terminal player: three lines redrawn in place (the state, times and
/// a progress bar; volume, rate and loop; a level meter per channel), cut to the terminal's
/// width so that no line wraps and the block can always be redrawn from its first line.
struct StatusScreen {
    private let terminal: TerminalMode
    /// Lines of the block on screen now; 0 when none is (the cursor is at a line's start).
    private var drawnLines = 0

    init(terminal: TerminalMode) { self.terminal = terminal }

    /// Erases to the end of the line (EL).
    static let eraseLine = "\u{1B}[K"
    /// Erases from the cursor to the end of the screen (ED): the block is the last thing on it.
    static let eraseBelow = "\u{1B}[J"

    /// Writes a line above the block: the block ends where it is and the line follows it.
    mutating func print(_ line: String) {
        finishBlock()
        terminal.write(Self.fit(line, columns: terminal.columns) + "\n")
    }

    /// Leaves the block on screen as it was last drawn and moves below it.
    mutating func finishBlock() {
        guard drawnLines > 0 else { return }
        terminal.write("\n")
        drawnLines = 0
    }

    /// Draws the block for `snapshot` over the one on screen.
    mutating func draw(_ snapshot: PlayerSnapshot) {
        let columns = terminal.columns
        let lines = Self.lines(for: snapshot, columns: columns)
        var text = ""
        if drawnLines > 1 { text += "\u{1B}[\(drawnLines - 1)A" }
        text += "\r"
        for (i, line) in lines.enumerated() {
            text += Self.fit(line, columns: columns) + Self.eraseLine
            if i < lines.count - 1 { text += "\n" }
        }
        if lines.count < drawnLines { text += Self.eraseBelow }
        terminal.write(text)
        drawnLines = lines.count
    }

    // MARK: The lines

    static func lines(for s: PlayerSnapshot, columns: Int) -> [String] {
        let symbol: String, word: String
        switch s.state {
        case .playing: (symbol, word) = ("▶", "playing")
        case .paused where s.interrupted: (symbol, word) = ("‖", "interrupted")
        case .paused: (symbol, word) = ("‖", "paused ")
        case .buffering: (symbol, word) = ("…", "buffering")
        case .stopped, .prepared: (symbol, word) = ("■", "stopped")
        }
        let fraction = s.duration > 0 ? min(1, max(0, s.elapsed / s.duration)) : 0
        let times = "\(clock(s.elapsed)) / \(clock(s.duration))"
        let percent = String(format: "%3d%%", Int((fraction * 100).rounded(.down)))
        let fixed = " \(symbol) \(word)  \(times)  [] \(percent)"
        let barWidth = max(8, columns - 1 - fixed.count)
        let first = " \(symbol) \(word)  \(times)  [\(bar(fraction, width: barWidth))] \(percent)"

        let loop = switch s.numberOfLoops {
        case -1: "loop on"
        case 0: "loop off"
        default: "loop \(s.numberOfLoops)×"
        }
        let mode = s.rateMode == .timeStretch ? "time-stretch" : "varispeed"
        var second = "   volume \(String(format: "%.1f", s.volume))   rate \(String(format: "%.2f", s.rate))× \(mode)   \(loop)"
        if let note = s.note { second += "   \(note)" }

        // No meter line without meters (a file that has ended): `draw` erases what was below.
        return s.levels.isEmpty ? [first, second] : [first, second, meters(s.levels, columns: columns)]
    }

    /// One bar per channel: the average power filled, up to the peak shaded, on a −60…0 dB
    /// scale, with the average in dB where the width leaves room for it (not for 5.1 on 80
    /// columns).
    static func meters(_ levels: [(average: Float, peak: Float)], columns: Int) -> String {
        guard !levels.isEmpty else { return "" }
        let names = levels.count == 1 ? ["M"] : levels.count == 2 ? ["L", "R"] : levels.indices.map { "\($0 + 1)" }
        // Each meter: "   N " + bar + " -12.3 dB" (14 characters around the bar), or "  N " + bar.
        let room = (columns - 1) / levels.count
        let showsDecibels = room >= 14 + 8
        let width = max(2, min(30, room - (showsDecibels ? 14 : 4)))
        var line = ""
        for (i, level) in levels.enumerated() {
            let average = cells(level.average, width: width)
            let peak = max(average, cells(level.peak, width: width))
            let meter = String(repeating: "█", count: average) + String(repeating: "▒", count: peak - average)
                + String(repeating: "·", count: width - peak)
            if showsDecibels {
                let db = level.average <= -120 ? "  -∞ dB" : String(format: "%5.1f dB", level.average)
                line += "   \(names[i]) \(meter) \(db)"
            } else {
                line += "  \(names[i]) \(meter)"
            }
        }
        return line
    }

    private static func cells(_ db: Float, width: Int) -> Int {
        guard db.isFinite else { return 0 }
        let fraction = (Double(db) + 60) / 60
        return min(width, max(0, Int((fraction * Double(width)).rounded())))
    }

    /// A progress bar of `width` cells, in eighths of a cell.
    static func bar(_ fraction: Double, width: Int) -> String {
        let eighths = Int((fraction * Double(width * 8)).rounded(.down))
        let full = min(width, eighths / 8)
        var text = String(repeating: "█", count: full)
        if full < width {
            let partial = eighths % 8
            text += partial > 0 ? String(["▏", "▎", "▍", "▌", "▋", "▊", "▉"][partial - 1]) : " "
            text += String(repeating: " ", count: width - full - 1)
        }
        return text
    }

    /// `m:ss.t` (or `h:mm:ss.t` from an hour), tenths cut, not rounded, so elapsed time never
    /// reads past the duration.
    static func clock(_ seconds: Double) -> String {
        let tenths = Int((max(0, seconds) * 10).rounded(.down))
        let (h, m, s, t) = (tenths / 36_000, tenths / 600 % 60, tenths / 10 % 60, tenths % 10)
        return h > 0 ? String(format: "%d:%02d:%02d.%d", h, m, s, t) : String(format: "%d:%02d.%d", m, s, t)
    }

    /// `line` cut to one character less than the terminal's width (a line that fills the last
    /// column would leave the cursor in the next line on some terminals).
    static func fit(_ line: String, columns: Int) -> String {
        let room = max(1, columns - 1)
        return line.count <= room ? line : String(line.prefix(room))
    }
}
