import Foundation
import SpoolCore
import SpoolDecoding

/// Names a completion added to a `SystemSound`, to remove it later.
public struct SystemSoundCompletionToken: Hashable, Sendable {
    let rawValue: Int
}

/// A short sound, decoded and converted to its output's format once, played any number of
/// times, overlapping itself: the System Sound Services model.
///
/// Spool takes any format it decodes (System Sound Services takes only PCM or IMA4 in CAF,
/// AIFF or WAV) and keeps no length limit of its own (System Sound Services stops at 30 s):
/// the sound is held whole in memory, converted, so its length is bounded by the output's
/// cache budget, which a sound larger than the budget is still played from but not kept in.
///
/// The corresponding Apple calls are `AudioServicesCreateSystemSoundID` (the initialisers),
/// `AudioServicesPlaySystemSound` (`play()`), `AudioServicesAddSystemSoundCompletion` /
/// `…RemoveSystemSoundCompletion` and `AudioServicesDisposeSystemSoundID` (`dispose()`).
public final class SystemSound: Sendable {
    /// Where it plays.
    public let effects: SoundEffects
    /// Its frames, at the output's rate and channel count.
    public let buffer: PCMBuffer
    /// A name for messages: the file's path, or the name given.
    public let name: String
    /// Its priority when voices run out (see `SoundEffects`); higher keeps its voice.
    public let priority: Int
    /// On a back-end with shared buffers (OpenAL), the sound held there once, which every
    /// play's voice shares.
    private let sharedBuffer: (any SharedBuffer)?
    private let state = Locked(State())

    private struct State: Sendable {
        var disposed = false
        var completions = HandlerList<SystemSoundCompletionToken, @Sendable (SystemSound) -> Void>()
    }

    /// Makes a sound from a file: decoded and converted once, and kept in the output's cache
    /// for every sound made from the same file.
    ///
    /// - Parameters:
    ///   - url: A file in a format Spool decodes.
    ///   - effects: Where it plays; `nil` for `SoundEffects.shared()`.
    ///   - priority: Its priority when voices run out.
    /// - Throws: The decoder's `AudioError`; `.emptyInput` for a file with no frames.
    public convenience init(contentsOf url: URL, effects: SoundEffects? = nil, priority: Int = 0) throws {
        let effects = try effects ?? SoundEffects.shared()
        let path = url.standardizedFileURL.path
        // The file's size and modification time are in the key: a changed file is decoded again.
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        let stamp = "\(attributes?[.size] ?? 0)@\((attributes?[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0)"
        let format = effects.format
        let key = BufferCache.Key("effect \(path) \(stamp) as \(format)")
        let buffer = try effects.cache.buffer(forKey: key) {
            try DecoderRegistry.shared.open(.file(url)).decodeAll().converted(to: format)
        }
        try self.init(converted: buffer, name: path, effects: effects, priority: priority)
    }

    /// Makes a sound from encoded bytes in memory (a file's bytes).
    ///
    /// - Parameters:
    ///   - data: The bytes.
    ///   - typeHint: A file extension or MIME type; it only breaks ties.
    ///   - name: A name for messages.
    ///   - effects: As `init(contentsOf:effects:priority:)`.
    ///   - priority: As `init(contentsOf:effects:priority:)`.
    /// - Throws: As `init(contentsOf:effects:priority:)`.
    public convenience init(data: Data, typeHint: String? = nil, name: String = "<memory>", effects: SoundEffects? = nil,
                            priority: Int = 0) throws {
        let effects = try effects ?? SoundEffects.shared()
        let decoded = try DecoderRegistry.shared.open(.memory(data, name: name, typeHint: typeHint)).decodeAll()
        try self.init(converted: decoded.converted(to: effects.format), name: name, effects: effects, priority: priority)
    }

    /// Makes a sound from PCM (a program's own, or a cached decode), converted to the output.
    ///
    /// - Parameters:
    ///   - buffer: At least one frame.
    ///   - name: A name for messages.
    ///   - effects: As `init(contentsOf:effects:priority:)`.
    ///   - priority: As `init(contentsOf:effects:priority:)`.
    /// - Throws: `.emptyInput` for an empty buffer.
    public convenience init(buffer: PCMBuffer, name: String = "<buffer>", effects: SoundEffects? = nil,
                            priority: Int = 0) throws {
        let effects = try effects ?? SoundEffects.shared()
        try self.init(converted: buffer.converted(to: effects.format), name: name, effects: effects, priority: priority)
    }

    private init(converted: PCMBuffer, name: String, effects: SoundEffects, priority: Int) throws {
        guard converted.frameCount > 0 else { throw AudioError(.emptyInput, "\(name): the sound holds no frames") }
        buffer = converted
        self.name = name
        self.effects = effects
        self.priority = priority
        sharedBuffer = try effects.sharedBuffer(for: converted)
    }

    /// Plays the sound once, from its first frame, beside whatever plays already (itself
    /// included). It starts on the output's next period. The corresponding Apple call is
    /// `AudioServicesPlaySystemSound`.
    ///
    /// - Returns: The play, to follow (`framesPlayed`) or stop early.
    /// - Throws: `.invalidState` once disposed; `.deviceUnavailable` when every voice plays a
    ///   sound of a higher priority; the back-end's error.
    @discardableResult
    public func play() throws -> SoundPlay {
        guard !isDisposed else { throw AudioError(.invalidState, "\(name): the sound was disposed") }
        // Held weakly: a play must not keep its sound (and, through it, the output) alive, or
        // a play that never finishes (its device no longer rendered) would hold both for ever.
        return try effects.play(buffer, sharedBuffer: sharedBuffer, priority: priority) { [weak self] in self?.playFinished() }
    }

    /// Adds a handler to run, on the output's `eventQueue`, each time a play of this sound has
    /// finished: after its last frame has been mixed, or once it was stopped to make room.
    /// Completions run while the program keeps the sound; a play of a sound let go of plays to
    /// its end without them.
    ///
    /// - Returns: A token for `removeCompletion(_:)`.
    ///
    /// The corresponding Apple call is `AudioServicesAddSystemSoundCompletion`.
    @discardableResult
    public func addCompletion(_ handler: @escaping @Sendable (SystemSound) -> Void) -> SystemSoundCompletionToken {
        state.withLock { $0.completions.add(handler, makeToken: SystemSoundCompletionToken.init(rawValue:)) }
    }

    /// Removes a completion; an unknown token is ignored. The corresponding Apple call is
    /// `AudioServicesRemoveSystemSoundCompletion`.
    public func removeCompletion(_ token: SystemSoundCompletionToken) {
        state.withLock { $0.completions.remove(token) }
    }

    /// Ends the sound: later plays throw; plays under way finish, with their completions.
    /// The corresponding Apple call is `AudioServicesDisposeSystemSoundID`.
    public func dispose() { state.withLock { $0.disposed = true } }

    /// Whether `dispose()` was called.
    public var isDisposed: Bool { state.withLock { $0.disposed } }

    private func playFinished() {
        let handlers = state.withLock { $0.completions.handlers }
        for handler in handlers { handler(self) }
    }
}
