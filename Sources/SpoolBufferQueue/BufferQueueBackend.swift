import Foundation
import SpoolCore
import Synchronization

/// The buffer-queue back-end behind the `PlaybackBackend` seam: each voice is a
/// `BufferQueue` on one shared `QueueEngine`, which enqueues `PCMBuffer`s in place.
public final class BufferQueueBackend: PlaybackBackend {
    public let name = "queue"
    /// The engine every voice plays on.
    public let engine: QueueEngine

    /// Makes a back-end over `device` and starts the device.
    /// - Throws: The device's error.
    public init(device: any OutputDevice) throws {
        engine = QueueEngine(device: device)
        try engine.start()
    }

    public var outputFormat: AudioFormat { engine.format }

    public var outputLatency: Double {
        Double(engine.device.periodFrames * engine.device.periodCount) / engine.format.sampleRate
    }

    public func makeVoice(format: AudioFormat) throws -> any PlaybackVoice {
        try BufferQueueVoice(format: format, engine: engine)
    }
}

/// A `BufferQueue` seen through the `PlaybackVoice` seam.
public final class BufferQueueVoice: PlaybackVoice {
    /// The queue behind the voice, for callers that want the Audio Queue API itself.
    public let queue: BufferQueue
    private let box = HandlerBox()

    private struct Handlers {
        var consumed: (@Sendable (PCMBuffer) -> Void)?
        var finished: (@Sendable (VoiceFinish) -> Void)?
        var queued = 0
    }

    /// Shared with the queue's callbacks, which cannot capture the voice before it exists.
    private final class HandlerBox: Sendable {
        let state = Mutex<Handlers>(Handlers())
    }

    init(format: AudioFormat, engine: QueueEngine) throws {
        let box = self.box
        queue = try BufferQueue(format: format, engine: engine) { _, buffer in
            let consumed = box.state.withLock { h in
                h.queued -= 1
                return h.consumed
            }
            if let pcm = buffer.pcmBuffer { consumed?(pcm) }
        }
        queue.setRunningListener { running in
            guard !running else { return }
            let finished = box.state.withLock { $0.finished }
            finished?(.playedOut)
        }
    }

    public var format: AudioFormat { queue.format }
    public var queuedBufferCount: Int { box.state.withLock { $0.queued } }
    public var isPlaying: Bool { queue.isRunning }
    public var framesPlayed: Int { queue.framesPlayed }
    public var underrunCount: Int { queue.underrunCount }

    public var outputLatency: Double {
        let device = queue.engine.device
        return Double(device.queuedFrames > 0 ? device.queuedFrames : device.periodFrames * device.periodCount)
            / queue.engine.format.sampleRate
    }

    public var state: VoiceState {
        switch queue.runState {
        case .running, .draining: .playing
        case .pausing, .paused: .paused
        case .stopping, .stopped: .stopped
        }
    }

    public var isDraining: Bool { queue.isDrainStopping }

    public func addBufferConsumedHandler(_ handler: @escaping @Sendable (PCMBuffer) -> Void) -> VoiceHandlerToken {
        box.state.withLock { $0.consumed = handler }
        return VoiceHandlerToken(rawValue: 1)
    }

    public func addFinishedHandler(_ handler: @escaping @Sendable (VoiceFinish) -> Void) -> VoiceHandlerToken {
        box.state.withLock { $0.finished = handler }
        return VoiceHandlerToken(rawValue: 2)
    }

    public func removeHandler(_ token: VoiceHandlerToken) {
        box.state.withLock { h in
            if token.rawValue == 1 { h.consumed = nil }
            if token.rawValue == 2 { h.finished = nil }
        }
    }

    public func enqueue(_ buffer: PCMBuffer) throws {
        box.state.withLock { $0.queued += 1 }
        do { try queue.enqueue(buffer) } catch {
            box.state.withLock { $0.queued -= 1 }
            throw error
        }
    }

    public func start(atHostTime hostTime: UInt64?) throws { try queue.start(atHostTime: hostTime) }
    public func pause() throws { try queue.pause() }
    public func stop(immediately: Bool) throws { try queue.stop(immediately: immediately) }
    public func setVolume(_ volume: Float, rampSeconds: Double) throws { try queue.setVolume(volume, rampSeconds: rampSeconds) }
    public func setPan(_ pan: Float) throws { try queue.setPan(pan) }
    public func setPlaybackRate(_ rate: Float) throws { try queue.setPlaybackRate(rate) }
    public func dispose() { queue.dispose() }
}
