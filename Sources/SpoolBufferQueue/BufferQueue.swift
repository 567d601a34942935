import Foundation
import SpoolCore
import SpoolOutput
import Synchronization

/// A callback-driven queue of buffers, the Audio Queue Services model: the program
/// allocates a few buffers, fills and enqueues them, and the queue hands each back through
/// the callback once it has played, to be filled again.
///
/// Corresponds to an output `AudioQueueRef`: `AudioQueueNewOutput`, `AudioQueueAllocateBuffer`,
/// `AudioQueueEnqueueBuffer(WithParameters)`, `AudioQueuePrime`, `AudioQueueStart`,
/// `AudioQueuePause`, `AudioQueueStop`, `AudioQueueFlush`, `AudioQueueReset`,
/// `AudioQueueDispose`, `AudioQueueGetCurrentTime`, and the volume, pan, play-rate and
/// level-meter parameters.
public final class BufferQueue: Sendable {
    /// Called once for each buffer the queue has finished with (played, or returned by
    /// `stop(immediately: true)` or `reset()`). Never called on the render thread.
    public typealias OutputCallback = @Sendable (BufferQueue, AudioQueueBuffer) -> Void

    /// The format of the queue's buffers.
    public let format: AudioFormat
    /// The engine that mixes this queue.
    public let engine: QueueEngine

    let slot: QueueSlot
    /// The engine slot this queue occupies; −1 once released.
    private let index = Atomic<Int>(-1)
    private let callback: OutputCallback
    private let callbackQueue: DispatchQueue?
    private let state = Locked<ControlState>(ControlState())
    /// One thread at a time hands finished buffers to the program, in order.
    private let delivery = DeliveryTurn()

    struct ControlState {
        var disposed = false
        /// Buffers the program allocated, by identity.
        var allocated: [Int32: AudioQueueBuffer] = [:]
        /// Buffers now with the render thread, by identity.
        var inFlight: [Int32: AudioQueueBuffer] = [:]
        var freeIdentifiers = Array((0..<Int32(QueueSlot.maximumBuffers)).reversed())
        var commandsSent = 0
        /// Buffers pushed to the render thread so far.
        var enqueued = 0
        /// The transport as the program has set it; the render thread follows it command by
        /// command, and reports back only a stop it made by itself (a played-out drain).
        var transport = VoiceState.stopped
        /// `stop(immediately: false)` marked the end of the input.
        var endMarked = false
        /// The command that began the current play (a start from stopped): a played-out
        /// report stamped before it belongs to an earlier one.
        var cycleStart = 0
        var pendingReset = false
        var runningListener: (@Sendable (Bool) -> Void)?
        var stopObserver: (@Sendable (VoiceFinish) -> Void)?
        var positionObserver: (@Sendable (Int) -> Void)?
        var lastReportedRunning = false
        var volume: Float = 1
        var pan: Float = 0
        var playbackRate: Float = 1
    }

    /// How its audio is converted to the device rate.
    public var resamplingQuality: ResamplingQuality { slot.quality }

    /// Changes how its audio is converted, also while it plays: the render thread moves to the
    /// new level's converters through a 20 ms crossfade (out of the fixed-ratio lane into the
    /// varispeed one and back), so nothing clicks and no frame is lost or repeated.
    /// - Throws: `.invalidState` after `dispose()`.
    public func setResamplingQuality(_ quality: ResamplingQuality) throws {
        try state.withLock { s in
            guard !s.disposed else { throw AudioError(.invalidState, "the queue was disposed") }
        }
        slot.setQuality(quality)
    }

