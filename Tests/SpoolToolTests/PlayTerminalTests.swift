import Foundation
import Glibc
import Testing
import SpoolTestSupport

/// `spool play` on a terminal, driven through a pseudo-terminal: keys typed in, the screen
/// read back. Every test plays to the null device, in real time, and quits early.
@Suite("spool play on a terminal")
struct PlayTerminalTests {
    static let showCursor = "\u{1B}[?25h"
    static let hideCursor = "\u{1B}[?25l"

    /// Starts the player on a 20 s tone and waits for its first status line.
    private func start(_ tones: TestTones, _ extra: [String] = []) throws -> PseudoTerminal {
        let path = try tones.tone("long-tone.wav", seconds: 20)
        let terminal = try PseudoTerminal(["play", path, "--output", "null"] + extra)
        let shown = terminal.read(until: { StatusReading.last(in: $0.text) != nil })
        #expect(shown, "no status line: \(terminal.text)")
        return terminal
    }

    /// Reads until the status line's elapsed time satisfies `condition`.
    @discardableResult
    private func readStatus(_ terminal: PseudoTerminal, seconds: Double = 3,
                            until condition: (StatusReading) -> Bool) -> StatusReading? {
        terminal.read(until: { StatusReading.last(in: $0.text).map(condition) ?? false }, seconds: seconds)
        return StatusReading.last(in: terminal.text)
    }

    @Test func theStatusShowsTheFileItsDurationAndLevelAndQQuitsRestoringTheTerminal() throws {
        let tones = try TestTones()
        let terminal = try start(tones)
        let status = readStatus(terminal) { $0.elapsed >= 0.3 }
        #expect(status?.duration == 20)
        #expect(status?.state == "playing")
        #expect(terminal.text.contains("long-tone.wav"))
        #expect(terminal.text.hasPrefix(Self.hideCursor))
        // A 0.5 amplitude sine averages 20·log10(0.5) − 3.01 = −9.0 dBFS on the mono meter.
        #expect(terminal.read(until: { $0.text.contains(" M ") && $0.text.contains(" -9.0 dB") }),
                "no meter at -9.0 dB: \(terminal.text.suffix(400))")
        // While it plays the terminal takes keys one by one, unechoed.
        let playing = terminal.attributes
        #expect(playing.c_lflag & tcflag_t(ICANON) == 0 && playing.c_lflag & tcflag_t(ECHO) == 0)

