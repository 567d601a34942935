import Synchronization
import SpoolCore

/// An output device with no thread and no clock: the caller asks it to render frames, and it
/// pulls them from the renderer on the caller's thread as fast as the CPU allows, in
/// period-sized chunks, with timestamps advancing as if it played in real time.
///
/// Every deterministic test renders through it. The corresponding Apple call is
/// `AudioQueueOfflineRender` (after `AudioQueueSetOfflineRenderFormat`).
public final class OfflineDevice: OutputDevice, OfflineRendering, RenderedFrameCounting {
    /// `offline`.
    public let name = "offline"
    /// The format rendered (48 kHz when the configuration names no rate).
    public let format: AudioFormat
    /// Frames the renderer is asked for at a time (the last chunk of a request may be shorter).
    public let periodFrames: Int
    /// The configured period count; offline rendering queues nothing, so it only matters to
    /// code that reads latency from it.
    public let periodCount: Int
    /// The host time of the first frame rendered: period timestamps read
    /// `hostTimeBase + frames rendered / sampleRate` in nanoseconds.
    public let hostTimeBase: UInt64

    private struct State {
        var renderer: (any AudioRenderer)?
        /// Frames rendered since the last `start`: the next period's `sampleTime`.
        var sampleTime: Int64 = 0
        /// Frames rendered since the device was made: the virtual clock behind `hostTime`.
        var clockFrames: Int64 = 0
    }

    /// Held while the renderer runs, so `stop()` returns only after it has been called for the
    /// last time. The renderer must therefore not call back into this device.
    private let state: Locked<State>

    /// Makes a device with the renderer detached.
    /// - Parameters:
    ///   - configuration: Rate (`nil` for 48 kHz), channels and period size.
    ///   - hostTimeBase: The host time of the first frame; `HostTime.now()` when omitted.
    /// - Throws: `AudioError.Code.invalidParameter` naming the configuration field at fault.
    public init(configuration: OutputConfiguration, hostTimeBase: UInt64? = nil) throws {
        let configuration = try configuration.validated()
        format = try AudioFormat(sampleRate: configuration.sampleRate ?? NullDevice.defaultSampleRate,
                                 channelCount: configuration.channelCount)
        periodFrames = configuration.periodFrames
        periodCount = configuration.periodCount
        self.hostTimeBase = hostTimeBase ?? HostTime.now()
        state = Locked(State())
    }

    /// Whether a renderer is attached.
    public var isRunning: Bool { state.withLock { $0.renderer != nil } }

    /// Always 0: offline rendering cannot run dry.
    public var xrunCount: Int { 0 }

    /// Always 0: rendered frames go straight to the caller.
    public var queuedFrames: Int { 0 }

    /// False: the program renders on demand, so engines deliver callbacks right after each
    /// render call instead of from a real-time thread.
    public var rendersInRealTime: Bool { false }

    /// Frames rendered since the last `start`: the `sampleTime` of the next period, which is
    /// what the renderer's voices count their ends in.
    package var renderedFrameCount: Int64 { state.withLock { $0.sampleTime } }

    /// One period: what `render(frames:to:)` writes at a time.
    public var renderChunkFrames: Int { periodFrames }
    /// `offline`, for messages.
    public var renderName: String { name }

    /// Attaches `renderer` and restarts `sampleTime` at 0; rendering happens in the `render` calls.
    /// - Parameter renderer: Asked for at most `periodFrames` frames at a time.
    /// - Throws: `AudioError.Code.invalidState` when a renderer is already attached.
    public func start(renderer: any AudioRenderer) throws {
        try state.withLock { state in
            guard state.renderer == nil else { throw AudioError(.invalidState, "offline: already running") }
            state.renderer = renderer
            state.sampleTime = 0
        }
    }

    /// Detaches the renderer, after any render call in progress has finished. Does nothing
    /// when none is attached.
    public func stop() {
        state.withLock { $0.renderer = nil }
    }

    /// Offline rendering reports no events; the handler is never called.
    /// - Parameter handler: Ignored.
    public func setEventHandler(_ handler: (@Sendable (OutputDeviceEvent) -> Void)?) {}

    /// Renders `frames` frames into `buffer` on the calling thread, without allocating.
    /// The corresponding Apple call is `AudioQueueOfflineRender`.
    /// - Parameters:
    ///   - frames: Frames to render, 0 or more.
    ///   - buffer: Room for at least `frames × format.channelCount` samples.
    /// - Throws: `AudioError.Code.invalidState` when no renderer is attached;
    ///   `AudioError.Code.invalidParameter` when `frames` is negative or `buffer` too small.
    public func render(frames: Int, into buffer: UnsafeMutableBufferPointer<Float>) throws {
        let channels = format.channelCount
        guard frames >= 0 else { throw AudioError(.invalidParameter, "offline: cannot render \(frames) frames") }
        guard buffer.count >= frames * channels, let base = buffer.baseAddress else {
            if frames == 0 { return }
            throw AudioError(.invalidParameter,
                "offline: a buffer of \(buffer.count) samples cannot hold \(frames) frames of \(channels) channels")
        }
        try state.withLock { state in
            guard let renderer = state.renderer else { throw AudioError(.invalidState, "offline: not started") }
            var done = 0
            while done < frames {
                let chunk = min(periodFrames, frames - done)
                renderer.render(into: base + done * channels, frames: chunk, timestamp: nextTimestamp(&state, frames: chunk))
                done += chunk
            }
        }
    }

    /// The timestamp of the next `frames` frames, advancing the counters past them.
    private func nextTimestamp(_ state: inout State, frames: Int) -> RenderTimestamp {
        let hostTime = hostTimeBase &+ UInt64((Double(state.clockFrames) * 1e9 / format.sampleRate).rounded())
        let timestamp = RenderTimestamp(sampleTime: state.sampleTime, hostTime: hostTime)
        state.sampleTime += Int64(frames)
        state.clockFrames += Int64(frames)
        return timestamp
    }
}