    /// Makes a queue on `engine`.
    /// - Parameters:
    ///   - format: Rate and channels of the buffers the program will enqueue.
    ///   - engine: The engine that mixes it into a device.
    ///   - quality: How its audio is converted to the device rate; `nil` for the engine's
    ///     `resamplingQuality`.
    ///   - callbackQueue: Where to run `callback`; `nil` runs it on the engine's callback thread.
    ///   - callback: Called once for each buffer the queue has finished with.
    /// - Throws: `AudioError.Code.invalidState` when the engine mixes its maximum of queues,
    ///   or a rate-converter error.
    /// The corresponding Apple call is `AudioQueueNewOutput`.
    public init(format: AudioFormat, engine: QueueEngine, quality: ResamplingQuality? = nil,
                callbackQueue: DispatchQueue? = nil, callback: @escaping OutputCallback) throws {
        self.format = format
        self.engine = engine
        self.callback = callback
        self.callbackQueue = callbackQueue
        slot = try QueueSlot(format: format, deviceFormat: engine.format,
                             maximumFrames: max(engine.device.periodFrames, 4096), periodFrames: engine.device.periodFrames,
                             quality: quality ?? engine.resamplingQuality)
        index.store(try engine.attach(self, slot: slot), ordering: .releasing)
    }

    deinit {
        // The render side may be reading one of this queue's buffers right now, and the
        // buffers go with the state once this returns: unless `dispose()` already did, have
        // the render side carry out a dispose first (at its next period on a running
        // real-time device, waited for; otherwise here, under the offline gate), so that
        // nothing it reads afterwards belongs to this queue.
        let target = state.withLock { s -> Int? in
            guard !s.disposed else { return nil }
            s.disposed = true
            return push(.dispose, &s)
        }
        if let target {
            if engine.isRealTime, engine.device.isRunning {
                let period = Double(engine.device.periodFrames) / engine.format.sampleRate
                let deadline = HostTime.now() + HostTime.nanoseconds(4 * period * Double(engine.device.periodCount) + 0.05)
                while slot.commandsDone.load(ordering: .acquiring) < target, HostTime.now() < deadline { usleep(200) }
            } else {
                engine.offlineGate.withLock { _ in _ = slot.processCommands() }
            }
        }
        releaseSlot()
    }

    private func releaseSlot() {
        let claimed = index.exchange(-1, ordering: .acquiringAndReleasing)
        if claimed >= 0 { engine.detach(index: claimed) }
    }

    // MARK: Buffers

    /// Allocates a buffer for this queue.
    /// - Parameter frameCapacity: Frames it can hold, 1…1 048 576.
    /// - Returns: A zeroed buffer.
    /// - Throws: `.invalidParameter` for a bad capacity, `.invalidState` after `dispose()` or
    ///   when the queue already has its maximum of buffers.
    /// The corresponding Apple call is `AudioQueueAllocateBuffer`.
    public func allocateBuffer(frameCapacity: Int) throws -> AudioQueueBuffer {
        guard (1...1_048_576).contains(frameCapacity) else {
            throw AudioError(.invalidParameter, "buffer capacity \(frameCapacity) frames is outside 1...1048576")
        }
        return try state.withLock { s in
            try checkUsable(s)
            guard let identifier = s.freeIdentifiers.popLast() else {
                throw AudioError(.invalidState, "the queue already has \(QueueSlot.maximumBuffers) buffers")
            }
            let buffer = AudioQueueBuffer(capacity: frameCapacity, format: format, identifier: identifier,
                                          queue: ObjectIdentifier(self))
            s.allocated[identifier] = buffer
            return buffer
        }
    }

    /// Gives a buffer back for good. A buffer that is enqueued cannot be freed.
    /// - Throws: `.invalidParameter` for a buffer of another queue, `.invalidState` while it is enqueued.
    /// The corresponding Apple call is `AudioQueueFreeBuffer`.
    public func freeBuffer(_ buffer: AudioQueueBuffer) throws {
        try state.withLock { s in
            guard buffer.queueIdentifier == ObjectIdentifier(self), s.allocated[buffer.identifier] === buffer else {
                throw AudioError(.invalidParameter, "the buffer belongs to another queue")
            }
            guard s.inFlight[buffer.identifier] == nil else {
                throw AudioError(.invalidState, "the buffer is enqueued; wait for its callback")
            }
            s.allocated[buffer.identifier] = nil
            s.freeIdentifiers.append(buffer.identifier)
        }
    }

