import Foundation
import Synchronization
import Testing
import SpoolCore
@testable import SpoolDecoding
import SpoolTestSupport

/// The buffer cache: hits and misses, LRU eviction by bytes, keys that notice a rewritten file,
/// one decode per key under concurrent requests, failures not cached, over-budget items,
/// evicted buffers that stay valid, named in-memory assets, and folder preloading.
@Suite("BufferCache")
struct BufferCacheTests {
    /// A temporary folder removed when the test's value goes away.
    final class Folder {
        let path: String
        init() throws {
            path = FileManager.default.temporaryDirectory.appendingPathComponent("spool-cache-\(UUID())").path
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }
        deinit { try? FileManager.default.removeItem(atPath: path) }
        func file(_ name: String) -> String { (path as NSString).appendingPathComponent(name) }
    }

    /// Counts calls from any thread.
    final class Counter: Sendable {
        private let count = Atomic<Int>(0)
        func increment() { count.add(1, ordering: .sequentiallyConsistent) }
        var value: Int { count.load(ordering: .sequentiallyConsistent) }
    }

    /// Holds decodes until opened, or for a minute at most: a test that fails before it
    /// opens the gate must not leave its decode, and every request waiting on it, held for
    /// ever (a child task of a group that is never released keeps the test from ending).
    final class Gate: Sendable {
        private let opened = DispatchSemaphore(value: 0)
        /// Blocks until `open()` (or a minute has passed); lets every later caller through at once.
        func pass() {
            _ = opened.wait(timeout: .now() + 60)
            opened.signal()
        }
        func open() { opened.signal() }
    }

    /// Values appended from any thread.
    final class Collected<Element: Sendable>: Sendable {
        private let items = Locked<[Element]>([])
        func append(_ item: Element) { items.withLock { $0.append(item) } }
        var all: [Element] { items.withLock { $0 } }
    }

    /// Polls `condition` every millisecond for up to 30 s.
    static func waitUntil(_ condition: () -> Bool) throws {
        for _ in 0..<30_000 where !condition() { usleep(1_000) }
        try #require(condition())
    }

    /// Polls `condition` every millisecond for up to 30 s, without blocking a thread.
    static func waitUntil(_ condition: () -> Bool) async throws {
        for _ in 0..<30_000 where !condition() { try await Task.sleep(for: .milliseconds(1)) }
        try #require(condition())
    }

    static let format = try! AudioFormat(sampleRate: 8_000, channelCount: 2)

    /// Interleaved stereo samples whose every value depends on `seed`, so that two seeds
    /// never produce the same audio.
    static func samples(frames: Int, seed: Int) -> [Float] {
        (0..<(frames * 2)).map { Float(sin(Double($0 + 1) * 0.01 * Double(seed + 1))) * 0.5 }
    }

    /// Writes a float WAV file and returns the samples written.
    @discardableResult
    static func writeWAV(_ path: String, frames: Int, seed: Int) throws -> [Float] {
        let samples = samples(frames: frames, seed: seed)
        let writer = try WAVFileWriter(path: path, format: format)
        try writer.write(try PCMBuffer(format: format, samples: samples))
        try writer.finish()
        return samples
    }

    /// Bytes a stereo Float32 buffer of `frames` frames takes.
    static func bytes(frames: Int) -> Int { frames * 2 * MemoryLayout<Float>.size }

    func code(_ body: () throws -> Void) -> AudioError.Code? {
        do { try body() } catch let error as AudioError { return error.code } catch { return nil }
        return nil
    }

    // MARK: - Budget, hits, misses, LRU

    @Test func budgetMustBePositive() {
        #expect(code { _ = try BufferCache(budgetBytes: 0) } == .invalidParameter)
        #expect(code { _ = try BufferCache(budgetBytes: -1) } == .invalidParameter)
        #expect(code { _ = try BufferCache(budgetBytes: 1) } == nil)
    }

