import Foundation
import Testing
import SpoolTestSupport

/// libmpg123 prints notes on stderr ("Note: Illegal Audio-MPEG-Header…",
/// "[src/libmpg123/layer3.c:…] error: …") unless told to be quiet. Spool says what matters
/// as warnings; nothing else may reach a program's stderr. Checked in a child process (the
/// `spool` tool), where stderr is the decoder's alone.
@Suite("MP3: libmpg123 prints nothing")
struct MP3DiagnosticsTests {
    /// The `spool` executable, built beside the test bundle.
    static let tool: URL? = {
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = dir.appendingPathComponent("spool")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            dir = dir.deletingLastPathComponent()
        }
        let fallback = Fixtures.directory.deletingLastPathComponent().appendingPathComponent(".build/debug/spool")
        return FileManager.default.isExecutableFile(atPath: fallback.path) ? fallback : nil
    }()

    /// Runs `spool ARGUMENTS` and returns its exit status and stderr.
    func run(_ arguments: [String]) throws -> (status: Int32, stderr: String) {
        guard let tool = Self.tool else {
            Issue.record("the spool executable is not built (swift build --build-tests builds it)")
            return (-1, "")
        }
        let process = Process()
        process.executableURL = tool
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // Drain stdout while reading stderr, so a large decode cannot fill a pipe and stall.
        let drain = Thread { _ = out.fileHandleForReading.readDataToEndOfFile() }
        drain.start()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: stderr, as: UTF8.self))
    }

    /// Lines on stderr that are not Spool's own (`spool: FILE: …`).
    func foreignLines(_ stderr: String) -> [Substring] {
        stderr.split(separator: "\n").filter { !$0.hasPrefix("spool: ") }
    }

    @Test("MPEG audio in a WAV file, whole, damaged or with its chunks out of order: Spool's words only")
    func mpegInsideAWAVNeverReachesLibsndfilesMPEGDecoder() throws {
        // WAV files of MPEG audio (format tags 0x50 and 0x55) are decoded by Spool's MP3
        // decoder over the data chunk, quietly; those whose chunks cannot be walked are
        // refused with a message about the header, never libsndfile's words about missing
        // files, and nothing of libmpg123 reaches stderr.
        let mp3 = try Data(contentsOf: URL(fileURLWithPath: Fixtures.path("mp3-44100-stereo.mp3")))
        func chunk(_ id: String, _ body: Data) -> Data {
            var out = Data(id.utf8)
            withUnsafeBytes(of: UInt32(body.count).littleEndian) { out.append(contentsOf: $0) }
            out.append(body)
            if body.count % 2 == 1 { out.append(0) }
            return out
        }
        // WAVEFORMATEX for MPEG layer III with MPEGLAYER3WAVEFORMAT's 12 bytes.
        var format = Data()
        for (value, size) in [(0x55, 2), (2, 2), (44_100, 4), (16_000, 4), (1, 2), (0, 2), (12, 2), (1, 2), (2, 4),
                              (417, 2), (1, 2), (1393, 2)] {
            withUnsafeBytes(of: UInt32(value).littleEndian) { format.append(contentsOf: $0.prefix(size)) }
        }
        func riff(_ chunks: [Data]) -> Data {
            let body = Data("WAVE".utf8) + chunks.reduce(Data(), +)
            var out = Data("RIFF".utf8)
            withUnsafeBytes(of: UInt32(body.count).littleEndian) { out.append(contentsOf: $0) }
            return out + body
        }
        var damaged = mp3
        for index in stride(from: 400, to: damaged.count, by: 97) { damaged[index] ^= 0x5A }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spool-mpeg-wav-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // The damaged frames end as the same bytes do in a plain MP3 file.
        let plain = directory.appendingPathComponent("damaged.mp3").path
        try damaged.write(to: URL(fileURLWithPath: plain))
        let asMP3 = try run(["decode", plain, "--output", "-"]).status
        let cases: [(name: String, bytes: Data, status: Int32)] = [
            ("whole", riff([chunk("fmt ", format), chunk("data", mp3)]), 0),
            ("damaged", riff([chunk("fmt ", format), chunk("data", damaged)]), asMP3),
            ("data-first", riff([chunk("data", mp3), chunk("fmt ", format)]), 1),
        ]
        for (name, bytes, status) in cases {
            let path = directory.appendingPathComponent("\(name).wav").path
            try bytes.write(to: URL(fileURLWithPath: path))
            let result = try run(["decode", path, "--output", "-"])
            #expect(result.status == status, "\(name): \(result.stderr)")
            #expect(foreignLines(result.stderr).isEmpty, "\(name): \(result.stderr)")
            #expect(!result.stderr.contains("does not exist"), "\(name): \(result.stderr)")
            if status != 0 { #expect(!result.stderr.isEmpty, "\(name): the failure is said") }
        }
    }

    static let valid = MP3Fixtures.all.filter { $0.damaged != true }.map(\.path)
        + ["mp3-44100-stereo.mp3", "mp3-22050-mono-vbr.mp3", "mp3-11025-mono.mp3", "mp3-48000-stereo-notag.mp3",
           "mp3-32000-stereo-apev2.mp3", "mp2-48000-stereo.mp2"].map(Fixtures.path)

    @Test("a valid file: nothing at all on stderr", arguments: valid)
    func validFileIsSilent(_ path: String) throws {
        for arguments in [["info", path], ["decode", path, "--output", "-"]] {
            let result = try run(arguments)
            #expect(result.status == 0)
            #expect(result.stderr.isEmpty, "\(arguments[0]): \(result.stderr)")
        }
    }

    /// Damaged files: the fixtures', and mutants of them with bytes overwritten in the frames
    /// (bad side information, bad Huffman data, broken headers, junk between frames).
    static func damaged() throws -> [String] {
        var paths = MP3Fixtures.all.filter { $0.damaged == true }.map(\.path)
            + ["broken/truncated.mp3", "broken/corrupt-middle.mp3", "broken/huge-xing.mp3"].map(Fixtures.path)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spool-mp3-mutants-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var seed: UInt64 = 0x5EED
        func next() -> Int {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int(truncatingIfNeeded: seed >> 33)
        }
        for source in ["lame-44100-stereo-vbr.mp3", "lame-16000-mono-vbr.mp3", "vbri-cbr.mp3"] {
            let original = [UInt8](try Data(contentsOf: URL(fileURLWithPath: MP3Fixtures.entry(source).path)))
            for k in 0..<8 {
                var bytes = original
                for _ in 0..<(8 + k * 16) { bytes[next() % bytes.count] = UInt8(truncatingIfNeeded: next()) }
                let url = directory.appendingPathComponent("\(k)-\(source)")
                try Data(bytes).write(to: url)
                paths.append(url.path)
            }
        }
        return paths
    }

    @Test func damagedFilesSayOnlyWhatSpoolSays() throws {
        for path in try Self.damaged() {
            for arguments in [["info", path], ["decode", path, "--output", "-"]] {
                let result = try run(arguments)
                #expect(result.status == 0 || result.status == 1)
                #expect(foreignLines(result.stderr).isEmpty, "\(arguments[0]) \(path): \(result.stderr)")
            }
        }
    }
}