    /// Queues a filled buffer to play after those already queued.
    /// - Parameters:
    ///   - buffer: One of this queue's buffers, with `frameCount` set.
    ///   - trimFramesAtStart: Frames to skip at its start (encoder delay, for gapless joins).
    ///   - trimFramesAtEnd: Frames to skip at its end (encoder padding).
    ///   - startSampleTime: Where on the queue's timeline it should start; silence fills the
    ///     gap. `nil` plays it right after the previous buffer.
    /// - Throws: `.invalidParameter` for a buffer of another queue, a frame count above its
    ///   capacity, or trims that leave nothing; `.invalidState` when it is already enqueued,
    ///   while a stop or reset is under way, or after `dispose()`.
    /// The corresponding Apple call is `AudioQueueEnqueueBufferWithParameters`.
    public func enqueue(_ buffer: AudioQueueBuffer, trimFramesAtStart: Int = 0, trimFramesAtEnd: Int = 0,
                        startSampleTime: Double? = nil) throws {
        guard buffer.queueIdentifier == ObjectIdentifier(self) else {
            throw AudioError(.invalidParameter, "the buffer belongs to another queue")
        }
        guard (0...buffer.frameCapacity).contains(buffer.frameCount) else {
            throw AudioError(.invalidParameter, "frameCount \(buffer.frameCount) is outside the buffer's capacity 0...\(buffer.frameCapacity)")
        }
        try state.withLock { s in
            try checkUsable(s)
            guard s.allocated[buffer.identifier] === buffer else {
                throw AudioError(.invalidParameter, "the buffer was freed or belongs to another queue")
            }
            try submit(buffer, trimStart: trimFramesAtStart, trimEnd: trimFramesAtEnd, startSampleTime: startSampleTime, state: &s)
        }
    }

    /// Queues decoded audio without copying it: the render thread reads the `PCMBuffer` in
    /// place. The callback receives an `AudioQueueBuffer` whose `pcmBuffer` is this buffer.
    /// - Parameters:
    ///   - pcm: Audio in the queue's format.
    ///   - trimFramesAtStart: Frames to skip at its start.
    ///   - trimFramesAtEnd: Frames to skip at its end.
    ///   - startSampleTime: Where on the timeline it should start, or `nil`.
    /// - Throws: `.invalidParameter` for another format or trims that leave nothing;
    ///   `.invalidState` as for `enqueue(_:trimFramesAtStart:trimFramesAtEnd:startSampleTime:)`.
    public func enqueue(_ pcm: PCMBuffer, trimFramesAtStart: Int = 0, trimFramesAtEnd: Int = 0,
                        startSampleTime: Double? = nil) throws {
        guard pcm.format == format else {
            throw AudioError(.invalidParameter, "a \(pcm.format) buffer cannot be enqueued on a \(format) queue")
        }
        try state.withLock { s in
            try checkUsable(s)
            guard let identifier = s.freeIdentifiers.popLast() else {
                throw AudioError(.invalidState, "the queue already holds \(QueueSlot.maximumBuffers) buffers")
            }
            let wrapper = AudioQueueBuffer(pcm: pcm, identifier: identifier, queue: ObjectIdentifier(self))
            do {
                try submit(wrapper, trimStart: trimFramesAtStart, trimEnd: trimFramesAtEnd, startSampleTime: startSampleTime, state: &s)
            } catch {
                s.freeIdentifiers.append(identifier)
                throw error
            }
        }
    }