    @Test func hitsMissesAndLeastRecentlyUsedEviction() throws {
        let folder = try Folder()
        let frames = 1_000
        let (a, b, c) = (folder.file("a.wav"), folder.file("b.wav"), folder.file("c.wav"))
        let samplesA = try Self.writeWAV(a, frames: frames, seed: 1)
        try Self.writeWAV(b, frames: frames, seed: 2)
        try Self.writeWAV(c, frames: frames, seed: 3)
        // Room for two items and a half.
        let cache = try BufferCache(budgetBytes: Self.bytes(frames: frames) * 5 / 2)

        #expect(try cache.buffer(forPath: a).samples == samplesA)
        _ = try cache.buffer(forPath: b)
        _ = try cache.buffer(forPath: a)  // a becomes the most recent: b is now the oldest
        var stats = cache.stats
        #expect((stats.hits, stats.misses, stats.decodeCount, stats.evictions) == (1, 2, 2, 0))
        #expect(stats.bytesHeld == 2 * Self.bytes(frames: frames))

        _ = try cache.buffer(forPath: c)  // over budget: b goes, not a
        #expect(cache.keysByRecency.map(\.description) == ["file \(a)", "file \(c)"])
        stats = cache.stats
        #expect((stats.evictions, stats.itemCount, stats.bytesHeld) == (1, 2, 2 * Self.bytes(frames: frames)))

        _ = try cache.buffer(forPath: a)
        #expect(cache.stats.decodeCount == 3)  // a was still cached
        _ = try cache.buffer(forPath: b)  // decoded again, evicting c (a was just used)
        stats = cache.stats
        #expect((stats.hits, stats.misses, stats.decodeCount, stats.evictions) == (2, 4, 4, 2))
        #expect(cache.keysByRecency.map(\.description) == ["file \(a)", "file \(b)"])
        #expect(stats.peakBytesHeld <= stats.budgetBytes)
    }

    @Test func hitsReturnTheSameStorage() async throws {
        let folder = try Folder()
        let path = folder.file("one.wav")
        try Self.writeWAV(path, frames: 500, seed: 4)
        let cache = try BufferCache(budgetBytes: 1 << 20)
        let first = try await cache.loadBuffer(forPath: path)
        let again = try await cache.loadBuffer(forPath: path)
        let viaURL = try await cache.loadBuffer(for: URL(fileURLWithPath: path))
        let viaSource = try await cache.loadBuffer(for: AudioSource.file(path: path))
        let viaKey = try await cache.loadBuffer(forKey: cache.key(forPath: path))
        for buffer in [again, viaURL, viaSource, viaKey] {
            #expect(buffer.storageIdentifier == first.storageIdentifier)
        }
        #expect((cache.stats.hits, cache.stats.decodeCount) == (4, 1))
    }

    @Test func aRelativePathIsKeyedAsAFileSourceIs() {
        let cwd = FileManager.default.currentDirectoryPath
        #expect(BufferCache.absolutePath("sounds/a.wav") == cwd + "/sounds/a.wav")
        #expect(BufferCache.absolutePath("sounds/a.wav") == AudioSource.file(path: "sounds/a.wav").name)
        #expect(BufferCache.absolutePath("/abs/a.wav") == "/abs/a.wav")
    }

    @Test func missingFileIsFileNotFound() throws {
        let cache = try BufferCache(budgetBytes: 1 << 20)
        #expect(code { _ = try cache.buffer(forPath: "/nonexistent/sound.wav") } == .fileNotFound)
        #expect(code { _ = try cache.buffer(for: URL(string: "https://example.com/a.mp3")!) } == .invalidParameter)
    }

    // MARK: - Staleness

