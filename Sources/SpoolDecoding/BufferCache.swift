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

// MARK: - Key

extension BufferCache {
    /// Names one cached item: a file at one version, in-memory bytes, a registered asset at one
    /// registration, or a name of the caller's own.
    public struct Key: Hashable, Sendable, CustomStringConvertible {
        enum Identity: Hashable, Sendable {
            case file(path: String)
            case memory(Data)
            case named(String)
            case custom(String)
        }

        enum Version: Hashable, Sendable {
            case unversioned
            case file(FileStamp)
            case registration(UInt64)
        }

        let identity: Identity
        let version: Version

        init(identity: Identity, version: Version) {
            self.identity = identity
            self.version = version
        }

        /// A key of your own, for audio made by a decode closure.
        /// - Parameter name: Any name; equal names are one key.
        public init(_ name: String) {
            self.init(identity: .custom(name), version: .unversioned)
        }

        /// The key of the file at `absolutePath` as it is now.
        static func file(absolutePath: String) throws -> Key {
            Key(identity: .file(path: absolutePath), version: .file(try FileStamp(path: absolutePath)))
        }

        static func memory(_ data: Data) -> Key {
            Key(identity: .memory(data), version: .unversioned)
        }

        var isUnversioned: Bool { version == .unversioned }

        /// What the key names, for messages: `file PATH`, `asset 'NAME'`, `key 'NAME'`, or
        /// the size of in-memory bytes.
        public var description: String {
            switch identity {
            case .file(let path): "file \(path)"
            case .memory(let data): "\(data.count) bytes in memory"
            case .named(let name): "asset '\(name)'"
            case .custom(let name): "key '\(name)'"
            }
        }
    }

    /// What `stat` says about a file: any rewrite changes at least one field.
    ///
    /// Modification and change times are kept to the nanosecond, though the kernel stamps
    /// them from a clock that ticks every few milliseconds: a rewrite to the same size, in
    /// place, within one tick of the last, is invisible to any stat-based check. Writers that
    /// replace the file (write a new one, rename it over) also change the inode.
    struct FileStamp: Hashable, Sendable {
        let device: UInt64
        let inode: UInt64
        let size: Int64
        let modifiedSeconds: Int64
        let modifiedNanoseconds: Int64
        let changedSeconds: Int64
        let changedNanoseconds: Int64

        init(path: String) throws {
            var info = stat()
            guard stat(path, &info) == 0 else {
                let reason = String(cString: strerror(errno))
                throw AudioError(.fileNotFound, "\(path): cannot open: \(reason)")
            }
            guard (info.st_mode & S_IFMT) == S_IFREG else {
                throw AudioError(.readFailed, "\(path): not a regular file")
            }
            device = UInt64(truncatingIfNeeded: info.st_dev)
            inode = UInt64(truncatingIfNeeded: info.st_ino)
            size = Int64(info.st_size)
            modifiedSeconds = Int64(info.st_mtim.tv_sec)
            modifiedNanoseconds = Int64(info.st_mtim.tv_nsec)
            changedSeconds = Int64(info.st_ctim.tv_sec)
            changedNanoseconds = Int64(info.st_ctim.tv_nsec)
        }
    }
}

// MARK: - Statistics

