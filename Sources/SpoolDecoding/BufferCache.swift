import Foundation
import SpoolCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Decoded audio held in memory under a byte budget, shared by every player and back-end.
///
/// Ask it for a file, for encoded data registered under a name, or for any key with a
/// decode closure of your own; it decodes on a miss and hands back the same reference-counted
/// `PCMBuffer` on every hit. Least recently used items go first when the budget is full; a
/// buffer a player still holds stays valid after eviction, since the cache only drops its own
/// reference.
///
/// Keys cannot go stale: a file is keyed by its path together with its size, modification
/// and change times and inode, so a rewritten file decodes again. Requests for one key that
/// arrive while it is being decoded wait for that decode instead of starting their own. A
/// failed decode is not remembered: the next request tries again.
///
/// The closest Apple type is `NSCache` with a `totalCostLimit`; OpenAL programs on iOS keep
/// the same thing by hand, one `alBufferData` buffer per sound shared by many sources.
public final class BufferCache: Sendable {
    /// The most bytes of decoded samples the cache keeps, fixed at creation.
    public let budgetBytes: Int
    /// The registry that opens decoders on a miss.
    public let registry: DecoderRegistry
    // Every field of `State` — recency list, index, pending decodes, registered assets,
    // counters — changes only inside this lock, and never while decoding.
    let state = Locked(State())

    /// Makes an empty cache.
    /// - Parameters:
    ///   - budgetBytes: The most bytes of decoded samples to keep (`PCMBuffer.storageByteCount`
    ///     of each distinct storage); more than 0.
    ///   - registry: Opens decoders on a miss; Spool's shared registry unless given.
    /// - Throws: `AudioError.Code.invalidParameter` when `budgetBytes` is 0 or less.
    public init(budgetBytes: Int, registry: DecoderRegistry = .shared) throws {
        guard budgetBytes > 0 else {
            throw AudioError(.invalidParameter, "buffer cache budget \(budgetBytes) bytes must be more than 0")
        }
        self.budgetBytes = budgetBytes
        self.registry = registry
    }

    // MARK: - Files

    /// The decoded audio of a file, decoding it when it is not cached or has changed.
    ///
    /// A hit costs one `stat` of the file (to notice a rewrite), one lock and one lookup. The
    /// closest Apple call is `NSCache.object(forKey:)`, with the decode on a miss built in.
    /// - Parameter path: The file's path. A relative path is taken from the current folder
    ///   and keyed as the absolute path, as `URL(fileURLWithPath:)` does; other spellings of
    ///   one file (`a/./b`, a symbolic link) are separate entries.
    /// - Returns: The whole file's PCM.
    /// - Throws: `AudioError.Code.fileNotFound` when the file cannot be found,
    ///   `AudioError.Code.readFailed` when the path is not a regular file, or the decoder's error.
    public func buffer(forPath path: String) throws -> PCMBuffer {
        let absolute = Self.absolutePath(path)
        return try obtain(try .file(absolutePath: absolute)) { try self.decode(.file(path: absolute)) }
    }

    /// The decoded audio of a file, decoding it off the caller's task when it is not cached:
    /// the `async` twin of `buffer(forPath:)`. Each `load…` method is the `async` twin of a
    /// blocking `buffer…` one, named apart so that inside an `async` function either can be
    /// called (with one name, the `async` overload would always win).
    /// - Parameter path: The file's path.
    /// - Returns: The whole file's PCM.
    /// - Throws: `AudioError.Code.fileNotFound` when the file cannot be found,
    ///   `AudioError.Code.readFailed` when the path is not a regular file, or the decoder's error.
    public func loadBuffer(forPath path: String) async throws -> PCMBuffer {
        let absolute = Self.absolutePath(path)
        return try await obtain(try .file(absolutePath: absolute)) { try self.decode(.file(path: absolute)) }
    }

    /// The decoded audio of a file URL.
    /// - Parameter url: A `file:` URL.
    /// - Returns: The whole file's PCM.
    /// - Throws: `AudioError.Code.invalidParameter` for a URL that is not a file,
    ///   `AudioError.Code.fileNotFound`, or the decoder's error.
    public func buffer(for url: URL) throws -> PCMBuffer {
        try buffer(forPath: Self.filePath(of: url))
    }

    /// The decoded audio of a file URL, decoding it off the caller's task when needed.
    /// - Parameter url: A `file:` URL.
    /// - Returns: The whole file's PCM.
    /// - Throws: `AudioError.Code.invalidParameter` for a URL that is not a file,
    ///   `AudioError.Code.fileNotFound`, or the decoder's error.
    public func loadBuffer(for url: URL) async throws -> PCMBuffer {
        try await loadBuffer(forPath: Self.filePath(of: url))
    }

    // MARK: - Sources