    @Test func rewrittenFileDecodesAgain() throws {
        let folder = try Folder()
        let path = folder.file("changing.wav")
        let cache = try BufferCache(budgetBytes: 1 << 20)
        let original = try Self.writeWAV(path, frames: 800, seed: 5)
        let before = try cache.buffer(forPath: path)
        #expect(before.samples == original)

        // A different length: the size alone tells the versions apart.
        let longer = try Self.writeWAV(path, frames: 900, seed: 6)
        let afterLonger = try cache.buffer(forPath: path)
        #expect(afterLonger.samples == longer)

        // The same length and different audio; the modification time is set well past the
        // last one, since the kernel's file clock may not have ticked between two writes.
        let sameSize = try Self.writeWAV(path, frames: 900, seed: 7)
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(10)], ofItemAtPath: path)
        let afterSameSize = try cache.buffer(forPath: path)
        #expect(afterSameSize.samples == sameSize)

        let stats = cache.stats
        #expect((stats.decodeCount, stats.invalidations, stats.itemCount) == (3, 2, 1))
        #expect(stats.bytesHeld == Self.bytes(frames: 900))
        // Buffers handed out before the rewrite are untouched.
        #expect(before.samples == original)
        #expect(afterLonger.samples == longer)
    }

    @Test func anOldKeyFindsTheNewVersion() throws {
        let folder = try Folder()
        let path = folder.file("k.wav")
        try Self.writeWAV(path, frames: 300, seed: 8)
        let cache = try BufferCache(budgetBytes: 1 << 20)
        let oldKey = try cache.key(forPath: path)
        _ = try cache.buffer(forKey: oldKey)  // a miss decodes through the path
        let newer = try Self.writeWAV(path, frames: 400, seed: 9)
        #expect(try cache.buffer(forPath: path).samples == newer)
        // The old key is not the cached version: the file is looked at again, not served stale.
        #expect(try cache.buffer(forKey: oldKey).samples == newer)
        #expect(cache.stats.decodeCount == 2)
        #expect(code { _ = try cache.buffer(forKey: BufferCache.Key("never made")) } == .invalidState)
    }

    // MARK: - Failures

    @Test func aBrokenFileIsRetried() throws {
        let folder = try Folder()
        let path = folder.file("later.wav")
        try Data("not audio at all, just some words".utf8).write(to: URL(fileURLWithPath: path))
        let cache = try BufferCache(budgetBytes: 1 << 20)
        #expect(code { _ = try cache.buffer(forPath: path) } == .unsupportedFormat)
        let good = try Self.writeWAV(path, frames: 100, seed: 14)
        #expect(try cache.buffer(forPath: path).samples == good)
        #expect((cache.stats.failedDecodes, cache.stats.decodeCount) == (1, 2))
    }

    // MARK: - Size and lifetime

    @Test func anItemLargerThanTheBudgetIsReturnedButNotKept() throws {
        let frames = 1_000
        let cache = try BufferCache(budgetBytes: Self.bytes(frames: frames) - 1)
        let samples = Self.samples(frames: frames, seed: 15)
        let decodes = Counter()
        let make: () throws -> PCMBuffer = {
            decodes.increment()
            return try PCMBuffer(format: Self.format, samples: samples)
        }
        var big: PCMBuffer? = try cache.buffer(forKey: BufferCache.Key("big"), decode: make)
        #expect(big?.samples == samples)
        var stats = cache.stats
        #expect((stats.oversizedItems, stats.itemCount, stats.bytesHeld) == (1, 0, 0))
        #expect(stats.bytesInUseElsewhere == Self.bytes(frames: frames))
        _ = try cache.buffer(forKey: BufferCache.Key("big"), decode: make)
        #expect(decodes.value == 2)
        big = nil
        stats = cache.stats
        #expect((stats.oversizedItems, stats.bytesInUseElsewhere) == (2, 0))
    }

    @Test func anEvictedBufferStaysIntactWhileHeld() throws {
        let frames = 2_000
        let cache = try BufferCache(budgetBytes: Self.bytes(frames: frames) * 3 / 2)
        let first = Self.samples(frames: frames, seed: 16)
        var held: PCMBuffer? = try cache.buffer(forKey: BufferCache.Key("first")) {
            try PCMBuffer(format: Self.format, samples: first)
        }
        var slice = try held?.slice(frames: 100..<200)
        _ = try cache.buffer(forKey: BufferCache.Key("second")) {
            try PCMBuffer(format: Self.format, samples: Self.samples(frames: frames, seed: 17))
        }
        var stats = cache.stats
        #expect((stats.evictions, stats.itemCount, stats.bytesHeld) == (1, 1, Self.bytes(frames: frames)))
        #expect(stats.bytesInUseElsewhere == Self.bytes(frames: frames))
        #expect(held?.samples == first)
        #expect(slice?.samples == Array(first[200..<400]))

        held = nil  // the slice still shares the storage
        #expect(cache.stats.bytesInUseElsewhere == Self.bytes(frames: frames))
        slice = nil
        stats = cache.stats
        #expect(stats.bytesInUseElsewhere == 0)
        #expect(stats.bytesHeld == Self.bytes(frames: frames))
    }

    @Test func itemsSharingOneStorageAreCountedOnce() throws {
        let whole = try PCMBuffer(format: Self.format, samples: Self.samples(frames: 1_000, seed: 18))
        let cache = try BufferCache(budgetBytes: 1 << 20)
        _ = try cache.buffer(forKey: BufferCache.Key("intro")) { try whole.slice(frames: 0..<500) }
        _ = try cache.buffer(forKey: BufferCache.Key("loop")) { try whole.slice(frames: 500..<1_000) }
        #expect(cache.stats.bytesHeld == whole.storageByteCount)
        #expect(cache.remove(BufferCache.Key("intro")))
        #expect(cache.stats.bytesHeld == whole.storageByteCount)
        cache.removeAll()
        #expect((cache.stats.bytesHeld, cache.stats.itemCount) == (0, 0))
    }

    // MARK: - In-memory assets

    @Test func namedDataDecodesWithoutAFile() async throws {
        let folder = try Folder()
        let path = folder.file("click.wav")
        let click = try Self.writeWAV(path, frames: 200, seed: 19)
        let cache = try BufferCache(budgetBytes: 1 << 20)
        cache.register(try Data(contentsOf: URL(fileURLWithPath: path)), name: "click", typeHint: "wav")
        try FileManager.default.removeItem(atPath: path)

        #expect(try await cache.loadBuffer(named: "click").samples == click)
        #expect(try await cache.loadBuffer(named: "click").samples == click)
        #expect((cache.stats.decodeCount, cache.stats.hits) == (1, 1))
        let source = try #require(cache.source(named: "click"))
        #expect(source.name == "click")
        #expect(source.typeHint == "wav")
        #expect(try DecoderRegistry.shared.open(source).decodeAll().samples == click)
        let key = try #require(cache.key(named: "click"))
        #expect(try await cache.loadBuffer(forKey: key).samples == click)

        // Registering the name again replaces the audio.
        let tock = try Self.writeWAV(path, frames: 300, seed: 20)
        cache.register(try Data(contentsOf: URL(fileURLWithPath: path)), name: "click", typeHint: "wav")
        #expect(try await cache.loadBuffer(named: "click").samples == tock)
        #expect(try await cache.loadBuffer(forKey: key).samples == tock)  // the old registration's key

        #expect(cache.unregister(name: "click"))
        #expect(cache.source(named: "click") == nil)
        #expect(code { _ = try cache.buffer(named: "click") } == .fileNotFound)
        #expect(cache.stats.itemCount == 0)
    }

    @Test func memorySourcesAreKeyedByTheirBytes() throws {
        let folder = try Folder()
        let path = folder.file("m.wav")
        let written = try Self.writeWAV(path, frames: 150, seed: 21)
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let cache = try BufferCache(budgetBytes: 1 << 20)
        let first = try cache.buffer(for: .memory(data, name: "one"))
        let second = try cache.buffer(for: .memory(Data(data), name: "two"))
        #expect(first.samples == written)
        #expect(second.storageIdentifier == first.storageIdentifier)
        var changed = data
        changed[changed.count - 1] ^= 0x40
        _ = try cache.buffer(for: .memory(changed))
        #expect(cache.stats.decodeCount == 2)
    }

    // MARK: - Folder preload

    /// Copies a fixture, waiting a while if the fixtures are being regenerated.
    static func copyFixture(_ name: String, to folder: Folder) throws {
        let source = Fixtures.path(name)
        for _ in 0..<60 where !FileManager.default.fileExists(atPath: source) { sleep(1) }
        try FileManager.default.copyItem(atPath: source, toPath: folder.file(name))
    }

    /// A folder of three fixtures, a WAV of its own, a garbage `.wav`, a text file and a
    /// sub-folder; returns the own WAV's samples.
    static func makeSoundFolder(_ folder: Folder) throws -> [Float] {
        for name in ["mp3-44100-stereo.mp3", "vorbis-44100-stereo.ogg", "flac-44100-stereo-s16.flac"] {
            try copyFixture(name, to: folder)
        }
        let own = try writeWAV(folder.file("own.wav"), frames: 700, seed: 22)
        try Data((0..<3_000).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }).write(to: URL(fileURLWithPath: folder.file("garbage.wav")))
        try Data("just notes".utf8).write(to: URL(fileURLWithPath: folder.file("notes.txt")))
        try FileManager.default.createDirectory(atPath: folder.file("sub"), withIntermediateDirectories: false)
        return own
    }

    @Test func preloadLoadsTheGoodFilesAndReportsTheBrokenOne() throws {
        let folder = try Folder()
        let own = try Self.makeSoundFolder(folder)
        let cache = try BufferCache(budgetBytes: 64 << 20)
        let report = try cache.preload(directory: folder.path)
        #expect(report.loaded.map { ($0.path as NSString).lastPathComponent }
                == ["flac-44100-stereo-s16.flac", "mp3-44100-stereo.mp3", "own.wav", "vorbis-44100-stereo.ogg"])
        #expect(report.failed.map(\.path) == [folder.file("garbage.wav")])
        #expect(report.failed.first?.error.code == .unsupportedFormat)
        #expect(report.skipped == [folder.file("notes.txt"), folder.file("sub")])

        // What loaded is what a plain decode gives, and it is now cached.
        for file in report.loaded {
            let direct = try DecoderRegistry.shared.open(path: file.path).decodeAll()
            #expect(file.frameCount == direct.frameCount, "\(file.path)")
            #expect(file.byteCount == direct.byteCount, "\(file.path)")
            #expect(try cache.buffer(forPath: file.path).samples == direct.samples, "\(file.path)")
        }
        #expect(try cache.buffer(forPath: folder.file("own.wav")).samples == own)
        let stats = cache.stats
        #expect(stats.itemCount == 4)
        #expect(stats.decodeCount == 5)  // four good files and the garbage
        #expect(stats.bytesHeld == report.byteCount)

    }

    @Test func asyncSerialPreloadAgreesWithTheParallelOne() async throws {
        let folder = try Folder()
        _ = try Self.makeSoundFolder(folder)
        let parallel = try await BufferCache(budgetBytes: 64 << 20).loadDirectory(folder.path)
        let serial = try await BufferCache(budgetBytes: 64 << 20).loadDirectory(URL(fileURLWithPath: folder.path),
                                                                               maximumConcurrency: 1)
        #expect(serial.loaded.map(\.frameCount) == parallel.loaded.map(\.frameCount))
        #expect(serial.loaded.count == 4)
        #expect(serial.failed.map(\.path) == parallel.failed.map(\.path))
    }

    @Test func preloadWithinASmallBudgetEvicts() throws {
        let folder = try Folder()
        for i in 0..<6 { try Self.writeWAV(folder.file("s\(i).wav"), frames: 1_000, seed: 30 + i) }
        let budget = Self.bytes(frames: 1_000) * 5 / 2
        let cache = try BufferCache(budgetBytes: budget)
        let report = try cache.preload(directory: folder.path) 
        #expect(report.loaded.count == 6)
        let stats = cache.stats
        #expect(stats.itemCount == 2)
        #expect(stats.evictions == 4)
        #expect(stats.peakBytesHeld <= budget)
    }

    @Test func preloadOfAMissingFolderThrows() throws {
        let cache = try BufferCache(budgetBytes: 1 << 20)
        #expect(code { _ = try cache.preload(directory: "/nonexistent/sounds")  } == .fileNotFound)
        #expect(code { _ = try cache.preload(directory: "/tmp", maximumConcurrency: 0)  } == .invalidParameter)
    }
}

