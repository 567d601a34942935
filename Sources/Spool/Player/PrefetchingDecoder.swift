import Dispatch
import SpoolCore

/// A decoder that decodes ahead on a worker queue of its own, so that the thread reading it
/// (a voice's callback thread, refilling the voice) takes frames already decoded and does not
/// wait on the disk.
///
/// It keeps at most `chunksAhead` chunks of `chunkFrames` decoded ahead of the reader, and the
/// first chunk of the stream besides, so that a rewind to the start (a loop seam) is served
/// from memory too. Memory is bounded by those chunks, whatever the file's length.
///
/// Only the worker queue touches the decoder it wraps. A read that finds nothing decoded
/// (the first read, or one after a seek) waits for the worker to decode the next chunk.
///
/// Over a source whose bytes arrive from the network, a feeder need not wait: with
/// `waitsForData` off, `wouldWait` says when nothing is decoded yet, and `onChunk` is called
/// (on the worker) each time a chunk arrives, so that the feed can go on then.
final class PrefetchingDecoder: ProgressiveDecoder, ArrivingAudio, @unchecked Sendable {
    // Sendable: `inner` is only touched on `worker`; everything else is in `ready`.
    let format: AudioFormat
    let info: AudioFileInfo
    private let inner: any AudioDecoder
    private let innerFrameCount: Int
    private let innerCountIsExact: Bool
    private let chunkFrames: Int
    private let chunksAhead: Int
    private let worker = DispatchQueue(label: "spool.player.prefetch", qos: .userInitiated)
    private let ready: Locked<Ready>

    private struct Ready: @unchecked Sendable {
        // Sendable: PCMBuffers and plain values, reached only through the lock.
        /// Decoded chunks in stream order; the first may be partly read (`offset`).
        var chunks: [PCMBuffer] = []
        var offset = 0
        /// Bumped by each seek: a chunk decoded for an older generation is dropped.
        var generation = 0
        /// Whether a fill is scheduled or running on the worker.
        var filling = false
        /// The worker reached the end of the stream, or failed (`error`).
        var ended = false
        var error: AudioError?
        /// The next frame `read(into:)` produces.
        var position = 0
        /// The first chunk of the stream, kept for rewinds.
        var head: PCMBuffer?
        var warnings: [DecodeWarning] = []
        var frameCount: Int
        var frameCountIsExact: Bool
        /// Whether a read with nothing decoded waits for the worker (see `waitsForData`).
        var waitsForData = true
        var onChunk: (@Sendable () -> Void)?
    }

    /// Wraps `decoder`, which must be at frame 0 and is used only by this object from now on.
    ///
    /// - Parameters:
    ///   - decoder: The decoder to read ahead of.
    ///   - chunkFrames: Frames per decoded chunk.
    ///   - chunksAhead: Chunks kept decoded ahead of the reader.
    ///   - download: The HTTP source the decoder reads, for the buffer fill.
    init(_ decoder: sending any AudioDecoder, chunkFrames: Int = 4096, chunksAhead: Int = 4, download: HTTPSource? = nil) {
        self.download = download
        format = decoder.format
        info = decoder.info
        innerFrameCount = decoder.frameCount
        innerCountIsExact = decoder.isFrameCountExact
        ready = Locked(Ready(frameCount: decoder.frameCount, frameCountIsExact: decoder.isFrameCountExact))
        inner = decoder
        self.chunkFrames = max(16, chunkFrames)
        self.chunksAhead = max(1, chunksAhead)
        scheduleFill()
    }

    /// Whether a feeder reading with nothing decoded waits (the default) or is told to come
    /// back (`wouldWait`): off for audio still downloading in real time, on offline, where the
    /// render waits for the bytes however slowly they come.
    var waitsForData: Bool {
        get { ready.withLock { $0.waitsForData } }
        set { ready.withLock { $0.waitsForData = newValue } }
    }

    /// Called on the worker after each chunk is decoded.
    var onChunk: (@Sendable () -> Void)? {
        get { ready.withLock { $0.onChunk } }
        set { ready.withLock { $0.onChunk = newValue } }
    }

    /// With `waitsForData` off and someone told of arrivals (`onChunk`): nothing decoded, and
    /// the end not reached. (Without `onChunk` nothing would resume a feed it starved.)
    var wouldWait: Bool {
        ready.withLock { !$0.waitsForData && $0.onChunk != nil && $0.chunks.isEmpty && !$0.ended }
    }

    /// The download the decoder reads, when it reads one.
    let download: HTTPSource?

    /// Frames decoded ahead of the reader.
    var framesReady: Int {
        ready.withLock { r in r.chunks.reduce(0) { $0 + $1.frameCount } - r.offset }
    }

    /// The worker has decoded the last frame (or failed): reads no longer wait.
    var reachedEnd: Bool { ready.withLock { $0.ended } }

    var frameCount: Int { ready.withLock { $0.frameCount } }
    var isFrameCountExact: Bool { ready.withLock { $0.frameCountIsExact } }
    var position: Int { ready.withLock { $0.position } }
    var warnings: [DecodeWarning] { ready.withLock { $0.warnings } }