    private func submit(_ buffer: AudioQueueBuffer, trimStart: Int, trimEnd: Int, startSampleTime: Double?,
                        state s: inout ControlState) throws {
        guard s.inFlight[buffer.identifier] == nil else {
            throw AudioError(.invalidState, "the buffer is already enqueued")
        }
        guard !s.endMarked else {
            throw AudioError(.invalidState, "the queue is playing out its end (stop(immediately: false)); enqueue after it has stopped")
        }
        guard trimStart >= 0, trimEnd >= 0, trimStart + trimEnd < buffer.frameCount else {
            throw AudioError(.invalidParameter,
                "trims of \(trimStart) + \(trimEnd) frames leave nothing of a \(buffer.frameCount)-frame buffer")
        }
        if let startSampleTime, !(startSampleTime >= 0 && startSampleTime.isFinite) {
            throw AudioError(.invalidParameter, "start sample time \(startSampleTime) must be a finite time ≥ 0")
        }
        guard !s.pendingReset else {
            throw AudioError(.invalidState, "the queue is resetting; enqueue after reset returns its buffers")
        }
        let frames = buffer.frameCount - trimStart - trimEnd
        slot.descriptors[Int(buffer.identifier)] = BufferDescriptor(
            address: buffer.readAddress, frames: frames, firstFrame: trimStart, scheduledStart: startSampleTime ?? -1)
        s.inFlight[buffer.identifier] = buffer
        slot.queuedFrames.add(frames, ordering: .relaxed)
        s.enqueued += 1
        slot.incoming.push(buffer.identifier)
    }

    private func checkUsable(_ s: ControlState) throws {
        guard !s.disposed else { throw AudioError(.invalidState, "the queue was disposed") }
    }

    // MARK: Transport

    /// Prepares queued audio so that `start` plays at once, and tells how much is ready.
    /// - Parameter frames: Frames wanted ready; 0 asks only for the count.
    /// - Returns: Frames queued and ready, at most `frames` when `frames` > 0.
    /// - Throws: `.invalidState` after `dispose()`.
    /// The corresponding Apple call is `AudioQueuePrime`.
    public func prime(frames: Int = 0) throws -> Int {
        try state.withLock { try checkUsable($0) }
        let ready = slot.queuedFrames.load(ordering: .acquiring)
        return frames > 0 ? min(frames, ready) : ready
    }

    /// Starts (or resumes) playback, now or at a host time. A start from stopped plays from
    /// the first queued frame; a paused queue resumes on the frame it paused on (fading in
    /// over 5 ms); a playing queue carries on (the call does nothing). A queue whose end was
    /// marked (`stop(immediately: false)`) plays out and stops.
    /// - Parameter hostTime: The `HostTime` at which the first frame should be heard; `nil`
    ///   for as soon as possible.
    /// - Throws: `.invalidState` after `dispose()`; the device's error when the engine cannot start it.
    /// The corresponding Apple call is `AudioQueueStart`.
    public func start(atHostTime hostTime: UInt64? = nil) throws {
        try state.withLock { try checkUsable($0) }
        try engine.start()
        try state.withLock { s in
            try checkUsable(s)
            guard s.transport != .playing else { return }
            // A start from stopped measures its first frame and counts its frames afresh (the
            // render thread also clears both, but a reader must not see the previous start's
            // values in between).
            if s.transport == .stopped {
                slot.firstFrameHostTime.store(0, ordering: .releasing)
                slot.framesPlayed.store(0, ordering: .releasing)
            }
            slot.startHostTime.store(hostTime ?? 0, ordering: .releasing)
            // Marked before the command is pushed: a rewind pass that sees the mark and not
            // yet the command leaves the queue to the next period, as a start without one.
            if engine.rewindsOnStart { slot.rewindPending.store(max(1, HostTime.now()), ordering: .releasing) }
            let command = push(.start, &s)
            if s.transport == .stopped { s.cycleStart = command }
            s.transport = .playing
        }
        applySent()
        if slot.rewindPending.load(ordering: .acquiring) != 0 { engine.device.requestRewind() }
        reportRunning()
    }