    /// The decoded audio of any source: a file, or encoded bytes in memory.
    ///
    /// In-memory bytes are keyed by their contents, so equal bytes share one decode and
    /// different bytes never collide; the cache keeps the (shared, copy-on-write) `Data`
    /// as the key while the item is cached. A hit compares the bytes with the cached ones,
    /// the price of a key that cannot go stale: `register(_:name:typeHint:)` gives cheaper hits.
    /// - Parameter source: The encoded audio.
    /// - Returns: The whole source's PCM.
    /// - Throws: `AudioError.Code.fileNotFound` for a missing file, or the decoder's error.
    public func buffer(for source: AudioSource) throws -> PCMBuffer {
        switch source.location {
        case .file(let url): return try buffer(for: url)
        case .memory(let data): return try obtain(.memory(data)) { try self.decode(source) }
        }
    }

    /// The decoded audio of any source, decoding it off the caller's task when needed.
    /// - Parameter source: The encoded audio.
    /// - Returns: The whole source's PCM.
    /// - Throws: `AudioError.Code.fileNotFound` for a missing file, or the decoder's error.
    public func loadBuffer(for source: AudioSource) async throws -> PCMBuffer {
        switch source.location {
        case .file(let url): return try await loadBuffer(for: url)
        case .memory(let data): return try await obtain(.memory(data)) { try self.decode(source) }
        }
    }

    // MARK: - Named in-memory assets

    /// Registers encoded audio under a name, so that it can be decoded into the cache
    /// (`buffer(named:)`) or handed to a player as a source (`source(named:)`) without a file.
    ///
    /// Registering a name again replaces its data and drops the audio decoded from the old
    /// data. The encoded bytes are kept until `unregister(name:)`; they do not count
    /// against the budget, which is for decoded samples (`stats.registeredDataBytes` tells
    /// their size). The closest Apple API is an asset catalog's `NSDataAsset(name:)`.
    /// - Parameters:
    ///   - data: The encoded bytes, exactly as a file would hold them.
    ///   - name: The name to ask for it by.
    ///   - typeHint: A file extension or MIME type, only used to break ties between decoders.
    public func register(_ data: Data, name: String, typeHint: String? = nil) {
        let dropped = state.withLock { state -> [PCMBuffer] in
            state.nextGeneration += 1
            state.assets[name] = Asset(data: data, typeHint: typeHint, generation: state.nextGeneration)
            return state.invalidate(.named(name))
        }
        withExtendedLifetime(dropped) {}  // sample memory is freed here, outside the lock
    }

    /// Forgets the data registered under a name and the audio decoded from it.
    /// - Parameter name: A registered name.
    /// - Returns: Whether the name was registered.
    @discardableResult
    public func unregister(name: String) -> Bool {
        let (found, dropped) = state.withLock { state -> (Bool, [PCMBuffer]) in
            let found = state.assets.removeValue(forKey: name) != nil
            return (found, state.invalidate(.named(name)))
        }
        withExtendedLifetime(dropped) {}
        return found
    }

    /// The data registered under a name, as a source a player can open.
    /// - Parameter name: A registered name.
    /// - Returns: An in-memory source named `name`, or `nil` when nothing is registered under it.
    public func source(named name: String) -> AudioSource? {
        guard let asset = state.withLock({ $0.assets[name] }) else { return nil }
        return .memory(asset.data, name: name, typeHint: asset.typeHint)
    }

    /// The decoded audio of the data registered under a name.
    /// - Parameter name: A registered name.
    /// - Returns: The asset's PCM.
    /// - Throws: `AudioError.Code.fileNotFound` when nothing is registered under `name`, or
    ///   the decoder's error.
    public func buffer(named name: String) throws -> PCMBuffer {
        let (key, source) = try namedKey(name)
        return try obtain(key) { try self.decode(source) }
    }

    /// The decoded audio of the data registered under a name, decoding off the caller's task.
    /// - Parameter name: A registered name.
    /// - Returns: The asset's PCM.
    /// - Throws: `AudioError.Code.fileNotFound` when nothing is registered under `name`, or
    ///   the decoder's error.
    public func loadBuffer(named name: String) async throws -> PCMBuffer {
        let (key, source) = try namedKey(name)
        return try await obtain(key) { try self.decode(source) }
    }

    // MARK: - Keys

    /// The key a file has now: its path with its current size, times and inode.
    /// - Parameter path: The file's path.
    /// - Returns: A key for `buffer(forKey:)`.
    /// - Throws: `AudioError.Code.fileNotFound` when the file cannot be found,
    ///   `AudioError.Code.readFailed` when the path is not a regular file.
    public func key(forPath path: String) throws -> Key { try .file(absolutePath: Self.absolutePath(path)) }

    /// The key the data registered under a name has now.
    /// - Parameter name: A registered name.
    /// - Returns: A key for `buffer(forKey:)`, or `nil` when nothing is registered under `name`.
    public func key(named name: String) -> Key? {
        state.withLock { state in
            state.assets[name].map { Key(identity: .named(name), version: .registration($0.generation)) }
        }
    }

