import Foundation
import SpoolCore
import SpoolOutput
import Synchronization

/// The buffer-queue back-end behind the `PlaybackBackend` seam: each voice is a
/// `BufferQueue` on one shared `QueueEngine`, which enqueues `PCMBuffer`s in place.
public final class BufferQueueBackend: PlaybackBackend {
    public let name = "queue"
    /// The engine every voice plays on.
    public let engine: QueueEngine

    /// Makes a back-end over `device` and starts the device. The device stops when the
    /// back-end and every voice it made have gone (the engine stops it), so dropping a
    /// back-end without stopping anything leaves no thread running.
    /// The back-end becomes the device's one event handler (`OutputDevice.setEventHandler`),
    /// and hands every event to the handlers added with `addOutputEventHandler(_:)`.
    /// - Parameter device: The output: ALSA, null, or offline (`OfflineDevice`, which the
    ///   program then renders).
    /// - Throws: The device's error.
    public convenience init(device: any OutputDevice) throws {
        try self.init(device: device, maximumVoices: QueueEngine.defaultMaximumQueues)
    }

    /// Makes a back-end over `device` whose engine mixes up to `maximumVoices` voices at once
    /// (`QueueEngine.defaultMaximumQueues`, 256, unless given); as `init(device:)` otherwise.
    /// - Parameters:
    ///   - device: The output.
    ///   - maximumVoices: 1…`QueueEngine.maximumQueuesLimit`.
    /// - Throws: `.invalidParameter` outside that range; the device's error.
    public init(device: any OutputDevice, maximumVoices: Int) throws {
        engine = try QueueEngine(device: device, maximumQueues: maximumVoices)
        device.setEventHandler { [outputEvents] event in outputEvents.dispatch(event) }
        try engine.start()
    }

    private let outputEvents = OutputEventHandlers()

    /// The device's name: `pulse`, `pulse:SINK`, `alsa:NAME`, `null` or `offline`.
    public var outputName: String { engine.device.name }

    /// Adds a handler for what the device reports, on the device's event queue.
    public func addOutputEventHandler(_ handler: @escaping @Sendable (OutputDeviceEvent) -> Void) -> VoiceHandlerToken {
        outputEvents.add(handler)
    }

    public func removeOutputEventHandler(_ token: VoiceHandlerToken) { outputEvents.remove(token) }

    /// The device's period, as it granted it.
    public var outputPeriodFrames: Int { engine.device.periodFrames }

    /// Sets the device's stream role (`OutputDevice.setRole(_:)`: the native sound-server
    /// output has one, other devices ignore it).
    public func setOutputRole(_ role: String) { engine.device.setRole(role) }

    /// Corks the device's stream (`OutputDevice.setCorked(_:)`), where it has one.
    public func setOutputCorked(_ corked: Bool) { engine.device.setCorked(corked) }

    /// Opens `target` and makes a back-end over it, as `OutputDeviceFactory.open` does:
    /// `.default` falls back to the null device where no audio device opens, and says so.
    /// - Parameters:
    ///   - target: The output to open.
    ///   - configuration: Rate, channels, period size and count to ask for.
    /// - Returns: The back-end, and a one-line notice for the user when the output is not
    ///   the one asked for (`nil` otherwise).
    /// - Throws: As `OutputDeviceFactory.open`.
    public static func open(_ target: OutputTarget = .default, configuration: OutputConfiguration = OutputConfiguration())
        throws -> (backend: BufferQueueBackend, notice: String?) {
        let (device, notice) = try OutputDeviceFactory.open(target, configuration: configuration)
        return (try BufferQueueBackend(device: device), notice)
    }

    public var outputFormat: AudioFormat { engine.format }

    /// Whether the engine's mix goes through `SoftLimiter` (`QueueEngine.outputLimiter`).
    public var outputLimiter: Bool { engine.outputLimiter }

    /// Turns the engine's limiter on or off, from the next period.
    public func setOutputLimiter(_ enabled: Bool) throws { engine.outputLimiter = enabled }

    /// The engine's device when it is an `OfflineDevice` (`open(.offline)`), nil otherwise.
    public var offlineRenderer: (any OfflineRendering & Sendable)? { engine.device as? OfflineDevice }

    /// What the device says it holds ahead of the speaker while it plays (the sound server's
    /// timing, ALSA's delay; measured, not the buffer asked for), or its granted buffer while
    /// it does not (`QueueEngine.outputLatency`).
    public var outputLatency: Double { engine.outputLatency }

    /// A voice converting at the engine's `resamplingQuality`.
    public func makeVoice(format: AudioFormat) throws -> any PlaybackVoice {
        try BufferQueueVoice(format: format, engine: engine)
    }

    public func makeVoice(format: AudioFormat, quality: ResamplingQuality) throws -> any PlaybackVoice {
        try BufferQueueVoice(format: format, engine: engine, quality: quality)
    }
}

/// A `BufferQueue` seen through the `PlaybackVoice` seam (see `PlaybackVoice` for what each
/// call does in each state).
public final class BufferQueueVoice: PlaybackVoice, PlayedOutFrameReporting {
    /// The queue behind the voice, for callers that want the Audio Queue API itself. Its
    /// running listener (`setRunningListener`) is the program's: the voice does not use it.
    public let queue: BufferQueue
    private let box = HandlerBox()