/// What a `BufferCache` has done and holds, read at one instant.
///
/// `NSCache` keeps no such figures; these are what sizing a budget needs.
public struct BufferCacheStats: Sendable, Equatable, CustomStringConvertible {
    /// Requests answered from memory without decoding.
    public var hits: Int
    /// Requests that found nothing ready: each started a decode or waited for one in flight.
    public var misses: Int
    /// Items dropped, least recently used first, to stay within the budget.
    public var evictions: Int
    /// Items dropped because they went stale (a rewritten file, a re-registered asset) or
    /// were removed on request.
    public var invalidations: Int
    /// Items cached now.
    public var itemCount: Int
    /// Bytes of decoded samples the cache holds now (each distinct storage counted once).
    public var bytesHeld: Int
    /// The most bytes the cache has held at once.
    public var peakBytesHeld: Int
    /// Bytes of audio this cache decoded and no longer holds (evicted, stale, or too large
    /// to keep) that something else — a player — still keeps alive.
    public var bytesInUseElsewhere: Int
    /// The budget fixed at creation.
    public var budgetBytes: Int
    /// Decoded items larger than the whole budget: returned to the caller, never kept.
    public var oversizedItems: Int
    /// Decodes run (successful or not); concurrent requests for one key share one.
    public var decodeCount: Int
    /// Decodes that threw.
    public var failedDecodes: Int
    /// Total seconds spent decoding.
    public var decodeSeconds: Double
    /// Bytes of encoded data registered by name (not counted against the budget).
    public var registeredDataBytes: Int

    /// All the figures on one line, for logs.
    public var description: String {
        "\(itemCount) items, \(bytesHeld)/\(budgetBytes) bytes held (peak \(peakBytesHeld)), "
            + "\(bytesInUseElsewhere) in use elsewhere; \(hits) hits, \(misses) misses, "
            + "\(evictions) evictions, \(invalidations) invalidations, \(oversizedItems) oversized; "
            + "\(decodeCount) decodes (\(failedDecodes) failed) in "
            + String(format: "%.3f", decodeSeconds) + " s"
    }
}

// MARK: - Decoding and waiting

extension BufferCache {
    /// Blocking: answers from memory, waits for a decode in flight, or decodes here.
    func obtain(_ key: Key, decode: () throws -> PCMBuffer) throws -> PCMBuffer {
        switch state.withLock({ $0.lookup(key, versionIsCurrent: true, startDecode: true) }) {
        case .hit(let buffer): return buffer
        case .wait(let pending): return try pending.wait()
        case .decode(let pending): return try run(key, pending, decode: decode)
        case .absent: throw Self.nothingCached(under: key.description)  // not returned when startDecode
        }
    }

    /// Async: like the blocking form, but a decode runs on a Dispatch worker thread: it reads
    /// files and may take many milliseconds, which must not hold a cooperative-pool thread.
    func obtain(_ key: Key, decode: @escaping @Sendable () throws -> PCMBuffer) async throws -> PCMBuffer {
        switch state.withLock({ $0.lookup(key, versionIsCurrent: true, startDecode: true) }) {
        case .hit(let buffer): return buffer
        case .wait(let pending): return try await pending.value
        case .decode(let pending):
            DispatchQueue.global().async { _ = try? self.run(key, pending, decode: decode) }
            return try await pending.value
        case .absent: throw Self.nothingCached(under: key.description)
        }
    }

    /// Runs the decode this caller leads, outside the lock, then stores the result and
    /// wakes everyone waiting on it.
    private func run(_ key: Key, _ pending: PendingDecode, decode: () throws -> PCMBuffer) throws -> PCMBuffer {
        let clock = ContinuousClock()
        let start = clock.now
        let result = Result { try decode() }
        let elapsed = clock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        let dropped = state.withLock { state in
            state.finish(key, pending, result, seconds: seconds, budgetBytes: budgetBytes)
        }
        withExtendedLifetime(dropped) {}
        pending.complete(result)
        return try result.get()
    }

    /// `path` from the root: relative paths start at the current folder, as they do for
    /// `URL(fileURLWithPath:)`, so that a path and a file source name one entry.
    static func absolutePath(_ path: String) -> String {
        path.hasPrefix("/") ? path : (FileManager.default.currentDirectoryPath as NSString).appendingPathComponent(path)
    }

    private func decode(_ source: AudioSource) throws -> PCMBuffer {
        try registry.open(source).decodeAll()
    }