// MARK: - Concurrency

extension BufferCacheTests {
    /// Requests that meet one decode in flight. Serialized: each test holds a decode on a
    /// Dispatch worker until every request has arrived, and several such tests at once
    /// could occupy every worker of a 2-core machine's pool, stalling the requests they wait
    /// for until Dispatch adds a thread.
    @Suite("BufferCache concurrency", .serialized)
    struct Concurrency {
        /// A decode closure that counts its calls and holds each one until `gate` opens, so that
        /// a test can let every request arrive while the one decode is still running.
        static func gatedDecode(_ counter: Counter, _ gate: Gate, seed: Int) -> @Sendable () throws -> PCMBuffer {
            {
                counter.increment()
                gate.pass()
                return try PCMBuffer(format: BufferCacheTests.format, samples: BufferCacheTests.samples(frames: 256, seed: seed))
            }
        }

        @Test func concurrentThreadsDecodeOnce() throws {
            let cache = try BufferCache(budgetBytes: 1 << 20)
            let decodes = Counter()
            let gate = Gate()
            let decode = Self.gatedDecode(decodes, gate, seed: 10)
            let results = Collected<Result<ObjectIdentifier, any Error>>()
            let done = DispatchGroup()
            for _ in 0..<12 {
                done.enter()
                Thread {
                    results.append(Result { try cache.buffer(forKey: BufferCache.Key("shared"), decode: decode).storageIdentifier })
                    done.leave()
                }.start()
            }
            // Every request has found the decode running (a miss each) before it may finish.
            try BufferCacheTests.waitUntil { cache.stats.misses == 12 }
            gate.open()
            #expect(done.wait(timeout: .now() + 60) == .success, "a thread's request never returned")
            let identities = try results.all.map { try $0.get() }
            #expect(identities.count == 12)
            #expect(Set(identities).count == 1)
            #expect(decodes.value == 1)
            let stats = cache.stats
            #expect((stats.decodeCount, stats.misses, stats.hits, stats.itemCount) == (1, 12, 0, 1))
        }