        terminal.send("q")
        let status0 = terminal.waitForExit()
        #expect(status0.flatMap(PseudoTerminal.exitCode) == 0, "status \(String(describing: status0))")
        #expect(terminal.text.hasSuffix(Self.showCursor), "\(terminal.text.suffix(200).debugDescription)")
        let restored = terminal.attributes
        #expect(restored.c_lflag & tcflag_t(ICANON) != 0 && restored.c_lflag & tcflag_t(ECHO) != 0)
        #expect(terminal.text.contains("spool: played "), "the summary line")
    }

    @Test func spacePausesTheElapsedTimeAndResumesIt() throws {
        let tones = try TestTones()
        let terminal = try start(tones)
        readStatus(terminal) { $0.elapsed >= 0.3 }
        terminal.send(" ")
        try #require(readStatus(terminal) { $0.state == "paused" }?.state == "paused")
        // The pause fades out over 5 ms; what the status shows after that holds.
        terminal.read(for: 0.2)
        let paused = try #require(StatusReading.last(in: terminal.text))
        terminal.read(for: 0.7)
        let later = try #require(StatusReading.last(in: terminal.text))
        #expect(later.state == "paused")
        #expect(later.elapsed == paused.elapsed, "elapsed moved from \(paused.elapsed) to \(later.elapsed) while paused")

        terminal.send(" ")
        let resumed = readStatus(terminal) { $0.state == "playing" && $0.elapsed >= paused.elapsed + 0.3 }
        #expect(resumed?.state == "playing")
        #expect((resumed?.elapsed ?? 0) >= paused.elapsed + 0.3, "\(String(describing: resumed))")
        terminal.send("q")
        #expect(terminal.waitForExit().flatMap(PseudoTerminal.exitCode) == 0)
    }

    @Test func theArrowsSeekFiveSecondsEachWay() throws {
        let tones = try TestTones()
        let terminal = try start(tones)
        // Elapsed time also grows by the time the test takes to see the change, and the screen
        // is a little behind the player: tenths cut, one refresh (0.1 s), and the position
        // advances a device period (1024 frames, 0.128 s at 8 kHz) at a time; a seek's restart
        // is rewound into the periods already queued, so it is heard up to one more period
        // sooner than a start behind the buffer.
        let slack = 0.35 + 0.128
        let before = try #require(readStatus(terminal) { $0.elapsed >= 0.2 })
        var clock = Date()
        terminal.send("\u{1B}[C")
        try #require(readStatus(terminal) { $0.elapsed >= before.elapsed + 4.5 } != nil)
        // On the buffer queue the voice's frame count restarts on the render thread, so for up
        // to a device period after the seek the player's position still adds the old run's
        // frames: read on until that has passed.
        terminal.read(for: 0.3)
        let forward = try #require(StatusReading.last(in: terminal.text))
        var waited = Date().timeIntervalSince(clock)
        #expect(forward.elapsed >= before.elapsed + 5 - slack && forward.elapsed <= before.elapsed + 5 + slack + waited,
                "from \(before.elapsed) to \(forward.elapsed) in \(waited) s")
        // An arrow in application cursor mode (ESC O D), split across two writes.
        clock = Date()
        terminal.send("\u{1B}O")
        terminal.read(for: 0.02)
        terminal.send("D")
        try #require(readStatus(terminal) { $0.elapsed <= forward.elapsed - 4 } != nil)
        terminal.read(for: 0.3)
        let back = try #require(StatusReading.last(in: terminal.text))
        waited = Date().timeIntervalSince(clock)
        #expect(back.elapsed >= forward.elapsed - 5 - slack && back.elapsed <= forward.elapsed - 5 + slack + waited,
                "from \(forward.elapsed) back to \(back.elapsed) in \(waited) s")
        terminal.send("q")
        #expect(terminal.waitForExit().flatMap(PseudoTerminal.exitCode) == 0)
    }

    @Test func keysChangeVolumeRateAndLoopAndTheStatusShowsThem() throws {
        let tones = try TestTones()
        let terminal = try start(tones, ["--varispeed", "--volume", "0.5"])
        #expect(terminal.read(until: { $0.text.contains("volume 0.5   rate 1.00× varispeed   loop off") }))
        terminal.send("\u{1B}[A\u{1B}[A]]]l")
        #expect(terminal.read(until: { $0.text.contains("volume 0.7   rate 1.30× varispeed   loop on") }),
                "\(terminal.text.suffix(300))")
        // Rate is bounded to 0.5…2 and volume to 0…1: keys past the ends go no further.
        terminal.send(String(repeating: "[", count: 12) + String(repeating: "\u{1B}[B", count: 12) + "l")
        #expect(terminal.read(until: { $0.text.contains("volume 0.0   rate 0.50× varispeed   loop off") }),
                "\(terminal.text.suffix(300))")
        terminal.send("q")
        #expect(terminal.waitForExit().flatMap(PseudoTerminal.exitCode) == 0)
    }

    @Test func nMovesToTheNextFileAndPBack() throws {
        let tones = try TestTones()
        let first = try tones.tone("first-tone.wav", seconds: 20)
        let second = try tones.tone("second-tone.wav", seconds: 12, frequency: 660)
        let terminal = try PseudoTerminal(["play", first, second, "--output", "null"])
        #expect(terminal.read(until: { $0.text.contains("[1/2] first-tone.wav") && StatusReading.last(in: $0.text) != nil }))
        #expect(!terminal.text.contains("second-tone.wav"))
        terminal.send("n")
        #expect(terminal.read(until: { $0.text.contains("[2/2] second-tone.wav") }), "\(terminal.text.suffix(300))")
        let second0 = readStatus(terminal) { $0.duration == 12 }
        #expect(second0?.duration == 12, "the status is the second file's")
        terminal.send("p")
        #expect(terminal.read(until: { $0.text.components(separatedBy: "[1/2] first-tone.wav").count == 3 }),
                "p goes back to the first file")
        let again = readStatus(terminal) { $0.duration == 20 }
        #expect(again?.duration == 20)
        terminal.send("q")
        #expect(terminal.waitForExit().flatMap(PseudoTerminal.exitCode) == 0)
        #expect(terminal.text.components(separatedBy: "spool: played ").count == 4, "a summary per file played")
    }

    @Test func theLastFileEndingEndsThePlayer() throws {
        let tones = try TestTones()
        let short = try tones.tone("short-tone.wav", seconds: 0.6)
        let terminal = try PseudoTerminal(["play", short, "--output", "null"])
        let status = terminal.waitForExit(seconds: 5)
        #expect(status.flatMap(PseudoTerminal.exitCode) == 0, "\(terminal.text)")
        #expect(terminal.text.contains("spool: played 4800 frames"), "every frame of the file")
        #expect(terminal.text.hasSuffix(Self.showCursor))
        // The block is left showing the end, not the player's rewound position.
        #expect(StatusReading.last(in: terminal.text) == StatusReading(state: "stopped", elapsed: 0.6, duration: 0.6))
    }

    @Test func theNextFileFollowsByItselfAndTheScreenTellsOfIt() throws {
        let tones = try TestTones()
        let first = try tones.tone("first-short.wav", seconds: 0.6)
        let second = try tones.tone("second-short.wav", seconds: 0.6, frequency: 660)
        let terminal = try PseudoTerminal(["play", first, second, "--output", "null"])
        let status = terminal.waitForExit(seconds: 6)
        #expect(status.flatMap(PseudoTerminal.exitCode) == 0, "\(terminal.text)")
        let text = terminal.text
        let titles = ["[1/2] first-short.wav", "[2/2] second-short.wav"].map { text.range(of: $0)?.lowerBound }
        #expect(titles[0] != nil && titles[1] != nil && titles[0]! < titles[1]!, "both titles, in turn: \(text.suffix(600))")
        #expect(text.components(separatedBy: "spool: played 4800 frames").count == 3, "every frame of each: \(text.suffix(600))")
        #expect(text.hasSuffix(Self.showCursor))
    }

    @Test(arguments: [("SIGTERM", SIGTERM), ("Ctrl-C", SIGINT)])
    func aSignalOrCtrlCRestoresTheTerminalAndEndsByTheSignal(_ name: String, _ signal: CInt) throws {
        let tones = try TestTones()
        let terminal = try start(tones)
        if signal == SIGTERM { kill(terminal.pid, SIGTERM) } else { terminal.send("\u{03}") }
        let status = try #require(terminal.waitForExit())
        #expect(PseudoTerminal.terminatingSignal(status) == signal, "\(name): status \(status)")
        #expect(terminal.text.hasSuffix(Self.showCursor), "\(name): \(terminal.text.suffix(100).debugDescription)")
        let restored = terminal.attributes
        #expect(restored.c_lflag & tcflag_t(ICANON) != 0 && restored.c_lflag & tcflag_t(ECHO) != 0
                && restored.c_lflag & tcflag_t(ISIG) != 0, "\(name)")
    }
}