    private func namedKey(_ name: String) throws -> (Key, AudioSource) {
        guard let asset = state.withLock({ $0.assets[name] }) else {
            throw AudioError(.fileNotFound, "no in-memory audio is registered under the name '\(name)'")
        }
        return (Key(identity: .named(name), version: .registration(asset.generation)),
                .memory(asset.data, name: name, typeHint: asset.typeHint))
    }

    private static func filePath(of url: URL) throws -> String {
        guard url.isFileURL else {
            throw AudioError(.invalidParameter, "\(url): the buffer cache reads file URLs only")
        }
        return url.path
    }

    private static func nothingCached(under name: String) -> AudioError {
        AudioError(.invalidState, "nothing is cached under \(name); pass a decode closure to make it")
    }
}

/// One decode in flight: the caller that started it runs it, others wait for its result.
final class PendingDecode: Sendable {
    /// Order of starting, so that an older decode never replaces a newer one's result.
    let sequence: UInt64
    private struct Outcome {
        var result: Result<PCMBuffer, any Error>?
        var continuations: [CheckedContinuation<PCMBuffer, any Error>] = []
    }
    private let outcome = Locked(Outcome())
    // Entered at creation, left once the result is set: blocking waiters wait on it.
    private let finished = DispatchGroup()

    init(sequence: UInt64) {
        self.sequence = sequence
        finished.enter()
    }

    /// Sets the result and wakes every waiter, blocking and async.
    func complete(_ result: Result<PCMBuffer, any Error>) {
        let continuations = outcome.withLock { outcome in
            outcome.result = result
            defer { outcome.continuations = [] }
            return outcome.continuations
        }
        finished.leave()
        for continuation in continuations { continuation.resume(with: result) }
    }

    /// Blocks until the result is in.
    func wait() throws -> PCMBuffer {
        finished.wait()
        return try outcome.withLock { $0.result }?.get() ?? Self.lostResult()
    }

    /// Suspends until the result is in.
    var value: PCMBuffer {
        get async throws {
            try await withCheckedThrowingContinuation { continuation in
                let ready = outcome.withLock { outcome -> Result<PCMBuffer, any Error>? in
                    if let result = outcome.result { return result }
                    outcome.continuations.append(continuation)
                    return nil
                }
                if let ready { continuation.resume(with: ready) }
            }
        }
    }

    private static func lostResult() throws -> PCMBuffer {
        throw AudioError(.invalidState, "a buffer cache decode finished without a result")
    }
}

// MARK: - State

extension BufferCache {
    /// Encoded data registered under a name.
    struct Asset: Sendable {
        let data: Data
        let typeHint: String?
        let generation: UInt64
    }

    /// A storage the cache holds, and how many items share it.
    struct HeldStorage {
        var itemCount: Int
        let bytes: Int
    }

    /// A storage the cache decoded and let go of, watched to see whether anything keeps it.
    struct ReleasedStorage {
        let reference: WeakStorageReference
        let bytes: Int
    }

    enum Lookup {
        case hit(PCMBuffer)
        case wait(PendingDecode)
        case decode(PendingDecode)
        case absent
    }

    struct State: ~Copyable {
        var recency = RecencyList()
        var index: [Key.Identity: Int] = [:]
        var pending: [Key: PendingDecode] = [:]
        var assets: [String: Asset] = [:]
        var held: [ObjectIdentifier: HeldStorage] = [:]
        var released: [ObjectIdentifier: ReleasedStorage] = [:]
        var releasedPruneThreshold = 64
        var bytesHeld = 0
        var peakBytesHeld = 0
        var nextSequence: UInt64 = 0
        var nextGeneration: UInt64 = 0
        var hits = 0
        var misses = 0
        var evictions = 0
        var invalidations = 0
        var oversizedItems = 0
        var decodeCount = 0
        var failedDecodes = 0
        var decodeSeconds = 0.0