        @Test func concurrentTasksDecodeOnce() async throws {
            let cache = try BufferCache(budgetBytes: 1 << 20)
            let decodes = Counter()
            let gate = Gate()
            let decode = Self.gatedDecode(decodes, gate, seed: 11)
            let identities = try await withThrowingTaskGroup(of: ObjectIdentifier.self) { group in
                for _ in 0..<32 {
                    group.addTask { try await cache.loadBuffer(forKey: BufferCache.Key("shared"), decode: decode).storageIdentifier }
                }
                try await BufferCacheTests.waitUntil { cache.stats.misses == 32 }
                gate.open()
                return try await group.reduce(into: [ObjectIdentifier]()) { $0.append($1) }
            }
            #expect(identities.count == 32)
            #expect(Set(identities).count == 1)
            #expect(decodes.value == 1)
            #expect((cache.stats.decodeCount, cache.stats.misses) == (1, 32))
        }

        @Test func threadsAndTasksTogetherDecodeOnce() async throws {
            let cache = try BufferCache(budgetBytes: 1 << 20)
            let decodes = Counter()
            let gate = Gate()
            let decode = Self.gatedDecode(decodes, gate, seed: 12)
            let key = BufferCache.Key("both")
            let threadResults = Collected<ObjectIdentifier>()
            let done = DispatchGroup()
            for _ in 0..<8 {
                done.enter()
                Thread {
                    if let buffer = try? cache.buffer(forKey: key, decode: decode) { threadResults.append(buffer.storageIdentifier) }
                    done.leave()
                }.start()
            }
            let taskResults = try await withThrowingTaskGroup(of: ObjectIdentifier.self) { group in
                for _ in 0..<8 { group.addTask { try await cache.loadBuffer(forKey: key, decode: decode).storageIdentifier } }
                try await BufferCacheTests.waitUntil { cache.stats.misses == 16 }
                gate.open()
                return try await group.reduce(into: [ObjectIdentifier]()) { $0.append($1) }
            }
            await withCheckedContinuation { continuation in
                DispatchQueue.global().async {
                    _ = done.wait(timeout: .now() + 60)
                    continuation.resume()
                }
            }
            let all = threadResults.all + taskResults
            #expect(all.count == 16)
            #expect(Set(all).count == 1)
            #expect(decodes.value == 1)
            #expect(cache.stats.decodeCount == 1)
        }

