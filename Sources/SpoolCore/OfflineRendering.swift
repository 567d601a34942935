/// A device a program renders on demand, as fast as the CPU allows (the
/// `AudioQueueOfflineRender` / `alcRenderSamplesSOFT` model): the buffer queue's
/// `OfflineDevice` and OpenAL's loopback device. Conformers render into a caller's buffer;
/// rendering into a new `PCMBuffer` or a WAV file comes with the protocol.
public protocol OfflineRendering: AnyObject {
    /// The format rendered.
    var format: AudioFormat { get }
    /// Frames rendered at a time: the chunk the WAV helpers write.
    var renderChunkFrames: Int { get }
    /// A name for messages, e.g. `offline`.
    var renderName: String { get }

    /// Renders `frames` interleaved frames into `buffer` on the calling thread.
    ///
    /// - Throws: `.invalidState` when the device cannot render now; `.invalidParameter` when
    ///   `frames` is negative or `buffer` too small.
    func render(frames: Int, into buffer: UnsafeMutableBufferPointer<Float>) throws
}

extension OfflineRendering {
    /// Renders `frames` frames into a new buffer.
    ///
    /// - Parameter frames: Frames to render, 0 or more.
    /// - Returns: The rendered audio, `frames` frames long.
    /// - Throws: As `render(frames:into:)`.
    public func render(frames: Int) throws -> PCMBuffer {
        guard frames >= 0 else { throw AudioError(.invalidParameter, "\(renderName): cannot render \(frames) frames") }
        let count = frames * format.channelCount
        var failure: (any Error)?
        let samples = [Float](unsafeUninitializedCapacity: count) { out, initialized in
            out.initialize(repeating: 0)
            do { try render(frames: frames, into: out) } catch { failure = error }
            initialized = count
        }
        if let failure { throw failure }
        return try PCMBuffer(format: format, samples: samples)
    }

    /// Renders `frames` frames into a WAV writer, one chunk at a time. One chunk buffer is
    /// allocated per call, none per chunk.
    ///
    /// - Parameters:
    ///   - frames: Frames to render, 0 or more.
    ///   - writer: Receives the frames; its format must be the device's. Not finished here.
    /// - Throws: As `render(frames:into:)`; `.invalidParameter` on a format mismatch;
    ///   `.writeFailed` when writing fails.
    public func render(frames: Int, to writer: WAVFileWriter) throws {
        guard frames >= 0 else { throw AudioError(.invalidParameter, "\(renderName): cannot render \(frames) frames") }
        guard writer.format == format else {
            throw AudioError(.invalidParameter,
                "\(renderName): the WAV writer's format (\(writer.format)) is not the device's (\(format))")
        }
        let channels = format.channelCount
        let chunkFrames = max(1, renderChunkFrames)
        let chunk = UnsafeMutableBufferPointer<Float>.allocate(capacity: chunkFrames * channels)
        defer { chunk.deallocate() }
        var done = 0
        while done < frames {
            let n = min(chunkFrames, frames - done)
            try render(frames: n, into: chunk)
            try writer.write(UnsafeBufferPointer(rebasing: chunk[0..<(n * channels)]))
            done += n
        }
    }

    /// Renders `seconds` of audio into a new Float32 WAV file at `path`.
    ///
    /// - Parameters:
    ///   - seconds: How long to render, rounded to the nearest frame.
    ///   - path: The file to create or replace.
    /// - Returns: Frames written.
    /// - Throws: As `render(frames:to:)`; `.invalidParameter` for a negative or infinite duration.
    @discardableResult
    public func render(seconds: Double, toWAV path: String) throws -> Int {
        guard seconds.isFinite, seconds >= 0 else {
            throw AudioError(.invalidParameter, "\(renderName): cannot render \(seconds) seconds")
        }
        let frames = format.frames(forSeconds: seconds)
        let most = WAVFileWriter.maximumDataBytes / (4 * format.channelCount)
        guard frames <= most else {
            throw AudioError(.invalidParameter, "\(renderName): cannot render \(seconds) seconds to a WAV file, which holds "
                             + "at most \(format.seconds(forFrames: most)) seconds (4 GiB) of \(format)")
        }
        let writer = try WAVFileWriter(path: path, format: format)
        try render(frames: frames, to: writer)
        try writer.finish()
        return frames
    }
}

/// An offline renderer that counts the frames it has rendered: the scale on which its voices
/// say where they played out (`PlayedOutFrameReporting`). Both back-ends' offline renderers
/// conform; `AudioPlayer.renderToEnd` cuts its last render call there.
package protocol RenderedFrameCounting: AnyObject {
    /// Frames rendered since the renderer started pulling from its mix.
    var renderedFrameCount: Int64 { get }
}

/// A voice that knows, on a device rendered on demand, on which frame of the device's output
/// its latest play ended by playing out: the frame just after its last one.
package protocol PlayedOutFrameReporting: AnyObject {
    /// The device's `renderedFrameCount` just after the last frame of the latest play that
    /// played out; nil before one, and on a device that renders in real time.
    var playedOutRenderedFrame: Int64? { get }
}
