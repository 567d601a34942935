import Dispatch
import Foundation
import SpoolCore

/// One `AudioPlayer` per music file, made on first use and reused after: the music tool iOS
/// games keep beside their sound tool (a dictionary of players by file name).
///
/// Memory is bounded: past `maximumPlayers`, the least recently used player goes (stopped
/// first, with its 5 ms fade), those not playing before those playing. A file's player is
/// made again when its name is asked for next.
public final class MusicPlayerPool: Sendable {
    /// The folder names are looked up in (a name may also be an absolute path).
    public let directory: URL
    /// Where the players play; `nil` means `AudioPlayer.defaultBackend()`.
    public let backend: (any PlaybackBackend)?
    /// Players kept at most.
    public let maximumPlayers: Int
    private let state = Locked(State())

    private struct State: Sendable {
        /// Players by file name, and the names from least to most recently used.
        var players: [String: AudioPlayer] = [:]
        var recency: [String] = []
    }

    /// Makes an empty pool.
    ///
    /// - Parameters:
    ///   - directory: Where names are looked up.
    ///   - backend: Where to play; `nil` for the default.
    ///   - maximumPlayers: Players kept at most, 1…64 (default 4).
    /// - Throws: `.invalidParameter` for a limit out of range.
    public init(directory: URL, backend: (any PlaybackBackend)? = nil, maximumPlayers: Int = 4) throws {
        guard (1...64).contains(maximumPlayers) else {
            throw AudioError(.invalidParameter, "maximumPlayers must be within 1...64, not \(maximumPlayers)")
        }
        self.directory = directory
        self.backend = backend
        self.maximumPlayers = maximumPlayers
    }

    /// The player of a file, made on first use.
    ///
    /// - Parameter name: A file name in `directory`, with or without its extension.
    /// - Throws: `.fileNotFound` with the nearest names; the player's error.
    public func player(named name: String) throws -> AudioPlayer {
        let key = try SoundNames.resolve(name, among: SoundNames.audioFiles(in: directory).map(\.lastPathComponent),
                                         what: "folder \(directory.path)")
        let (player, released) = try state.withLock { s -> (AudioPlayer, [AudioPlayer]) in
            s.recency.removeAll { $0 == key }
            s.recency.append(key)
            if let player = s.players[key] { return (player, []) }
            let player = try AudioPlayer(contentsOf: directory.appendingPathComponent(key), backend: backend)
            s.players[key] = player
            var released: [AudioPlayer] = []
            while s.players.count > maximumPlayers {
                let candidates = s.recency.dropLast()
                guard let victim = candidates.first(where: { s.players[$0]?.isPlaying == false }) ?? candidates.first else { break }
                s.recency.removeAll { $0 == victim }
                if let gone = s.players.removeValue(forKey: victim) { released.append(gone) }
            }
            return (player, released)
        }
        for gone in released { try? gone.stop() }
        return player
    }

    /// Plays a file's player (resuming it where it paused).
    ///
    /// - Returns: The player.
    /// - Throws: As `player(named:)` and `AudioPlayer.play()`.
    @discardableResult
    public func playMusic(named name: String) throws -> AudioPlayer {
        let player = try player(named: name)
        try player.play()
        return player
    }

    /// Pauses a file's player, if it has one.
    ///
    /// - Throws: `.fileNotFound` for a name not in the folder; the player's error.
    public func pauseMusic(named name: String) throws { try existing(name)?.pause() }

    /// Stops a file's player, if it has one (it keeps its place, as `AudioPlayer.stop()`).
    ///
    /// - Throws: `.fileNotFound` for a name not in the folder; the player's error.
    public func stopMusic(named name: String) throws { try existing(name)?.stop() }

    /// Players kept now.
    public var playerCount: Int { state.withLock { $0.players.count } }

    private func existing(_ name: String) throws -> AudioPlayer? {
        let key = try SoundNames.resolve(name, among: SoundNames.audioFiles(in: directory).map(\.lastPathComponent),
                                         what: "folder \(directory.path)")
        return state.withLock { $0.players[key] }
    }
}