    /// The cached audio for a key taken earlier, without looking at the file again.
    ///
    /// The fastest hit: one lock and one lookup, no `stat`. The caller vouches that the file
    /// has not changed since it took the key (an app's read-only bundle); when the cache has
    /// since seen a newer version, or holds none, the file or asset is looked at again and
    /// decoded as it is now.
    /// - Parameter key: A key from `key(forPath:)`, `key(named:)` or `Key(_:)`.
    /// - Returns: The cached PCM, or the current PCM of the file or asset.
    /// - Throws: `AudioError.Code.invalidState` for an explicit key (`Key(_:)`) with nothing
    ///   cached under it, or the errors of `buffer(forPath:)` and `buffer(named:)`.
    public func buffer(forKey key: Key) throws -> PCMBuffer {
        switch state.withLock({ $0.lookup(key, versionIsCurrent: key.isUnversioned, startDecode: false) }) {
        case .hit(let buffer): return buffer
        case .wait(let pending): return try pending.wait()
        case .decode, .absent: break
        }
        switch key.identity {
        case .file(let path): return try buffer(forPath: path)
        case .named(let name): return try buffer(named: name)
        case .memory(let data): return try buffer(for: .memory(data))
        case .custom(let name): throw Self.nothingCached(under: name)
        }
    }

    /// The cached audio for a key taken earlier, decoding off the caller's task when needed.
    /// - Parameter key: A key from `key(forPath:)`, `key(named:)` or `Key(_:)`.
    /// - Returns: The cached PCM, or the current PCM of the file or asset.
    /// - Throws: `AudioError.Code.invalidState` for an explicit key with nothing cached under
    ///   it, or the errors of `buffer(forPath:)` and `buffer(named:)`.
    public func loadBuffer(forKey key: Key) async throws -> PCMBuffer {
        switch state.withLock({ $0.lookup(key, versionIsCurrent: key.isUnversioned, startDecode: false) }) {
        case .hit(let buffer): return buffer
        case .wait(let pending): return try await pending.value
        case .decode, .absent: break
        }
        switch key.identity {
        case .file(let path): return try await loadBuffer(forPath: path)
        case .named(let name): return try await loadBuffer(named: name)
        case .memory(let data): return try await loadBuffer(for: .memory(data))
        case .custom(let name): throw Self.nothingCached(under: name)
        }
    }

    /// The audio cached under a key, made by `decode` on a miss.
    ///
    /// `decode` runs on this thread, once however many callers ask for the key meanwhile;
    /// it must not ask the cache for the same key. What it throws reaches every caller
    /// waiting on that attempt and is not remembered.
    /// - Parameters:
    ///   - key: Usually `Key(_:)` with a name of your own.
    ///   - decode: Makes the audio.
    /// - Returns: The cached or newly made PCM.
    /// - Throws: Whatever `decode` throws.
    public func buffer(forKey key: Key, decode: () throws -> PCMBuffer) throws -> PCMBuffer {
        try obtain(key, decode: decode)
    }

    /// The audio cached under a key, made by `decode` off the caller's task on a miss.
    /// - Parameters:
    ///   - key: Usually `Key(_:)` with a name of your own.
    ///   - decode: Makes the audio; runs on a Dispatch worker thread, not the caller's task.
    /// - Returns: The cached or newly made PCM.
    /// - Throws: Whatever `decode` throws.
    public func loadBuffer(forKey key: Key, decode: @escaping @Sendable () throws -> PCMBuffer) async throws -> PCMBuffer {
        try await obtain(key, decode: decode)
    }

    // MARK: - Removal and statistics

    /// Drops the audio cached under a key's file, asset or name, whatever its version.
    ///
    /// Buffers already handed out stay valid. The closest Apple call is
    /// `NSCache.removeObject(forKey:)`.
    /// - Parameter key: The key whose item should go.
    /// - Returns: Whether an item was cached.
    @discardableResult
    public func remove(_ key: Key) -> Bool {
        let dropped = state.withLock { $0.invalidate(key.identity) }
        withExtendedLifetime(dropped) {}
        return !dropped.isEmpty
    }

    /// Drops every cached item; registered data stays. The closest Apple call is
    /// `NSCache.removeAllObjects()`.
    public func removeAll() {
        let dropped = state.withLock { state in
            state.recency.identitiesOldestFirst.flatMap { state.invalidate($0) }
        }
        withExtendedLifetime(dropped) {}
    }

    /// Counters and byte totals, read together at one instant.
    public var stats: BufferCacheStats {
        state.withLock { $0.stats(budgetBytes: budgetBytes) }
    }

    /// Cached keys, least recently used first (for tests).
    var keysByRecency: [Key] {
        state.withLock { state in
            state.recency.identitiesOldestFirst.compactMap { state.recency.key(of: $0, in: state.index) }
        }
    }
}
