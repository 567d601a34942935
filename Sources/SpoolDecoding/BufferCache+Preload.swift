import Foundation
import SpoolCore
import Synchronization

extension BufferCache {
    /// What `preload(directory:)` did with each file of the folder.
    public struct PreloadReport: Sendable {
        /// A file that decoded into the cache.
        public struct LoadedFile: Sendable {
            /// The file's path.
            public let path: String
            /// Frames decoded.
            public let frameCount: Int
            /// Bytes of decoded samples.
            public let byteCount: Int
            /// Rate and channel count of the decoded audio.
            public let format: AudioFormat
        }

        /// A file that looked like audio but did not decode.
        public struct FailedFile: Sendable {
            /// The file's path.
            public let path: String
            /// Why it failed.
            public let error: AudioError
        }

        /// The folder that was loaded, as an absolute path.
        public let directory: String
        /// Files that decoded, in name order. With a budget smaller than the folder, the
        /// least recently loaded of them have been evicted again.
        public let loaded: [LoadedFile]
        /// Files that failed, in name order.
        public let failed: [FailedFile]
        /// Paths of entries that are not audio (sub-folders, other files), in name order.
        public let skipped: [String]
        /// Wall-clock seconds the whole load took.
        public let seconds: Double

        /// Bytes of decoded samples over all loaded files.
        public var byteCount: Int { loaded.reduce(0) { $0 + $1.byteCount } }
    }

    /// File extensions taken for audio without looking inside: the formats Spool's decoders
    /// read. Files with other extensions are loaded when their first bytes are recognised.
    public static let audioFileExtensions: Set<String> = [
        "mp3", "mp2", "mp1", "mpga", "ogg", "oga", "opus", "wav", "wave", "aif", "aiff", "aifc", "caf",
        "flac", "rf64", "w64", "au", "snd",
    ]