    private struct Handlers {
        var handlers = VoiceHandlers()
        var queued = 0
        var disposed = false
        /// Plays begun (starts from `.stopped`): what position handlers belong to.
        var play = 0
    }

    /// Shared with the queue's callbacks, which cannot capture the voice before it exists.
    private final class HandlerBox: Sendable {
        let state = Locked<Handlers>(Handlers())
    }

    public var resamplingQuality: ResamplingQuality { queue.resamplingQuality }

    public func setResamplingQuality(_ quality: ResamplingQuality) throws { try queue.setResamplingQuality(quality) }

    init(format: AudioFormat, engine: QueueEngine, quality: ResamplingQuality? = nil) throws {
        let box = self.box
        queue = try BufferQueue(format: format, engine: engine, quality: quality) { _, buffer in
            let consumed = box.state.withLock { h in
                h.queued -= 1
                return h.handlers.consumedHandlers
            }
            if let pcm = buffer.pcmBuffer { for handler in consumed { handler(pcm) } }
        }
        queue.setStopObserver { finish in
            let finished = box.state.withLock { $0.handlers.finishedHandlers }
            for handler in finished { handler(finish) }
        }
        // Weakly: the queue keeps its observer.
        queue.setPositionObserver { [weak queue] played in
            let (reached, next) = box.state.withLock { h in
                let reached = h.handlers.takePositionHandlers(reached: played, play: h.play)
                return (reached, h.handlers.nextPositionFrame(play: h.play))
            }
            queue?.setPositionFrame(next)
            for handler in reached { handler() }
        }
    }

    public var format: AudioFormat { queue.format }
    public var state: VoiceState { queue.transport }
    public var isDraining: Bool { queue.isEndMarked }
    public var queuedBufferCount: Int { box.state.withLock { $0.queued } }
    public var isPlaying: Bool { state == .playing }
    public var framesPlayed: Int { queue.framesPlayed }
    public var underrunCount: Int { queue.underrunCount }

    /// Read after the stop event that reports it (the report is published after the store).
    package var playedOutRenderedFrame: Int64? {
        guard !queue.engine.isRealTime else { return nil }
        let frame = queue.slot.playedOutSampleTime.load(ordering: .relaxed)
        return frame >= 0 ? frame : nil
    }

    public var outputLatency: Double { queue.engine.outputLatency }

    public func addBufferConsumedHandler(_ handler: @escaping @Sendable (PCMBuffer) -> Void) -> VoiceHandlerToken {
        box.state.withLock { $0.handlers.addConsumed(handler) }
    }

    public func addFinishedHandler(_ handler: @escaping @Sendable (VoiceFinish) -> Void) -> VoiceHandlerToken {
        box.state.withLock { $0.handlers.addFinished(handler) }
    }

    public func addPositionHandler(atFramesPlayed frame: Int,
                                   _ handler: @escaping @Sendable () -> Void) -> VoiceHandlerToken {
        let token = box.state.withLock { h in
            h.handlers.addPosition(atFramesPlayed: frame, play: queue.transport == .stopped ? h.play + 1 : h.play, handler)
        }
        updatePositionFrame()
        return token
    }

    public func removeHandler(_ token: VoiceHandlerToken) {
        box.state.withLock { $0.handlers.remove(token) }
        updatePositionFrame()
    }

    /// Tells the render side which `framesPlayed` the first position handler of the play
    /// under way waits for.
    private func updatePositionFrame() {
        queue.setPositionFrame(box.state.withLock { h in
            h.handlers.nextPositionFrame(play: queue.transport == .stopped ? h.play + 1 : h.play)
        })
    }

    public func enqueue(_ buffer: PCMBuffer) throws {
        box.state.withLock { $0.queued += 1 }
        do { try queue.enqueue(buffer) } catch {
            box.state.withLock { $0.queued -= 1 }
            throw error
        }
    }

    public func start(atHostTime hostTime: UInt64?) throws {
        box.state.withLock { h in
            guard queue.transport == .stopped else { return }
            h.play += 1
            h.handlers.dropPositionHandlers(through: h.play - 1)
        }
        try queue.start(atHostTime: hostTime)
        updatePositionFrame()
    }

    public func pause() throws { try queue.pause() }

    public func stop(immediately: Bool) throws {
        if immediately {
            box.state.withLock { h in
                if queue.transport != .stopped { h.handlers.dropPositionHandlers(through: h.play) }
            }
        }
        try queue.stop(immediately: immediately)
        updatePositionFrame()
    }
    public func setVolume(_ volume: Float, rampSeconds: Double) throws { try queue.setVolume(volume, rampSeconds: rampSeconds) }
    public func setPan(_ pan: Float) throws { try queue.setPan(pan) }
    public func setPlaybackRate(_ rate: Float) throws { try queue.setPlaybackRate(rate) }

    public func dispose() {
        guard !box.state.withLock({ h in defer { h.disposed = true }; return h.disposed }) else { return }
        queue.dispose()
        box.state.withLock { $0.handlers.removeAll() }
    }
}
