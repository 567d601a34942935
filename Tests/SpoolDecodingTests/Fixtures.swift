import Foundation
import SpoolCore
import SpoolTestSupport

/// The committed fixtures and their manifest (`Fixtures/manifest.json`).
enum Fixtures {
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures")

    struct Entry: Decodable, Sendable, CustomStringConvertible {
        let file: String
        let container: String
        let codec: String
        let sampleRate: Double
        let channels: Int
        let frames: Int
        let lossless: Bool
        let reference: String?
        let tags: [String: String]?
        var description: String { file }
    }

    /// A damaged file's facts (`broken` in the manifest), as far as the tests use them.
    struct BrokenEntry: Decodable, Sendable {
        let file: String
        let `case`: String
        let originalBytes: Int?
        let truncatedAtByte: Int?
        let framesPresent: Int?
        let fullFrames: Int?
    }

    struct Manifest: Decodable {
        let fixtures: [Entry]
        let broken: [BrokenEntry]
    }

    /// A fixture's bytes. Read with `FileHandle` in pieces, not `Data(contentsOf:)`: for an empty
    /// file (`broken/empty.mp3`) Foundation's whole-file read leaks the 4096-byte buffer it
    /// reads into, which LeakSanitizer reports.
    static func bytes(_ name: String) throws -> [UInt8] {
        let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path(name)))
        defer { try? handle.close() }
        var out: [UInt8] = []
        while let piece = try handle.read(upToCount: 1 << 20), !piece.isEmpty { out += piece }
        return out
    }

    static let manifest: Manifest = {
        let data = try! Data(contentsOf: directory.appendingPathComponent("manifest.json"))
        return try! JSONDecoder().decode(Manifest.self, from: data)
    }()

    static var all: [Entry] { manifest.fixtures }

    /// The manifest's facts about `broken/<name>`.
    static func broken(_ name: String) -> BrokenEntry? { manifest.broken.first { $0.file == "broken/\(name)" } }

    static func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// The reference PCM (ffmpeg's decode) as interleaved floats.
    static func reference(_ entry: Entry) throws -> [Float] {
        let data = try Data(contentsOf: directory.appendingPathComponent(entry.reference ?? "reference/\(entry.file).f32"))
        return data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }
}

/// Signal-to-noise ratio of `actual` against `reference`, in dB, over their common length.
func snr(_ actual: ArraySlice<Float>, _ reference: ArraySlice<Float>) -> Double {
    var signal = 0.0, noise = 0.0
    for (a, r) in zip(actual, reference) {
        signal += Double(r) * Double(r)
        noise += Double(a - r) * Double(a - r)
    }
    return noise == 0 ? .infinity : 10 * log10(signal / noise)
}
