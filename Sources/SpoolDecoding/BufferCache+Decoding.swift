import Foundation
import SpoolCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

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

    func decode(_ source: AudioSource) throws -> PCMBuffer {
        try registry.open(source).decodeAll()
    }

    func namedKey(_ name: String) throws -> (Key, AudioSource) {
        guard let asset = state.withLock({ $0.assets[name] }) else {
            throw AudioError(.fileNotFound, "no in-memory audio is registered under the name '\(name)'")
        }
        return (Key(identity: .named(name), version: .registration(asset.generation)),
                .memory(asset.data, name: name, typeHint: asset.typeHint))
    }

    static func filePath(of url: URL) throws -> String {
        guard url.isFileURL else {
            throw AudioError(.invalidParameter, "\(url): the buffer cache reads file URLs only")
        }
        return url.path
    }

    static func nothingCached(under name: String) -> AudioError {
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