        /// Finds `key`. With `versionIsCurrent`, a cached item of another version is stale and
        /// goes; without it (an old key held by a caller), it stays and the answer is `absent`.
        /// With `startDecode`, a miss registers a pending decode the caller must run.
        mutating func lookup(_ key: Key, versionIsCurrent: Bool, startDecode: Bool) -> Lookup {
            if let slot = index[key.identity] {
                if let buffer = recency.buffer(at: slot, ifVersion: key.version) {
                    recency.touch(slot)
                    hits += 1
                    return .hit(buffer)
                }
                guard versionIsCurrent else { return .absent }
                _ = removeItem(at: slot)
                invalidations += 1
            }
            if let pending = pending[key] {
                misses += 1
                return .wait(pending)
            }
            guard startDecode else {
                if versionIsCurrent { misses += 1 }
                return .absent
            }
            misses += 1
            nextSequence += 1
            let started = PendingDecode(sequence: nextSequence)
            pending[key] = started
            return .decode(started)
        }

        /// Records a finished decode and keeps its result when it fits and is still current.
        /// - Returns: Buffers dropped, to be released after the lock.
        mutating func finish(_ key: Key, _ decode: PendingDecode, _ result: Result<PCMBuffer, any Error>,
                             seconds: Double, budgetBytes: Int) -> [PCMBuffer] {
            if pending[key] === decode { pending[key] = nil }
            decodeCount += 1
            decodeSeconds += seconds
            guard case .success(let buffer) = result else {
                failedDecodes += 1
                return []
            }
            // An asset registered again while it decoded: this audio is of the old data.
            if case .named(let name) = key.identity, case .registration(let generation) = key.version,
               assets[name]?.generation != generation {
                release(buffer)
                return []
            }
            var dropped: [PCMBuffer] = []
            if let slot = index[key.identity] {
                // A decode started later (a newer version of the file) already stored its result.
                guard recency.sequence(at: slot) < decode.sequence else {
                    release(buffer)
                    return []
                }
                dropped += removeItem(at: slot)
                invalidations += 1
            }
            let storage = buffer.storageIdentifier
            let addedBytes = held[storage] == nil ? buffer.storageByteCount : 0
            guard addedBytes <= budgetBytes else {
                oversizedItems += 1
                release(buffer)
                return dropped
            }
            let slot = recency.insert(key: key, buffer: buffer, sequence: decode.sequence)
            index[key.identity] = slot
            held[storage, default: HeldStorage(itemCount: 0, bytes: buffer.storageByteCount)].itemCount += 1
            bytesHeld += addedBytes
            released[storage] = nil
            while bytesHeld > budgetBytes, let oldest = recency.oldest, oldest != slot {
                dropped += removeItem(at: oldest)
                evictions += 1
            }
            peakBytesHeld = max(peakBytesHeld, bytesHeld)
            return dropped
        }

        /// Drops whatever is cached under `identity`.
        /// - Returns: The dropped buffer, to be released after the lock.
        mutating func invalidate(_ identity: Key.Identity) -> [PCMBuffer] {
            guard let slot = index[identity] else { return [] }
            invalidations += 1
            return removeItem(at: slot)
        }

        /// Takes an item out of the recency list and the index, and lets go of its storage
        /// when no other item shares it.
        private mutating func removeItem(at slot: Int) -> [PCMBuffer] {
            guard let (key, buffer) = recency.remove(slot) else { return [] }
            index[key.identity] = nil
            let storage = buffer.storageIdentifier
            if let entry = held[storage] {
                if entry.itemCount > 1 {
                    held[storage]?.itemCount -= 1
                } else {
                    held[storage] = nil
                    bytesHeld -= entry.bytes
                    release(buffer)
                }
            }
            return [buffer]
        }

        /// Starts watching a storage the cache no longer holds.
        private mutating func release(_ buffer: PCMBuffer) {
            guard held[buffer.storageIdentifier] == nil else { return }
            released[buffer.storageIdentifier] = ReleasedStorage(reference: buffer.storageReference,
                                                                 bytes: buffer.storageByteCount)
            if released.count > releasedPruneThreshold {
                pruneReleased()
                releasedPruneThreshold = max(64, 2 * released.count)
            }
        }

