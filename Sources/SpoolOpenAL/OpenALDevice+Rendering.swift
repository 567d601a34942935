internal import COpenAL
import Foundation
import SpoolCore

/// Rendering a loopback device on demand: on the calling thread, as fast as the CPU allows,
/// one period at a time, with every source serviced after each period (unqueued, refilled,
/// restarted, handlers run) exactly as the pump would in real time. So a program, a test or
/// `spool play --output wav:` gets the same audio on every run.
extension OpenALDevice: OfflineRendering, RenderedFrameCounting {
    /// One mixer update: what `render(frames:to:)` writes at a time.
    public var renderChunkFrames: Int { updateFrames }
    /// `openal:loopback`, for messages.
    public var renderName: String { "openal:loopback" }
    /// `renderedFrames`: what a streaming source counts its end in.
    package var renderedFrameCount: Int64 { renderState.withLock { $0.renderedFrames } }

    /// Renders `frames` stereo frames into `buffer` (`alcRenderSamplesSOFT`), servicing the
    /// sources after each period. A start scheduled with `start(atHostTime:)` begins on its
    /// exact frame: the period is split there. When the device is closed or lost during the
    /// call, the rest of `buffer` is silence.
    /// - Parameters:
    ///   - frames: Frames to render, 0 or more.
    ///   - buffer: Room for at least `frames × 2` samples.
    /// - Throws: `.invalidState` unless this is an open loopback device;
    ///   `.invalidParameter` when `frames` is negative or `buffer` too small.
    public func render(frames: Int, into buffer: UnsafeMutableBufferPointer<Float>) throws {
        guard case .loopback = kind else {
            throw AudioError(.invalidState, "openal:\(name): only a loopback device renders on demand")
        }
        guard frames >= 0 else { throw AudioError(.invalidParameter, "openal:loopback: cannot render \(frames) frames") }
        guard frames > 0 else { return }
        guard buffer.count >= frames * 2, let base = buffer.baseAddress else {
            throw AudioError(.invalidParameter,
                "openal:loopback: a buffer of \(buffer.count) samples cannot hold \(frames) stereo frames")
        }
        if let closed = shared.withLock({ $0.closed }) { throw closed }
        var done = 0
        while done < frames {
            var chunk = min(updateFrames, frames - done)
            if let due = framesUntilScheduledStart(), due > 0 { chunk = min(chunk, due) }
            done += renderMix(into: base + done * 2, frames: chunk)
            guard serviceVoices() else {
                // Closed or lost during this call: the rest is silence; the next call throws.
                (base + done * 2).update(repeating: 0, count: (frames - done) * 2)
                return
            }
        }
    }

    /// Renders the mix of up to `frames` frames into `buffer` (`alcRenderSamplesSOFT`): all of
    /// them, or, when a fade's gain change waits for the next mix, `declickFrames` of them as a
    /// mix of their own, over which OpenAL Soft glides the change (it glides a gain change over
    /// the whole of the mix that takes it up).
    /// - Returns: The frames rendered.
    func renderMix(into buffer: UnsafeMutablePointer<Float>, frames: Int) -> Int {
        glide.withLock { pending in
            let mixed = pending ? min(frames, declickFrames) : frames
            pending = false
            do {
                try OpenALLibrary.gate.pass { alcRenderSamplesSOFT(context.device.pointer, buffer, Int32(mixed)) }
            } catch {
                buffer.update(repeating: 0, count: mixed * 2)  // the process is exiting
            }
            if limiterOn.load(ordering: .relaxed) { SoftLimiter.process(buffer, count: mixed * 2) }
            renderState.withLock { $0.renderedFrames += Int64(mixed) }
            return mixed
        }
    }

    /// Makes the gain change `change` makes glide over the next `declickFrames` frames mixed,
    /// on a device Spool renders; on a sound server OpenAL Soft glides it over its own mixer
    /// update. `change` runs with no mix under way.
    func glidingOverDeclick<R>(_ change: () -> R) -> R {
        glide.withLock { pending in
            if rendersBySpool { pending = true }
            return change()
        }
    }

    /// Frames of the queue a fade's glide takes from the gain change: `declickFrames` on a
    /// device Spool renders, one mixer update on a sound server.
    var glideFrames: Int { rendersBySpool ? declickFrames : updateFrames }

    /// Frames from the next one to render to the earliest scheduled start, if any.
    private func framesUntilScheduledStart() -> Int? {
        guard let earliest = try? perform({ s in s.voices.values.compactMap { $0.owner?.scheduledHostTime }.min() }),
              earliest > hostTimeBase else { return nil }
        let rendered = renderState.withLock { $0.renderedFrames }
        let dueFrame = Int64((Double(earliest - hostTimeBase) * format.sampleRate / 1e9).rounded(.up))
        return Int(dueFrame - rendered)
    }
}