        @Test func concurrentRequestsForAFileDecodeItOnce() async throws {
            let folder = try Folder()
            let path = folder.file("shared.wav")
            let written = try BufferCacheTests.writeWAV(path, frames: 4_000, seed: 13)
            // libsndfile behind a gate: the file's one decode holds until every request has
            // arrived, so the requests really overlap it (without the gate, on two cores, the
            // first could finish before the others start, and they would only hit the cache).
            let opens = Counter()
            let gate = Gate()
            let sndfile = DecoderFactory.sndfile
            let registry = DecoderRegistry(factories: [DecoderFactory(name: "gated \(sndfile.name)", typeHints: sndfile.typeHints,
                                                                      sniff: sndfile.sniff) { source in
                opens.increment()
                gate.pass()
                return try sndfile.open(source)
            }])
            let cache = try BufferCache(budgetBytes: 1 << 20, registry: registry)
            let identities = try await withThrowingTaskGroup(of: ObjectIdentifier.self) { group in
                for _ in 0..<16 { group.addTask { try await cache.loadBuffer(forPath: path).storageIdentifier } }
                try await BufferCacheTests.waitUntil { cache.stats.misses == 16 }
                gate.open()
                return try await group.reduce(into: [ObjectIdentifier]()) { $0.append($1) }
            }
            #expect(identities.count == 16)
            #expect(Set(identities).count == 1)
            #expect(opens.value == 1, "the file was opened \(opens.value) times")
            #expect((cache.stats.decodeCount, cache.stats.misses, cache.stats.hits) == (1, 16, 0))
            #expect(try await cache.loadBuffer(forPath: path).samples == written)
        }