    /// Pauses playback; `start()` resumes from the same frame. Fades out over 5 ms, whose
    /// frames are read when the render side carries the pause out, so `framesPlayed` holds
    /// the frame the fade ends on from when this returns (offline too, before the fade is
    /// rendered); a start scheduled for later is cancelled. Does nothing unless playing.
    /// - Throws: `.invalidState` after `dispose()`.
    /// The corresponding Apple call is `AudioQueuePause`.
    public func pause() throws {
        let sent = try state.withLock { s -> Bool in
            try checkUsable(s)
            guard s.transport == .playing else { return false }
            push(.pause, &s)
            s.transport = .paused
            return true
        }
        guard sent else { return }
        applySent()
        waitForRenderThread()
        reportRunning()
    }

    /// Stops playback.
    /// - Parameter immediately: `true` fades a playing queue out over 5 ms (a paused one stops
    ///   at once), then hands every buffer queued before the call back through the callback;
    ///   on a real-time device that has happened when the call returns, offline the next
    ///   render does it. `false` marks the end: what is queued plays out, then the queue
    ///   stops (`isRunning` turns false); a paused or stopped queue plays out once started.
    /// - Throws: `.invalidState` after `dispose()`.
    /// The corresponding Apple call is `AudioQueueStop`.
    public func stop(immediately: Bool) throws {
        let sent = try state.withLock { s -> Bool in
            try checkUsable(s)
            if immediately {
                slot.returnBoundary.store(s.enqueued, ordering: .releasing)
                push(.stopImmediately, &s)
                s.transport = .stopped
                s.endMarked = false
                return true
            }
            guard !s.endMarked else { return false }
            s.endMarked = true
            push(.stopWhenDrained, &s)
            return true
        }
        guard sent else { return }
        applySent()
        if immediately { waitForRenderThread() }
        reportRunning()
    }

    /// Marks the end of what will be enqueued: all queued audio plays, including a last
    /// partial buffer, and the queue stops when it has (`isRunning` turns false). Buffers
    /// return through the callback as they play.
    /// - Throws: `.invalidState` after `dispose()`.
    /// The corresponding Apple call is `AudioQueueFlush` followed by a non-immediate stop.
    public func flush() throws {
        try stop(immediately: false)
    }

    /// Drops everything queued and hands every buffer back through the callback at once;
    /// the queue keeps running and plays what is enqueued next.
    /// - Throws: `.invalidState` after `dispose()`.
    /// The corresponding Apple call is `AudioQueueReset`.
    public func reset() throws {
        try state.withLock { s in
            try checkUsable(s)
            s.pendingReset = true
            push(.reset, &s)
        }
        applySent()
        waitForRenderThread()
        state.withLock { $0.pendingReset = false }
    }

    /// Stops at once (no fade) and releases the queue; later calls throw `.invalidState`.
    /// Every buffer still queued is handed back through the callback before it returns.
    /// The corresponding Apple call is `AudioQueueDispose`.
    public func dispose() {
        let already = state.withLock { s in
            defer {
                if !s.disposed {
                    push(.dispose, &s)
                    s.transport = .stopped
                    s.endMarked = false
                }
                s.disposed = true
            }
            return s.disposed
        }
        guard !already else { return }
        applySent()
        waitForRenderThread()
        deliverCompletions()
        releaseSlot()
        reportRunning()
    }

    /// Pushes a command to the render thread. With the state lock held, so commands keep
    /// the order of the calls that sent them.
    /// - Returns: The command's number (1 for the first).
    @discardableResult
    private func push(_ command: QueueCommand, _ s: inout ControlState) -> Int {
        s.commandsSent += 1
        slot.commands.push(command.rawValue)
        return s.commandsSent
    }

    /// Has the commands sent carried out: now, offline or while the device is stopped; at the
    /// render thread's next period otherwise.
    private func applySent() {
        if !engine.applyNow(slot) { engine.wakeCallbacks() }
    }

