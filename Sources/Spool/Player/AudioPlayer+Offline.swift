import Foundation
import SpoolCore

/// Rendering a player to its end in one call, on a back-end opened offline: the player plays
/// from where it is, and the back-end's `offlineRenderer` renders until its last frame, which
/// ends the output (the render call that renders it is cut there).
extension AudioPlayer {
    /// Plays the player to its end, offline, and returns what its back-end rendered: every
    /// frame of every loop pass, at its rate, volume and pan, converted to the back-end's
    /// format, and nothing after the last one.
    ///
    /// The player plays from `currentTime` (or resumes where it paused), as `play()` starts
    /// it. The output is the back-end's whole mix, so another voice playing on the same
    /// back-end is heard in it too. When `maximumSeconds` comes first, the player is still
    /// playing: another call renders on from the next frame.
    ///
    /// - Parameter maximumSeconds: The most to render, in seconds of output; `nil` for no
    ///   limit. Needed when `numberOfLoops` is −1.
    /// - Returns: The rendered audio, in the back-end's `outputFormat`.
    /// - Throws: `.invalidState` when the back-end renders in real time (it has no
    ///   `offlineRenderer`: open it on `.offline`) or the player loops for ever with no
    ///   maximum; `.invalidParameter` for a negative or non-finite maximum; as `play()`.
    ///
    /// The corresponding Apple calls are AVAudioEngine's `enableManualRenderingMode` and
    /// `renderOffline(_:to:)`, looped until the player node's completion handler runs.
    public func renderToEnd(maximumSeconds: TimeInterval? = nil) throws -> PCMBuffer {
        try renderToEnd(maximumSeconds: maximumSeconds, loopsForever: numberOfLoops < 0, what: "the player")
    }

    /// Plays the player to its end, offline, into a Float32 WAV file: what
    /// `renderToEnd(maximumSeconds:)` returns, written as it renders, one render call at a
    /// time, so that memory stays small however long the output.
    ///
    /// - Parameters:
    ///   - url: The file to create or replace.
    ///   - maximumSeconds: As `renderToEnd(maximumSeconds:)`.
    /// - Returns: Frames written.
    /// - Throws: As `renderToEnd(maximumSeconds:)`; `.invalidParameter` for a URL that is not
    ///   a file's; `.writeFailed` when the file cannot be written or would pass 4 GiB.
    @discardableResult
    public func renderToEnd(toWAV url: URL, maximumSeconds: TimeInterval? = nil) throws -> Int {
        try renderToEnd(toWAV: url, maximumSeconds: maximumSeconds, loopsForever: numberOfLoops < 0, what: "the player")
    }

    /// `renderToEnd(maximumSeconds:)` for a player whose source says whether it loops for
    /// ever (a playlist's).
    func renderToEnd(maximumSeconds: TimeInterval?, loopsForever: Bool, what: String) throws -> PCMBuffer {
        var samples: [Float] = []
        let renderer = try offlineRenderer(maximumSeconds: maximumSeconds, loopsForever: loopsForever, what: what)
        _ = try render(renderer, maximumSeconds: maximumSeconds) { samples.append(contentsOf: $0) }
        return try PCMBuffer(format: renderer.format, samples: samples)
    }

    /// `renderToEnd(toWAV:maximumSeconds:)` for a player whose source says whether it loops
    /// for ever.
    func renderToEnd(toWAV url: URL, maximumSeconds: TimeInterval?, loopsForever: Bool, what: String) throws -> Int {
        guard url.isFileURL else {
            throw AudioError(.invalidParameter, "\(what) renders to a file, not to \(url.absoluteString)")
        }
        let renderer = try offlineRenderer(maximumSeconds: maximumSeconds, loopsForever: loopsForever, what: what)
        let writer = try WAVFileWriter(path: url.path, format: renderer.format)
        let frames = try render(renderer, maximumSeconds: maximumSeconds) { try writer.write($0) }
        try writer.finish()
        return frames
    }

    /// The back-end's offline renderer, once the request is known to end.
    private func offlineRenderer(maximumSeconds: TimeInterval?, loopsForever: Bool,
                                 what: String) throws -> any OfflineRendering & Sendable {
        let backend = self.backend
        guard let renderer = backend.offlineRenderer else {
            throw AudioError(.invalidState, "\(what) plays on \(backend.outputName), which renders in real time: "
                             + "renderToEnd needs a back-end opened on .offline")
        }
        if let maximumSeconds, !(maximumSeconds.isFinite && maximumSeconds >= 0) {
            throw AudioError(.invalidParameter, "maximumSeconds must be a finite number of seconds, 0 or more, not \(maximumSeconds)")
        }
        if loopsForever, maximumSeconds == nil {
            throw AudioError(.invalidState, "\(what) loops for ever (numberOfLoops -1 or a repeat mode): "
                             + "renderToEnd needs a maximumSeconds")
        }
        return renderer
    }

    /// Plays and renders, one render call of the renderer's chunk at a time, handing each
    /// chunk's frames to `write` until the run is over or `maximumSeconds` rendered; the call
    /// that rendered the last frame is cut after it.
    /// - Returns: Frames handed to `write`.
    private func render(_ renderer: any OfflineRendering & Sendable, maximumSeconds: TimeInterval?,
                        write: (UnsafeBufferPointer<Float>) throws -> Void) throws -> Int {
        let limit = maximumSeconds.map { renderer.format.frames(forSeconds: $0) } ?? .max
        let channels = renderer.format.channelCount
        let chunkFrames = max(1, renderer.renderChunkFrames)
        let chunk = UnsafeMutableBufferPointer<Float>.allocate(capacity: chunkFrames * channels)
        defer { chunk.deallocate() }
        let counter = renderer as? any RenderedFrameCounting
        try play()
        var done = 0
        while done < limit {
            let frames = min(chunkFrames, limit - done)
            let first = counter?.renderedFrameCount
            try renderer.render(frames: frames, into: chunk)
            var kept = frames, over = true
            switch offlineRun() {
            case .playing:
                over = false
            case .playedOut(let end):
                if let end, let first { kept = Int(min(max(0, end - first), Int64(frames))) }
            case .over:
                // Paused or stopped by someone else (a session's interruption): what the call
                // rendered is the fade-out.
                break
            }
            try write(UnsafeBufferPointer(rebasing: chunk[0..<(kept * channels)]))
            done += kept
            if over { break }
        }
        return done
    }
}
