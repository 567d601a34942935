import Foundation
import Spool
import Testing
import SpoolTestSupport

/// `spool effects DIR [NAME…]`, run as a program on the null device.
@Suite("spool effects")
struct EffectsCommandTests {
    @Test(arguments: ["queue", "openal"])
    func loadsAFolderListsBrokenFilesAndTimesEachTrigger(_ backend: String) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spool-effects-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        for (from, to) in [("wav-8000-mono-ulaw.wav", "beep.wav"), ("broken/text.mp3", "broken.mp3"),
                           ("vorbis-22050-mono.ogg", "chime.ogg")] {
            try FileManager.default.copyItem(atPath: Tool.fixture(from), toPath: directory.appendingPathComponent(to).path)
        }
        // Each trigger is timed on the wall clock while the rest of the suite runs beside it, on
        // two cores: a run whose triggers were held off by the machine is run again, at most
        // three times in all. A trigger the library starts late is late every run.
        var late: [String] = []
        for _ in 0..<3 {
            let result = try Tool.run(["effects", directory.path, "beep", "chime.ogg", "--backend", backend, "--output", "null",
                                       "--buffer-frames", "256"])
            #expect(result.status == 0, "\(result.stderr)")
            let lines = result.text.split(separator: "\n").map(String.init)
            #expect(lines.first?.hasPrefix("2 sounds loaded from") == true, "\(lines)")
            #expect(lines.contains { $0.contains("could not load broken.mp3") })
            let triggers = lines.filter { $0.contains("play() → first frame heard") }
            #expect(triggers.count == 2)
            // 256 × 3 frames at 48 kHz: a sound starts within the device's buffer, 5.3…16 ms.
            late = triggers.filter { line in
                let milliseconds = line.split(separator: " ").reversed().dropFirst().first.flatMap { Double($0) } ?? -1
                return !(milliseconds > 0 && milliseconds < 16 + 5.33 + 2)
            }
            if late.isEmpty { break }
        }
        #expect(late.isEmpty, "late in each of three runs: \(late)")
        let unknown = try Tool.run(["effects", directory.path, "beeb", "--output", "null", "--backend", backend])
        #expect(unknown.status == 1)
        #expect(unknown.stderr.contains("no sound named 'beeb'") && unknown.stderr.contains("beep.wav"), "\(unknown.stderr)")
    }
}