    /// On a running real-time device, waits (two periods at most, plus the fade) until
    /// the render thread has carried out every command sent so far, then hands back what it
    /// returned.
    private func waitForRenderThread() {
        if engine.isRealTime, engine.device.isRunning {
            let target = state.withLock { $0.commandsSent }
            let period = Double(engine.device.periodFrames) / engine.format.sampleRate
            let deadline = HostTime.now() + HostTime.nanoseconds(4 * period * Double(engine.device.periodCount) + 0.05)
            while slot.commandsDone.load(ordering: .acquiring) < target || isFading {
                if HostTime.now() > deadline { break }
                usleep(500)
            }
        }
        deliverCompletions(waitingForOthers: true)
    }

    private var isFading: Bool {
        let s = slot.state
        return s == .pausing || s == .stopping
    }

    // MARK: State and time

    /// Whether the queue is playing (started, not paused, not stopped or drained).
    /// The corresponding Apple property is `kAudioQueueProperty_IsRunning`.
    public var isRunning: Bool { state.withLock { $0.transport == .playing } }

    /// The transport as the seam's voice reports it.
    var transport: VoiceState { state.withLock { $0.transport } }

    /// Whether the end of the input was marked (`stop(immediately: false)`) and the queue
    /// has not yet stopped.
    var isEndMarked: Bool { state.withLock { $0.endMarked } }

    /// Sets what the seam's voice hears of each stop of a started queue (the voice's finished
    /// handlers), apart from the program's running listener. Runs where the callback runs.
    func setStopObserver(_ observer: (@Sendable (VoiceFinish) -> Void)?) {
        state.withLock { $0.stopObserver = observer }
    }

    /// Sets what the seam's voice hears of the position: called with `framesPlayed` at each
    /// delivery once it has reached `setPositionFrame(_:)`'s frame, before the buffers and
    /// stops of that delivery. Runs where the callback runs.
    func setPositionObserver(_ observer: (@Sendable (Int) -> Void)?) {
        state.withLock { $0.positionObserver = observer }
    }

    /// Sets the `framesPlayed` the position observer waits for; nil for none.
    func setPositionFrame(_ frame: Int?) {
        slot.positionFrame.store(frame ?? .max, ordering: .relaxed)
    }

    /// Sets what to call when `isRunning` changes; it runs where the callback runs.
    /// The corresponding Apple call is `AudioQueueAddPropertyListener`.
    public func setRunningListener(_ listener: (@Sendable (Bool) -> Void)?) {
        state.withLock { $0.runningListener = listener }
    }

    /// The queue's timeline now: the sample time being heard at this moment and its host
    /// time, and whether the timeline broke (an underrun) since the last call.
    /// The corresponding Apple call is `AudioQueueGetCurrentTime`.
    public var currentTime: QueueTimestamp {
        let (sample, host) = slot.published.read()
        let discontinuity = slot.discontinuity.exchange(false, ordering: .acquiringAndReleasing)
        guard engine.isRealTime, isRunning else {
            return QueueTimestamp(sampleTime: renderedSampleTime, hostTime: host, isDiscontinuity: discontinuity)
        }
        // The last period began at `sample` when heard at `host`; the clock runs on since.
        let now = HostTime.now()
        let elapsed = max(0, HostTime.seconds(from: host, to: now)) * format.sampleRate
        let heard = now >= host ? sample + elapsed : sample
        return QueueTimestamp(sampleTime: min(heard, renderedSampleTime), hostTime: now, isDiscontinuity: discontinuity)
    }

    /// Sample time rendered so far (ahead of what is heard by the device's buffer).
    var renderedSampleTime: Double { Double(bitPattern: slot.renderedTimeline.load(ordering: .acquiring)) }

    /// The `HostTime` at which the first frame after the latest start from stopped is heard,
    /// once the render thread has rendered it; `nil` before. `start` time subtracted from it
    /// is the queue's start latency.
    public var firstFrameHostTime: UInt64? {
        let t = slot.firstFrameHostTime.load(ordering: .acquiring)
        return t == 0 ? nil : t
    }