        @Test func failuresAreNotCached() async throws {
            let cache = try BufferCache(budgetBytes: 1 << 20)
            let attempts = Counter()
            let gate = Gate()
            let key = BufferCache.Key("flaky")
            let flaky: @Sendable () throws -> PCMBuffer = {
                attempts.increment()
                if attempts.value == 1 {
                    gate.pass()
                    throw AudioError(.corruptData, "flaky: first attempt fails")
                }
                return try PCMBuffer(format: BufferCacheTests.format, samples: BufferCacheTests.samples(frames: 64, seed: 14))
            }
            // Everyone waiting on the failing attempt gets its error.
            let codes = try await withThrowingTaskGroup(of: AudioError.Code?.self) { group in
                for _ in 0..<6 {
                    group.addTask {
                        do {
                            _ = try await cache.loadBuffer(forKey: key, decode: flaky)
                            return nil
                        } catch let error as AudioError {
                            return error.code
                        }
                    }
                }
                try await BufferCacheTests.waitUntil { cache.stats.misses == 6 }
                gate.open()
                return try await group.reduce(into: [AudioError.Code?]()) { $0.append($1) }
            }
            #expect(codes == Array(repeating: .corruptData, count: 6))
            #expect(attempts.value == 1)
            #expect(cache.stats.itemCount == 0)

            // The next request tries again, and that success is cached.
            let buffer = try await cache.loadBuffer(forKey: key, decode: flaky)
            #expect(buffer.samples == BufferCacheTests.samples(frames: 64, seed: 14))
            _ = try await cache.loadBuffer(forKey: key, decode: flaky)
            #expect(attempts.value == 2)
            let stats = cache.stats
            #expect((stats.decodeCount, stats.failedDecodes, stats.itemCount) == (2, 1, 1))
        }
    }

    /// Inside an `async` function the blocking calls still mean the blocking ones: each
    /// `async` twin has a name of its own (`loadBuffer`, `loadDirectory`).
    @Test func blockingCallsWorkInsideAsyncFunctions() async throws {
        let cache = try BufferCache(budgetBytes: 64 << 20)
        let path = Fixtures.path("wav-44100-stereo-s16.wav")
        let blocking: PCMBuffer = try cache.buffer(forPath: path)
        let suspending: PCMBuffer = try await cache.loadBuffer(forPath: path)
        #expect(blocking.frameCount == 22_050)
        #expect(suspending.withUnsafeSamples(Array.init) == blocking.withUnsafeSamples(Array.init))
        let report = try cache.preload(directory: Fixtures.directory.appendingPathComponent("hostile").path)
        #expect(!report.loaded.isEmpty)
    }
}