    /// Decodes every audio file in a folder into the cache, several at once: the iOS
    /// `sound.bundle` pattern of loading a game's or app's sounds up front.
    ///
    /// Files are handed out one at a time to `maximumConcurrency` workers, so a slow file
    /// does not hold up the others. A file that fails is reported and the rest still load.
    /// Only the folder's own entries are read, not sub-folders; hidden files are skipped. A
    /// file counts as audio when its extension is in `audioFileExtensions` or its first bytes
    /// are recognised by the cache's registry. The closest Apple analogue is calling
    /// `AVAudioPlayer.prepareToPlay()` (or OpenAL `alBufferData`) for each sound at launch.
    /// - Parameters:
    ///   - directory: The folder's path; a relative one is taken from the current folder.
    ///   - maximumConcurrency: Files decoded at once; all cores unless given, 1 for a serial load.
    /// - Returns: What loaded, what failed and what was skipped, with absolute paths: the
    ///   paths the cache keys the files by, also the ones an `AudioSource.file(path:)` gets.
    /// - Throws: `AudioError.Code.fileNotFound` when the folder cannot be listed,
    ///   `AudioError.Code.invalidParameter` when `maximumConcurrency` is less than 1.
    public func preload(directory: String,
                        maximumConcurrency: Int = ProcessInfo.processInfo.activeProcessorCount) throws -> PreloadReport {
        guard maximumConcurrency >= 1 else {
            throw AudioError(.invalidParameter, "preload concurrency \(maximumConcurrency) must be at least 1")
        }
        let start = ContinuousClock.now
        let directory = Self.absolutePath(directory)
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
                .filter { !$0.hasPrefix(".") }.sorted()
        } catch {
            throw AudioError(.fileNotFound, "\(directory): cannot list the folder", underlying: error)
        }
        let paths = names.map { (directory as NSString).appendingPathComponent($0) }
        let outcomes = PreloadOutcomes(count: paths.count)
        let nextFile = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: min(maximumConcurrency, max(paths.count, 1))) { _ in
            while true {
                let i = nextFile.add(1, ordering: .relaxed).oldValue
                guard i < paths.count else { return }
                let outcome = preloadOne(paths[i])
                outcomes.set(outcome, at: i)
            }
        }
        var loaded: [PreloadReport.LoadedFile] = []
        var failed: [PreloadReport.FailedFile] = []
        var skipped: [String] = []
        for outcome in outcomes.all {
            switch outcome {
            case .loaded(let file): loaded.append(file)
            case .failed(let file): failed.append(file)
            case .skipped(let path): skipped.append(path)
            case nil: break
            }
        }
        let elapsed = ContinuousClock.now - start
        return PreloadReport(
            directory: directory, loaded: loaded, failed: failed, skipped: skipped,
            seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18)
    }

    /// Decodes every audio file in a folder into the cache, several at once.
    /// - Parameters:
    ///   - directory: The folder's URL.
    ///   - maximumConcurrency: Files decoded at once; all cores unless given.
    /// - Returns: What loaded, what failed and what was skipped.
    /// - Throws: `AudioError.Code.fileNotFound` when the folder cannot be listed,
    ///   `AudioError.Code.invalidParameter` when `maximumConcurrency` is less than 1.
    public func preload(directory: URL,
                        maximumConcurrency: Int = ProcessInfo.processInfo.activeProcessorCount) throws -> PreloadReport {
        try preload(directory: directory.path, maximumConcurrency: maximumConcurrency)
    }

    /// Decodes every audio file in a folder into the cache on Dispatch worker threads,
    /// suspending the caller until all are done: the `async` twin of `preload(directory:)`,
    /// named apart so that a blocking call inside an `async` function still means the
    /// blocking one.
    /// - Parameters:
    ///   - directory: The folder's path.
    ///   - maximumConcurrency: Files decoded at once; all cores unless given.
    /// - Returns: What loaded, what failed and what was skipped.
    /// - Throws: `AudioError.Code.fileNotFound` when the folder cannot be listed,
    ///   `AudioError.Code.invalidParameter` when `maximumConcurrency` is less than 1.
    public func loadDirectory(_ directory: String,
                              maximumConcurrency: Int = ProcessInfo.processInfo.activeProcessorCount) async throws -> PreloadReport {
        // Decoding blocks on file reads: it runs on Dispatch's threads, not the cooperative pool.
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result {
                    try self.preload(directory: directory, maximumConcurrency: maximumConcurrency) as PreloadReport
                })
            }
        }
    }

    /// Decodes every audio file in a folder into the cache on Dispatch worker threads.
    /// - Parameters:
    ///   - directory: The folder's URL.
    ///   - maximumConcurrency: Files decoded at once; all cores unless given.
    /// - Returns: What loaded, what failed and what was skipped.
    /// - Throws: `AudioError.Code.fileNotFound` when the folder cannot be listed,
    ///   `AudioError.Code.invalidParameter` when `maximumConcurrency` is less than 1.
    public func loadDirectory(_ directory: URL,
                              maximumConcurrency: Int = ProcessInfo.processInfo.activeProcessorCount) async throws -> PreloadReport {
        try await loadDirectory(directory.path, maximumConcurrency: maximumConcurrency)
    }

    private enum PreloadOutcome: Sendable {
        case loaded(PreloadReport.LoadedFile)
        case failed(PreloadReport.FailedFile)
        case skipped(String)
    }

    /// Each file's outcome, written by whichever worker loaded it.
    private final class PreloadOutcomes: Sendable {
        private let slots: Locked<[PreloadOutcome?]>
        init(count: Int) { slots = Locked(Array(repeating: nil, count: count)) }
        func set(_ outcome: PreloadOutcome, at index: Int) { slots.withLock { $0[index] = outcome } }
        var all: [PreloadOutcome?] { slots.withLock { $0 } }
    }

    /// Loads one folder entry, or says why not.
    private func preloadOne(_ path: String) -> PreloadOutcome {
        guard isAudioFile(path) else { return .skipped(path) }
        do {
            let buffer = try buffer(forPath: path) as PCMBuffer
            return .loaded(PreloadReport.LoadedFile(path: path, frameCount: buffer.frameCount,
                                                    byteCount: buffer.byteCount, format: buffer.format))
        } catch let error as AudioError {
            return .failed(PreloadReport.FailedFile(path: path, error: error))
        } catch {
            return .failed(PreloadReport.FailedFile(
                path: path, error: AudioError(.libraryFailure, "\(path): cannot be decoded", underlying: error)))
        }
    }

    /// A regular file with an audio extension, or whose first bytes a decoder recognises.
    private func isAudioFile(_ path: String) -> Bool {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), !isFolder.boolValue else {
            return false
        }
        let fileExtension = (path as NSString).pathExtension.lowercased()
        if Self.audioFileExtensions.contains(fileExtension) { return true }
        let candidates = try? registry.candidates(for: .file(path: path))
        return !(candidates ?? []).isEmpty
    }
}