    /// Frames of enqueued audio played so far since `start` (silence excluded).
    public var framesPlayed: Int { slot.framesPlayed.load(ordering: .acquiring) }

    /// Times the queue ran dry while playing.
    public var underrunCount: Int { slot.underruns.load(ordering: .acquiring) }

    /// Frames enqueued and not yet played.
    public var queuedFrames: Int { slot.queuedFrames.load(ordering: .acquiring) }

    // MARK: Parameters

    /// Gain, 0…1 (linear), ramped over 5 ms or the ramp set with `setVolume(_:rampSeconds:)`.
    /// The corresponding Apple parameter is `kAudioQueueParam_Volume`.
    public var volume: Float { state.withLock { $0.volume } }

    /// Sets the gain, reaching it linearly over `rampSeconds` (at least 5 ms, so nothing clicks).
    /// - Throws: `.invalidParameter` outside 0…1 or for a negative ramp; `.invalidState` after `dispose()`.
    /// The corresponding Apple parameters are `kAudioQueueParam_Volume` and
    /// `kAudioQueueParam_VolumeRampTime`.
    public func setVolume(_ volume: Float, rampSeconds: Double = 0) throws {
        try VoiceParameters.checkVolume(volume, rampSeconds: rampSeconds)
        try state.withLock { s in
            try checkUsable(s)
            s.volume = volume
        }
        slot.volumeRampFrames.store(Int(saturating: rampSeconds * engine.format.sampleRate), ordering: .relaxed)
        slot.volumeBits.store(volume.bitPattern, ordering: .releasing)
    }

    /// Stereo position, −1 (left) … 1 (right). A mono queue follows the constant-power law
    /// of `PanLaw.mono`; a stereo queue is balanced (`PanLaw.stereo`).
    /// The corresponding Apple parameter is `kAudioQueueParam_Pan`.
    public var pan: Float { state.withLock { $0.pan } }

    /// Sets the stereo position, ramped over 5 ms (at once before `start`).
    /// - Throws: `.invalidParameter` outside −1…1; `.invalidState` after `dispose()`.
    public func setPan(_ pan: Float) throws {
        try VoiceParameters.checkPan(pan)
        try state.withLock { s in
            try checkUsable(s)
            s.pan = pan
        }
        slot.panBits.store(pan.bitPattern, ordering: .releasing)
    }

    /// Playback rate, 0.5…2: varispeed, so pitch follows speed.
    /// The corresponding Apple parameter is `kAudioQueueParam_PlayRate` (with
    /// `kAudioQueueProperty_EnableTimePitch` set to varispeed).
    public var playbackRate: Float { state.withLock { $0.playbackRate } }

    /// Sets the playback rate.
    /// - Throws: `.invalidParameter` outside 0.5…2; `.invalidState` after `dispose()`.
    public func setPlaybackRate(_ rate: Float) throws {
        try VoiceParameters.checkPlaybackRate(rate)
        try state.withLock { s in
            try checkUsable(s)
            s.playbackRate = rate
        }
        slot.rateBits.store(rate.bitPattern, ordering: .releasing)
    }

    /// Whether the render thread measures levels. Off by default.
    /// The corresponding Apple property is `kAudioQueueProperty_EnableLevelMetering`.
    public var isMeteringEnabled: Bool {
        get { slot.meteringEnabled.load(ordering: .relaxed) }
        set { slot.meteringEnabled.store(newValue, ordering: .relaxed) }
    }

    /// Peak and average (RMS) power of the last period, per channel, in dB full scale
    /// (−120 for silence), after volume.
    /// The corresponding Apple property is `kAudioQueueProperty_CurrentLevelMeterDB`.
    public var levels: [ChannelLevel] {
        (0..<format.channelCount).map {
            ChannelLevel(averagePower: Float(bitPattern: slot.averageBits[$0].value.load(ordering: .relaxed)),
                         peakPower: Float(bitPattern: slot.peakBits[$0].value.load(ordering: .relaxed)))
        }
    }

