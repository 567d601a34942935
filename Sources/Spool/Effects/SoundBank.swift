import Dispatch
import Foundation
import SpoolCore

/// What `SoundBank.load(directory:)` did.
public struct SoundBankReport: Sendable, CustomStringConvertible {
    /// The names loaded, sorted.
    public var loaded: [String]
    /// Files that could not be loaded, with why; the others loaded all the same.
    public var failures: [(name: String, error: AudioError)]

    public var description: String {
        var lines = ["loaded \(loaded.count) sound\(loaded.count == 1 ? "" : "s")"]
        for failure in failures { lines.append("could not load \(failure.name): \(failure.error.message)") }
        return lines.joined(separator: "\n")
    }
}

/// Every sound of a program, loaded once and played by name: the sound tool iOS games keep as
/// a singleton (a dictionary of sound IDs, filled from a folder at launch).
///
/// Sounds are `SystemSound`s on one `SoundEffects` output, so each is decoded and converted
/// once (through the output's cache) and plays as a copy.
public final class SoundBank: Sendable {
    /// Where the sounds play.
    public let effects: SoundEffects
    private let sounds = Locked<[String: SystemSound]>([:])
    /// Why the files that did not load failed, by file name: asked for by name, such a sound
    /// is refused with the reason, not as unknown.
    private let failures = Locked<[String: AudioError]>([:])

    /// Makes an empty bank.
    ///
    /// - Parameter effects: Where its sounds play; `nil` for `SoundEffects.shared()`.
    /// - Throws: The output's error.
    public init(effects: SoundEffects? = nil) throws {
        self.effects = try effects ?? SoundEffects.shared()
    }

    private static let sharedBank = Locked<SoundBank?>(nil)

    /// One bank for the whole program, on `SoundEffects.shared()`, made on first use.
    ///
    /// - Throws: The output's error.
    public static func shared() throws -> SoundBank {
        try sharedBank.withLock { shared in
            if let shared { return shared }
            let bank = try SoundBank()
            shared = bank
            return bank
        }
    }

    /// Loads every audio file directly in `directory` (by extension: MP3, Ogg, Opus, WAV,
    /// AIFF, CAF, FLAC), decoding on every core. A file that fails is listed in the report and
    /// the rest load; a name loaded already is loaded again.
    ///
    /// - Parameter directory: The folder.
    /// - Returns: What loaded and what did not.
    /// - Throws: `.fileNotFound` when the folder cannot be listed.
    @discardableResult
    public func load(directory: URL) throws -> SoundBankReport {
        let files = try SoundNames.audioFiles(in: directory)
        let results = Locked<[Int: Result<SystemSound, AudioError>]>([:])
        let effects = self.effects
        DispatchQueue.concurrentPerform(iterations: files.count) { index in
            let result: Result<SystemSound, AudioError>
            do { result = .success(try SystemSound(contentsOf: files[index], effects: effects)) } catch {
                result = .failure(error as? AudioError ?? AudioError(.readFailed, "\(files[index].path): \(error)", underlying: error))
            }
            results.withLock { $0[index] = result }
        }
        var report = SoundBankReport(loaded: [], failures: [])
        let all = results.withLock { $0 }
        for (index, file) in files.enumerated() {
            switch all[index] {
            case .success(let sound)?:
                sounds.withLock { $0[file.lastPathComponent] = sound }
                _ = failures.withLock { $0.removeValue(forKey: file.lastPathComponent) }
                report.loaded.append(file.lastPathComponent)
            case .failure(let error)?:
                failures.withLock { $0[file.lastPathComponent] = error }
                report.failures.append((file.lastPathComponent, error))
            case nil: break
            }
        }
        return report
    }

    /// Loads one file under its file name.
    ///
    /// - Returns: The sound.
    /// - Throws: The decoder's error.
    @discardableResult
    public func preload(_ url: URL) throws -> SystemSound {
        let sound: SystemSound
        do { sound = try SystemSound(contentsOf: url, effects: effects) } catch let error as AudioError {
            failures.withLock { $0[url.lastPathComponent] = error }
            throw error
        }
        sounds.withLock { $0[url.lastPathComponent] = sound }
        _ = failures.withLock { $0.removeValue(forKey: url.lastPathComponent) }
        return sound
    }

    /// Drops a sound; plays under way finish.
    ///
    /// - Parameter name: Its file name, with or without the extension.
    /// - Returns: Whether a sound went.
    @discardableResult
    public func unload(named name: String) -> Bool {
        sounds.withLock { sounds in
            guard let key = try? SoundNames.resolve(name, among: Array(sounds.keys), what: "sound bank") else { return false }
            sounds[key]?.dispose()
            return sounds.removeValue(forKey: key) != nil
        }
    }

    /// The names loaded, sorted.
    public var names: [String] { sounds.withLock { $0.keys.sorted() } }

    /// The sound of a name.
    ///
    /// - Parameter name: Its file name, with or without the extension.
    /// - Throws: For a file that failed to load, its error's code, with a message that says
    ///   so and why; `.fileNotFound` for an unknown name, with the nearest names loaded;
    ///   `.invalidParameter` when the name without extension fits several files.
    public func sound(named name: String) throws -> SystemSound {
        let failed = failures.withLock { f in
            (try? SoundNames.resolve(name, among: Array(f.keys), what: "sound bank")).flatMap { key in f[key].map { (key, $0) } }
        }
        return try sounds.withLock { sounds in
            if let (file, error) = failed, sounds[file] == nil {
                throw AudioError(error.code, "the sound '\(name)' (\(file)) did not load: \(error.message)", underlying: error)
            }
            let key = try SoundNames.resolve(name, among: Array(sounds.keys), what: "sound bank")
            guard let sound = sounds[key] else { throw AudioError(.fileNotFound, "no sound named '\(name)'") }
            return sound
        }
    }

    /// Plays a sound by name (see `SystemSound.play()`).
    ///
    /// - Parameter name: Its file name, with or without the extension.
    /// - Returns: The sound played, for its completion.
    /// - Throws: As `sound(named:)` and `SystemSound.play()`.
    @discardableResult
    public func play(named name: String) throws -> SystemSound {
        let sound = try sound(named: name)
        try sound.play()
        return sound
    }
}
