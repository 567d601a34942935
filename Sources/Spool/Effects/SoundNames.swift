import Foundation
import SpoolCore

/// How the sound bank and the music pool find a sound by name: the file name with or without
/// its extension, and the nearest names when nothing matches.
enum SoundNames {
    /// Extensions of the formats Spool decodes: what a folder load tries.
    static let audioExtensions: Set<String> = ["mp3", "mp2", "ogg", "oga", "opus", "wav", "wave", "aif", "aiff", "aifc",
                                               "caf", "flac"]

    /// The audio files directly in `directory`, by name, sorted.
    static func audioFiles(in directory: URL) throws -> [URL] {
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: directory.path) } catch {
            throw AudioError(.fileNotFound, "\(directory.path): cannot list the folder", underlying: error)
        }
        return names.sorted().filter { !$0.hasPrefix(".") && audioExtensions.contains(($0 as NSString).pathExtension.lowercased()) }
            .map { directory.appendingPathComponent($0) }
    }

    /// The one of `names` that `name` means: equal to it, or to it without its extension.
    ///
    /// - Throws: `.fileNotFound` naming the nearest names; `.invalidParameter` when several
    ///   files share the name without extension.
    static func resolve(_ name: String, among names: [String], what: String) throws -> String {
        if names.contains(name) { return name }
        let matches = names.filter { ($0 as NSString).deletingPathExtension == name }
        if matches.count == 1, let match = matches.first { return match }
        if matches.count > 1 {
            throw AudioError(.invalidParameter, "'\(name)' could be any of \(matches.joined(separator: ", ")) in the \(what); give the extension")
        }
        let nearest = Self.nearest(name, among: names)
        let hint = nearest.isEmpty ? "it is empty" : "the nearest: \(nearest.joined(separator: ", "))"
        throw AudioError(.fileNotFound, "no sound named '\(name)' in the \(what); \(hint)")
    }

    /// Up to three of `names` closest to `name` by edit distance (on the names without
    /// extension), closest first.
    static func nearest(_ name: String, among names: [String]) -> [String] {
        let target = Array(name.lowercased())
        return names.map { candidate -> (String, Int) in
            let base = Array((candidate as NSString).deletingPathExtension.lowercased())
            return (candidate, editDistance(target, base))
        }
        .sorted { ($0.1, $0.0) < ($1.1, $1.0) }
        .prefix(3).map(\.0)
    }

    /// Levenshtein distance.
    static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var current = [i + 1] + [Int](repeating: 0, count: b.count)
            for (j, y) in b.enumerated() {
                current[j + 1] = min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
