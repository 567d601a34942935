import Foundation
import Testing
import SpoolTestSupport

/// `spool play` without a terminal (a pipe, a log, CI): plain lines on the standard error,
/// read back by their text. The files play to the null device in real time, so they are short.
@Suite("spool play without a terminal")
struct PlayProgressLinesTests {
    private func lines(_ result: Tool.Result) -> [String] {
        result.stderr.split(separator: "\n").map(String.init)
    }

    /// The seconds a quarter line says the player stood at.
    private func position(_ line: String) -> Double? {
        guard let match = line.firstMatch(of: /\((\d+):(\d\d)\.(\d) of/) else { return nil }
        return Double(Int(match.output.1)! * 60 + Int(match.output.2)!) + Double(Int(match.output.3)!) / 10
    }

    @Test func aFileGetsAStartLineItsQuartersAndASummaryWithoutEscapeCodes() throws {
        let tones = try TestTones()
        let path = try tones.tone("one-second.wav", seconds: 1)
        let result = try Tool.run(["play", path, "--output", "null"])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = lines(result)
        try #require(lines.count == 5, "\(lines)")
        #expect(lines[0] == "spool: playing \(path) (8000 Hz, 1 ch, 1.00 s) on null via queue (8000 Hz, 2 ch, 1024 × 3 frames)")
        for (line, mark) in zip(lines[1...3], [25, 50, 75]) {
            #expect(line.hasPrefix("spool: \(mark)% ("), "\(line)")
            #expect(line.hasSuffix(" of 0:01.0)"), "\(line)")
            // Printed once the player passed the mark (tenths cut: 0.25 s may read 0:00.2).
            #expect((position(line) ?? -1) >= Double(mark) / 100 - 0.1, "\(line)")
        }
        #expect(lines[4].hasPrefix("spool: played 8000 frames in "), "\(lines[4])")
        #expect(lines[4].hasSuffix(" s, 0 underruns"), "\(lines[4])")
        #expect(!result.stderr.utf8.contains(0x1B) && !result.stdout.contains(0x1B), "no escape codes")
        #expect(result.stdout.isEmpty)
    }

    @Test func aLoopingFileMarksTheQuartersOfEachPass() throws {
        let tones = try TestTones()
        let path = try tones.tone("half-second.wav", seconds: 0.5)
        let result = try Tool.run(["play", path, "--output", "null", "--loops", "1"])
        #expect(result.status == 0, "\(result.stderr)")
        let marks = lines(result).compactMap { line -> String? in
            guard let match = line.firstMatch(of: #/^spool: (\d+)%( of pass 2)? /#) else { return nil }
            return "\(match.output.1)\(match.output.2 ?? "")"
        }
        #expect(marks == ["25", "50", "75", "25 of pass 2", "50 of pass 2", "75 of pass 2"], "\(result.stderr)")
        #expect(result.stderr.contains("spool: played 8000 frames"), "both passes: \(result.stderr)")
    }

    @Test func severalFilesPlayInTurnAndStartLateWithStart() throws {
        let tones = try TestTones()
        let first = try tones.tone("first.wav", seconds: 0.5)
        let second = try tones.tone("second.wav", seconds: 1, sampleRate: 16_000)
        let result = try Tool.run(["play", first, second, "--output", "null", "--start", "0.25"])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = lines(result)
        let starts = lines.indices.filter { lines[$0].hasPrefix("spool: playing ") }
        let summaries = lines.indices.filter { lines[$0].hasPrefix("spool: played ") }
        try #require(starts.count == 2 && summaries.count == 2, "\(lines)")
        #expect(lines[starts[0]].contains(first) && lines[starts[1]].contains(second))
        #expect(starts[0] < summaries[0] && summaries[0] < starts[1] && starts[1] < summaries[1], "in turn: \(lines)")
        // Each from 0.25 s: 2000 of 4000 frames, then 12000 of 16000 (converted to the first
        // file's 8 kHz device, the count is the source's).
        #expect(lines[summaries[0]].hasPrefix("spool: played 2000 frames"), "\(lines[summaries[0]])")
        #expect(lines[summaries[1]].hasPrefix("spool: played 12000 frames"), "\(lines[summaries[1]])")
        // Started at 50 % of the first file, only the 75 % mark is left to pass.
        let firstMarks = lines[starts[0]..<summaries[0]].filter { $0.contains("%") }
        #expect(firstMarks.count == 1 && firstMarks.first?.hasPrefix("spool: 75% ") == true, "\(firstMarks)")
    }

    @Test func quietPrintsOnlyErrors() throws {
        let tones = try TestTones()
        let path = try tones.tone("quiet.wav", seconds: 0.3)
        let quiet = try Tool.run(["play", path, "--output", "null", "--quiet"])
        #expect(quiet.status == 0)
        #expect(quiet.stderr.isEmpty, "\(quiet.stderr)")
        #expect(quiet.stdout.isEmpty)

        let truncated = Tool.fixture("broken/truncated.wav")
        let failing = try Tool.run(["play", path, truncated, "--output", "null", "--quiet"])
        #expect(failing.status == 1)
        let lines = lines(failing)
        #expect(lines.count == 1, "\(lines)")
        #expect(lines.first?.hasPrefix("spool: ") == true && lines.first?.contains("truncated.wav: data ends early") == true,
                "\(lines)")
    }

    @Test func aDecodeErrorPlaysThePrefixThenExitsWithStatus1() throws {
        let result = try Tool.run(["play", Tool.fixture("broken/truncated.wav"), "--output", "null"])
        #expect(result.status == 1)
        // The manifest: 13225 whole frames survive the cut, and they all play.
        #expect(result.stderr.contains("spool: played 13225 frames"), "\(result.stderr)")
        #expect(result.stderr.contains("truncated.wav: data ends early at byte"), "\(result.stderr)")
    }

    @Test func aFileThatIsNoAudioIsReportedOnceAndTheOthersPlay() throws {
        let tones = try TestTones()
        let path = try tones.tone("after.wav", seconds: 0.3)
        let text = Tool.fixture("broken/text.mp3")
        let result = try Tool.run(["play", text, path, text, "--output", "null"])
        #expect(result.status == 1)
        let lines = lines(result)
        #expect(lines.filter { $0.contains("text.mp3: ") }.count == 2, "once each time it comes: \(lines)")
        #expect(lines.contains { $0.hasPrefix("spool: playing \(path)") })
        #expect(lines.contains { $0.hasPrefix("spool: played 2400 frames") }, "\(lines)")
    }

    @Test func aMissingFileStopsEverythingBeforeItStarts() throws {
        let tones = try TestTones()
        let path = try tones.tone("present.wav", seconds: 0.3)
        let result = try Tool.run(["play", path, "/nonexistent/missing.ogg", "--output", "null"])
        #expect(result.status == 1)
        #expect(result.stderr == "spool: /nonexistent/missing.ogg: cannot open: No such file or directory\n")
    }

    @Test func usageMistakesExitWith2() throws {
        let file = Tool.fixture("wav-8000-mono-ulaw.wav")
        for arguments in [["--bogus"], ["--time-stretch", "--varispeed"], ["--start", "-1"], ["--rate", "3"],
                          ["--output", "wav:/tmp/never.wav", "--loops", "-1"], ["--loops", "x"]] {
            let result = try Tool.run(["play", file] + arguments)
            #expect(result.status == 2, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains("try 'spool play --help'"), "\(arguments)")
        }
        let help = try Tool.run(["play", "--help"])
        for option in ["--start SECONDS", "--time-stretch", "--varispeed", "--quiet", "space pause/resume"] {
            #expect(help.text.contains(option), "\(option) missing from spool play --help")
        }
    }
}