    // MARK: Callbacks

    /// What the render side handed back, in order: a buffer, or a stop.
    private enum Delivery {
        case buffer(AudioQueueBuffer)
        case stop(VoiceFinish, (@Sendable (VoiceFinish) -> Void)?)
    }

    /// Hands finished buffers to the program and reports stops and `isRunning` changes, in
    /// the order the render side produced them. Runs on the engine's callback thread, on
    /// the rendering caller's thread offline, or on a control call's thread; one thread at a
    /// time. Called again from inside a callback it returns at once (the outer call goes on
    /// delivering); `waitingForOthers` makes a control call wait for another thread's
    /// delivery under way and then deliver what is left itself.
    func deliverCompletions(waitingForOthers: Bool = false) {
        guard delivery.deliver(waitingForOthers: waitingForOthers, deliverPending) else { return }
        reportRunning()
    }

    private func deliverPending() {
        var items: [Delivery] = []
        while let identifier = slot.completed.pop() {
            if identifier < 0 {
                let stamp = Int(slot.eventStamps.pop() ?? 0)
                let finish: VoiceFinish = switch QueueStopEvent(rawValue: identifier) {
                case .playedOut: .playedOut
                case .disposed: .disposed
                case .stopped, nil: .stopped
                }
                let observer = state.withLock { s -> (@Sendable (VoiceFinish) -> Void)? in
                    // A played-out drain ends the play it belongs to; a later start began another.
                    if case .playedOut = finish, stamp >= s.cycleStart, s.transport != .stopped {
                        s.transport = .stopped
                        s.endMarked = false
                    }
                    return s.stopObserver
                }
                items.append(.stop(finish, observer))
                continue
            }
            let consumedAt = slot.completedAt[Int(identifier)]
            slot.completedAt[Int(identifier)] = 0
            let buffer: AudioQueueBuffer? = state.withLock { s in
                guard let buffer = s.inFlight.removeValue(forKey: identifier) else { return nil }
                buffer.consumedHostTime = consumedAt
                if buffer.pcmBuffer != nil { s.freeIdentifiers.append(identifier) }
                return buffer
            }
            if let buffer { items.append(.buffer(buffer)) }
        }
        // Read after the items: the render side counts frames before it reports what they
        // finished, so a position reached before a stop is told before it.
        let played = slot.framesPlayed.load(ordering: .acquiring)
        if played >= slot.positionFrame.load(ordering: .relaxed), let observer = state.withLock({ $0.positionObserver }) {
            if let callbackQueue { callbackQueue.sync { observer(played) } } else { observer(played) }
        }
        for item in items {
            let call: @Sendable () -> Void
            switch item {
            case .buffer(let buffer): call = { self.callback(self, buffer) }
            case .stop(let finish, let observer):
                guard let observer else { continue }
                call = { observer(finish) }
            }
            if let callbackQueue { callbackQueue.sync(execute: call) } else { call() }
        }
    }

    private func reportRunning() {
        let listener: (@Sendable (Bool) -> Void)?
        let running: Bool
        (listener, running) = state.withLock { s in
            let running = s.transport == .playing
            guard s.lastReportedRunning != running else { return (nil, running) }
            s.lastReportedRunning = running
            return (s.runningListener, running)
        }
        guard let listener else { return }
        if let callbackQueue { callbackQueue.async { listener(running) } } else { listener(running) }
    }
}

/// Peak and average power of one channel, in dB full scale.
/// The corresponding Apple type is `AudioQueueLevelMeterState`.
public struct ChannelLevel: Sendable, Equatable {
    /// RMS power over the last period.
    public var averagePower: Float
    /// Highest absolute sample over the last period.
    public var peakPower: Float
}