        /// Forgets released storages that nothing keeps any more.
        mutating func pruneReleased() {
            released = released.filter { $0.value.reference.isAlive }
        }

        mutating func stats(budgetBytes: Int) -> BufferCacheStats {
            pruneReleased()
            return BufferCacheStats(
                hits: hits, misses: misses, evictions: evictions, invalidations: invalidations,
                itemCount: index.count, bytesHeld: bytesHeld, peakBytesHeld: peakBytesHeld,
                bytesInUseElsewhere: released.values.reduce(0) { $0 + $1.bytes },
                budgetBytes: budgetBytes, oversizedItems: oversizedItems, decodeCount: decodeCount,
                failedDecodes: failedDecodes, decodeSeconds: decodeSeconds,
                registeredDataBytes: assets.values.reduce(0) { $0 + $1.data.count })
        }
    }

    /// Cached items in a doubly linked list over an array, most recently used at the head,
    /// so that a hit moves its item to the front with a few index writes and no hashing.
    struct RecencyList {
        private struct Slot {
            var key: Key?
            var buffer: PCMBuffer?
            var sequence: UInt64 = 0
            var newer = -1
            var older = -1
        }
        private var slots: [Slot] = []
        private var free: [Int] = []
        private var newest = -1
        private var oldestSlot = -1

        /// The least recently used item's slot.
        var oldest: Int? { oldestSlot >= 0 ? oldestSlot : nil }

        func buffer(at slot: Int, ifVersion version: Key.Version) -> PCMBuffer? {
            slots[slot].key?.version == version ? slots[slot].buffer : nil
        }

        func sequence(at slot: Int) -> UInt64 { slots[slot].sequence }

        func key(of identity: Key.Identity, in index: [Key.Identity: Int]) -> Key? {
            index[identity].flatMap { slots[$0].key }
        }

        var identitiesOldestFirst: [Key.Identity] {
            var result: [Key.Identity] = []
            var slot = oldestSlot
            while slot >= 0 {
                if let key = slots[slot].key { result.append(key.identity) }
                slot = slots[slot].newer
            }
            return result
        }

        mutating func insert(key: Key, buffer: PCMBuffer, sequence: UInt64) -> Int {
            let item = Slot(key: key, buffer: buffer, sequence: sequence)
            let slot: Int
            if let reused = free.popLast() {
                slots[reused] = item
                slot = reused
            } else {
                slots.append(item)
                slot = slots.count - 1
            }
            linkAsNewest(slot)
            return slot
        }

        mutating func touch(_ slot: Int) {
            guard slot != newest else { return }
            unlink(slot)
            linkAsNewest(slot)
        }

        /// Empties a slot (so it no longer keeps the storage alive) and returns what it held;
        /// `nil` for a slot already empty, which only occupied slots being indexed rules out.
        mutating func remove(_ slot: Int) -> (Key, PCMBuffer)? {
            guard let key = slots[slot].key, let buffer = slots[slot].buffer else { return nil }
            unlink(slot)
            slots[slot] = Slot()
            free.append(slot)
            return (key, buffer)
        }

        private mutating func linkAsNewest(_ slot: Int) {
            slots[slot].older = newest
            slots[slot].newer = -1
            if newest >= 0 { slots[newest].newer = slot }
            newest = slot
            if oldestSlot < 0 { oldestSlot = slot }
        }

        private mutating func unlink(_ slot: Int) {
            let newer = slots[slot].newer
            let older = slots[slot].older
            if newer >= 0 { slots[newer].older = older } else { newest = older }
            if older >= 0 { slots[older].newer = newer } else { oldestSlot = newer }
            slots[slot].newer = -1
            slots[slot].older = -1
        }
    }
}