    func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int {
        let channels = format.channelCount
        let wanted = buffer.count / channels
        guard wanted > 0 else { return 0 }
        var written = 0
        while written < wanted {
            let step = ready.withLock { r -> (copied: Int, wait: Int?, failure: AudioError?) in
                guard let chunk = r.chunks.first else {
                    if r.ended { return (0, nil, r.error.take()) }
                    return (0, r.generation, nil)
                }
                let n = min(chunk.frameCount - r.offset, wanted - written)
                chunk.withUnsafeSamples { samples in
                    let from = samples.baseAddress! + r.offset * channels
                    (buffer.baseAddress! + written * channels).update(from: from, count: n * channels)
                }
                r.offset += n
                r.position += n
                if r.offset == chunk.frameCount {
                    r.chunks.removeFirst()
                    r.offset = 0
                }
                return (n, nil, nil)
            }
            written += step.copied
            if let failure = step.failure {
                // Frames decoded before the failure are returned first; the error on the next read.
                if written > 0 {
                    ready.withLock { $0.error = failure }
                    break
                }
                throw failure
            }
            if let generation = step.wait {
                if written > 0 { break }
                worker.sync { _ = decodeOne(for: generation) }
            } else if step.copied == 0 {
                break
            }
        }
        scheduleFill()
        return written
    }

    func seek(toFrame frame: Int) throws {
        let (exact, count) = ready.withLock { ($0.frameCountIsExact, $0.frameCount) }
        guard frame >= 0, !exact || frame <= count else {
            throw AudioError(.outOfRange, "\(info.container): frame \(frame) is outside 0...\(count)")
        }
        ready.withLock { r in
            r.generation += 1
            r.chunks = []
            r.offset = 0
            r.ended = false
            r.error = nil
            r.position = frame
            var resumeAt = frame
            // A seek into the kept head is served from memory; the worker goes on after it.
            if let head = r.head, frame < head.frameCount, let rest = try? head.slice(frames: frame..<head.frameCount) {
                r.chunks = [rest]
                resumeAt = head.frameCount
            }
            // Queued inside the lock: a fill scheduled for this generation (by any thread, once
            // the lock is let go) then runs after the decoder has moved.
            let generation = r.generation
            worker.async { [self, resumeAt] in
                do { try inner.seek(toFrame: resumeAt) } catch {
                    ready.withLock { r in
                        guard r.generation == generation else { return }
                        r.ended = true
                        r.error = error as? AudioError ?? AudioError(.libraryFailure, "seeking failed", underlying: error)
                    }
                }
            }
        }
        scheduleFill()
    }

    // MARK: The worker

    /// Starts a fill on the worker unless one is under way or enough is decoded.
    private func scheduleFill() {
        let generation = ready.withLock { r -> Int? in
            guard !r.filling, !r.ended, r.chunks.count < chunksAhead else { return nil }
            r.filling = true
            return r.generation
        }
        guard let generation else { return }
        worker.async { [self] in
            // One chunk per block, so a seek or a waiting read queued meanwhile runs soon.
            _ = decodeOne(for: generation)
            let notify = ready.withLock { r in
                r.filling = false
                return r.onChunk
            }
            notify?()
            scheduleFill()
        }
    }

    /// Decodes one chunk on the worker and appends it, unless enough is decoded already or a
    /// seek came after the call was scheduled for `generation` (its seek of the decoder is
    /// then queued behind this call, so what it would decode is from the old place).
    /// Returns whether more may be decoded.
    private func decodeOne(for generation: Int) -> Bool {
        let current = generation
        let full = ready.withLock { r in r.generation != current || r.ended || r.chunks.count >= chunksAhead }
        guard !full else { return false }
        let channels = format.channelCount
        let startFrame = inner.position
        var samples = [Float](repeating: 0, count: chunkFrames * channels)
        var got = 0
        var failure: AudioError?
        do {
            try samples.withUnsafeMutableBufferPointer { out in
                while got < chunkFrames {
                    let n = try inner.read(into: UnsafeMutableBufferPointer(rebasing: out[(got * channels)...]))
                    if n == 0 { break }
                    got += min(n, chunkFrames - got)
                }
            }
        } catch {
            failure = error as? AudioError ?? AudioError(.libraryFailure, "decoding failed", underlying: error)
        }
        samples.removeLast((chunkFrames - got) * channels)
        let chunk = got > 0 ? try? PCMBuffer(format: format, samples: samples) : nil
        let warnings = inner.warnings
        let innerCount = (inner.frameCount, inner.isFrameCountExact)
        let endCount = (failure == nil && got < chunkFrames) ? inner.position : nil
        return ready.withLock { r -> Bool in
            guard r.generation == current else { return false }
            r.warnings = warnings
            // A stream learns its length as it goes: the count as the decoder knows it now.
            if !r.frameCountIsExact { (r.frameCount, r.frameCountIsExact) = innerCount }
            if let chunk {
                r.chunks.append(chunk)
                if startFrame == 0, r.head == nil { r.head = chunk }
            }
            if let failure {
                r.ended = true
                r.error = failure
            } else if got < chunkFrames {
                r.ended = true
                // The end is known now: what decoding produced is the count.
                if let endCount, !r.frameCountIsExact {
                    r.frameCount = endCount
                    r.frameCountIsExact = true
                }
            }
            return !r.ended && r.chunks.count < chunksAhead
        }
    }
}

extension Optional {
    /// The value, leaving nil behind.
    fileprivate mutating func take() -> Wrapped? {
        defer { self = nil }
        return self
    }
}
