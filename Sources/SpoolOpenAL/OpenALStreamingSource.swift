internal import COpenAL
import Foundation
import SpoolCore
import Synchronization

/// An OpenAL source fed with a queue of buffers, the OpenAL streaming model: the program
/// enqueues `PCMBuffer`s, each is copied into one of the source's OpenAL buffers and queued
/// (`alBufferData`, `alSourceQueueBuffers`), and once OpenAL has played it the pump unqueues
/// it (`AL_BUFFERS_PROCESSED`, `alSourceUnqueueBuffers`) and hands the `PCMBuffer` back
/// through the consumed handler, on the pump thread (or a loopback device's rendering thread),
/// never on OpenAL's mixer thread.
///
/// It is the OpenAL back-end's `PlaybackVoice`: a `VoiceFeeder` drives it exactly as it
/// drives a `BufferQueue`.
///
/// **Underruns.** When the source plays out everything queued before more arrives, OpenAL
/// stops it (`AL_STOPPED`) and from then on counts every buffer on it as processed, even
/// ones queued later. The pump notices, counts an underrun, unqueues the buffers that played
/// and, once there is audio again, starts the source (`alSourcePlay`) — unqueueing first, as
/// OpenAL Soft's maintainer advises, so that nothing plays twice or is handed back unplayed.
///
/// **Position.** `framesPlayed` is the frames of the buffers unqueued since `start` plus
/// OpenAL's `AL_SAMPLE_OFFSET` into those still queued.
///
/// **Fades.** OpenAL Soft 1.19 stops and pauses a source at once, mid-waveform. So `pause()`
/// and `stop(immediately: true)` first set its gain to 0, which OpenAL glides over one mixer
/// update, and pause or stop it at the next pump pass after that update has been mixed.
public final class OpenALStreamingSource: PlaybackVoice, SourceOwner, Sendable {
    /// The format of the buffers it takes.
    public let format: AudioFormat
    /// Its claim on a source when they run out (see `OpenALDevice.sourceLimit`): higher keeps its source.
    public let priority: Int
    /// The device it plays on.
    public let device: OpenALDevice

    /// Most OpenAL buffers one source has queued at a time. Buffers enqueued beyond this wait
    /// in Spool, and are copied into OpenAL as queued ones play.
    public static let maximumQueuedALBuffers = 16

    let locked: Mutex<State>

    /// A buffer queued on the OpenAL source: the OpenAL buffer holding its copy, and the
    /// `PCMBuffer` to hand back.
    struct Entry: Sendable {
        let name: UInt32
        let buffer: PCMBuffer
    }

    enum Transport: Sendable { case stopped, playing, paused }

    /// A fade-out under way before a pause or a stop: done once the device clock reaches
    /// `until` nanoseconds, or, on a device that mixes in real time, once the host clock
    /// passes `hostDeadline` (a mixer that has stopped asking for audio advances no clock,
    /// and plays nothing that could click).
    struct Fade: Sendable {
        var stopping: Bool
        var until: Int64
        var hostDeadline: UInt64?

        func isOver(clock: Int64) -> Bool {
            clock >= until || hostDeadline.map { HostTime.now() >= $0 } ?? false
        }
    }

    /// The voice's state; its lock is taken only inside a device batch, or alone.
    struct State: Sendable {
        var source: UInt32?
        /// Why the voice can no longer be used: disposed, stolen, device closed or lost.
        var ended: AudioError?
        var transport: Transport = .stopped
        /// Playing out what is queued, then stopping (`stop(immediately: false)`).
        var draining = false
        var scheduledStart: UInt64?
        var fade: Fade?
        /// Spool last told OpenAL to play the source, and has not seen it stop since.
        var playingInAL = false
        /// Playing, but OpenAL has nothing queued: starts as soon as a buffer arrives.
        var starved = false
        /// Queued on the OpenAL source, oldest first.
        var queued: [Entry] = []
        /// Enqueued, waiting for a free OpenAL buffer.
        var pending: [PCMBuffer] = []
        /// Consumed (or dropped), to hand back at the next delivery.
        var handBack: [PCMBuffer] = []
        var freeNames: [UInt32] = []
        var ownedNames: [UInt32] = []
        var playedFrames = 0
        var underruns = 0
        var finishDue = false
        var parameters: SourceParameters
        var upload = SampleUpload()
        var onConsumed: (@Sendable (PCMBuffer) -> Void)?
        var onFinished: (@Sendable (VoiceFinish) -> Void)?
    }

    /// Makes a streaming source on `device`, taking one of its sources (`alGenSources`).
    /// - Parameters:
    ///   - device: The device to play on.
    ///   - format: The format of the buffers it will take: any channel count (more than two
    ///     are folded down to stereo), a whole-number rate.
    ///   - priority: Its claim on a source when they run out; higher keeps its source.
    /// - Throws: `.invalidParameter` for a rate OpenAL cannot take; `.invalidState` when
    ///   every source plays a voice of higher priority, or the device is closed;
    ///   `.deviceLost` when it is lost.
    public init(device: OpenALDevice, format: AudioFormat, priority: Int = 0) throws {
        guard format.sampleRate == format.sampleRate.rounded(), format.sampleRate <= 384_000 else {
            throw AudioError(.invalidParameter, "OpenAL takes whole-number sample rates up to 384000 Hz, not \(format.sampleRate) Hz")
        }
        self.device = device
        self.format = format
        self.priority = priority
        locked = Mutex(State(parameters: SourceParameters(channelCount: format.channelCount)))
        let deliveries = try device.perform { s -> Deliveries in
            var deliveries = Deliveries()
            let source = try device.acquireSource(priority: priority, owner: self, &s, &deliveries)
            locked.withLock { st in
                st.source = source
                st.parameters.applyAll(to: source)
            }
            try OpenALStatus.al().check("setting up an OpenAL source for \(format)")
            return deliveries
        }
        deliveries.run()
    }

    deinit {
        let (source, names) = locked.withLock { ($0.source, $0.ownedNames) }
        if source != nil || !names.isEmpty { device.retire(source: source, buffers: names) }
    }

    // MARK: Handlers

    /// Sets what to call with each buffer once OpenAL has played it (or a stop dropped it),
    /// on the pump thread or a loopback device's rendering thread.
    public func setBufferConsumedHandler(_ handler: (@Sendable (PCMBuffer) -> Void)?) {
        locked.withLock { $0.onConsumed = handler }
    }

    /// Sets what to call when the voice stops by itself: everything played after
    /// `stop(immediately: false)`, or its source was stolen, or the device closed or went away.
    public func setFinishedHandler(_ handler: (@Sendable (VoiceFinish) -> Void)?) {
        locked.withLock { $0.onFinished = handler }
    }

    public var state: VoiceState {
        switch locked.withLock({ $0.transport }) {
        case .stopped: .stopped
        case .playing: .playing
        case .paused: .paused
        }
    }

    public var isDraining: Bool { locked.withLock { $0.draining } }

    public func addBufferConsumedHandler(_ handler: @escaping @Sendable (PCMBuffer) -> Void) -> VoiceHandlerToken {
        setBufferConsumedHandler(handler)
        return VoiceHandlerToken(rawValue: 1)
    }

    public func addFinishedHandler(_ handler: @escaping @Sendable (VoiceFinish) -> Void) -> VoiceHandlerToken {
        setFinishedHandler(handler)
        return VoiceHandlerToken(rawValue: 2)
    }

    public func removeHandler(_ token: VoiceHandlerToken) {
        if token.rawValue == 1 { setBufferConsumedHandler(nil) }
        if token.rawValue == 2 { setFinishedHandler(nil) }
    }

    // MARK: Buffers

    /// Queues `buffer` after those already queued (`alBufferData`, `alSourceQueueBuffers`).
    /// - Throws: `.invalidParameter` for another format or an empty buffer; `.invalidState`
    ///   while stopping, after `dispose()`, once the source was stolen or the device closed;
    ///   `.deviceLost` once the device went away.
    public func enqueue(_ buffer: PCMBuffer) throws {
        guard buffer.format == format else {
            throw AudioError(.invalidParameter, "a \(buffer.format) buffer cannot be enqueued on a \(format) voice")
        }
        guard buffer.frameCount > 0 else { throw AudioError(.invalidParameter, "an empty buffer cannot be enqueued") }
        try device.perform { _ in
            try locked.withLock { st in
                let source = try usable(st)
                guard !st.draining else {
                    throw AudioError(.invalidState, "the voice is stopping; enqueue after it has stopped")
                }
                st.pending.append(buffer)
                try feed(&st, source: source)
            }
        }
    }

    /// Buffers enqueued and not yet handed back.
    public var queuedBufferCount: Int { locked.withLock { $0.queued.count + $0.pending.count } }

    // MARK: Transport

    /// Starts or resumes playing (`alSourcePlay`), now or when `hostTime` is heard. With
    /// nothing queued it starts as soon as a buffer is.
    /// - Parameter hostTime: The `HostTime` at which the first frame should be heard, or `nil`.
    ///   On a loopback device the start falls on the exact frame of the rendered timeline
    ///   (`OpenALDevice.hostTimeBase`); on others the pump starts it when the time is one
    ///   output latency away.
    /// - Throws: `.invalidState` while a `stop(immediately: false)` is playing out (a paused
    ///   voice resumes and plays out), after `dispose()`, once stolen or closed; `.deviceLost`.
    public func start(atHostTime hostTime: UInt64?) throws {
        try device.perform { _ in
            try locked.withLock { st in
                let source = try usable(st)
                guard !st.draining || st.transport == .paused else {
                    throw AudioError(.invalidState, "the voice is stopping; start it once it has stopped")
                }
                if st.fade?.stopping == true { stopNow(&st, source: source) }
                st.fade = nil
                if st.parameters.muted {
                    st.parameters.muted = false
                    st.parameters.applyGain(to: source)
                }
                guard st.transport != .playing else { return }
                if st.transport == .stopped { st.playedFrames = 0 }
                st.transport = .playing
                if let hostTime, hostTime > device.nextHeardHostTime() {
                    st.scheduledStart = hostTime
                    return
                }
                beginPlaying(&st, source: source)
            }
        }
    }

    /// Pauses (`alSourcePause`, after a fade over one mixer update); `start` resumes at the
    /// same frame.
    /// - Throws: `.invalidState` after `dispose()`, once stolen or closed; `.deviceLost`.
    public func pause() throws {
        try device.perform { _ in
            try locked.withLock { st in
                let source = try usable(st)
                guard st.transport == .playing else { return }
                st.transport = .paused
                if st.scheduledStart != nil {
                    st.scheduledStart = nil
                } else if st.playingInAL {
                    fadeOut(&st, source: source, stopping: false)
                }
                st.starved = false
            }
        }
    }

    /// Stops. `immediately` fades out over one mixer update, then stops the source
    /// (`alSourceStop`) and hands back every queued buffer; otherwise what is queued plays
    /// out first and the finished handler runs. On a device that mixes in real time an
    /// immediate stop returns once the fade is over.
    /// - Throws: `.invalidState` after `dispose()`, once stolen or closed; `.deviceLost`.
    public func stop(immediately: Bool) throws {
        let fading = try device.perform { _ -> Bool in
            try locked.withLock { st -> Bool in
                let source = try usable(st)
                st.scheduledStart = nil
                guard immediately else {
                    if st.transport != .stopped { st.draining = true }
                    return false
                }
                let audible = st.transport == .playing && st.playingInAL
                st.draining = false
                st.starved = false
                st.transport = .stopped
                st.handBack += st.pending
                st.pending = []
                if st.fade?.stopping == true { return true }
                if audible {
                    fadeOut(&st, source: source, stopping: true)
                    return true
                }
                stopNow(&st, source: source)
                return false
            }
        }
        if fading, !device.rendersOnDemand { waitForStopFade() }
    }

    /// Stops at once and frees the voice: its source goes back to the device's pool, its
    /// OpenAL buffers are deleted, and every buffer it held is handed back, here. Later
    /// calls throw `.invalidState`.
    public func dispose() {
        let (buffers, handler) = (try? device.perform { s -> ([PCMBuffer], (@Sendable (PCMBuffer) -> Void)?) in
            locked.withLock { st -> ([PCMBuffer], (@Sendable (PCMBuffer) -> Void)?) in
                guard st.ended == nil, let source = st.source else { return ([], nil) }
                device.releaseSource(source, &s)
                deleteNames(&st)
                return end(&st, reason: AudioError(.invalidState, "the voice was disposed"))
            }
        }) ?? ([], nil)
        locked.withLock { st in if st.ended == nil { st.ended = AudioError(.invalidState, "the voice was disposed") } }
        if let handler { for buffer in buffers { handler(buffer) } }
    }

    // MARK: State and time

    /// Whether it is playing: started and not paused or stopped (also while waiting for a
    /// scheduled start, for buffers after an underrun, or playing out after a non-immediate stop).
    public var isPlaying: Bool { locked.withLock { $0.transport == .playing } }

    /// Frames of enqueued audio played since `start`: buffers unqueued plus `AL_SAMPLE_OFFSET`.
    public var framesPlayed: Int {
        let fromAL = try? device.perform { _ in
            locked.withLock { st -> Int in
                guard let source = st.source else { return st.playedFrames }
                switch Self.sourceState(source) {
                case AL_PLAYING, AL_PAUSED:
                    var offset: Int32 = 0
                    alGetSourcei(source, AL_SAMPLE_OFFSET, &offset)
                    return st.playedFrames + Int(offset)
                case AL_STOPPED where st.playingInAL:
                    return st.playedFrames + st.queued.reduce(0) { $0 + $1.buffer.frameCount }
                default:
                    return st.playedFrames
                }
            }
        }
        return fromAL ?? locked.withLock { $0.playedFrames }
    }

    /// Times it ran dry while playing.
    public var underrunCount: Int { locked.withLock { $0.underruns } }

    /// Seconds from a frame being mixed to its being heard: OpenAL's own figure
    /// (`AL_SEC_OFFSET_LATENCY_SOFT`, `AL_SOFT_source_latency`), plus the null device's
    /// virtual buffer.
    public var outputLatency: Double {
        let openAL = (try? device.perform { _ in
            locked.withLock { st -> Double in
                guard let source = st.source else { return 0 }
                var values: [Double] = [0, 0]
                alGetSourcedvSOFT(source, AL_SEC_OFFSET_LATENCY_SOFT, &values)
                return values[1]
            }
        }) ?? 0
        if let clock = device.clock {
            return openAL + Double(clock.queuedFrames(now: HostTime.now())) / device.format.sampleRate
        }
        if openAL == 0, !device.rendersOnDemand {
            // A sound server reports no latency until its first timing update arrives (about
            // 2 s after a stream opens on an idle PulseAudio sink); until then the device
            // buffer OpenAL Soft asked for is the best estimate.
            return device.requestedBufferSeconds
        }
        return openAL
    }

    /// Changes the source's parameters under the device and state locks, on a usable source.
    private func adjustParameters(_ body: (inout SourceParameters, UInt32) throws -> Void) throws {
        try device.perform { _ in
            try locked.withLock { st in
                let source = try usable(st)
                try body(&st.parameters, source)
            }
        }
    }

    // MARK: Parameters

    /// The volume, 0…1, where its ramp has reached.
    public var volume: Float { locked.withLock { $0.parameters.volume } }

    /// Sets the volume (`AL_GAIN`), gliding to it over `rampSeconds` (over one mixer update,
    /// OpenAL Soft's own smoothing, when 0).
    /// - Throws: `.invalidParameter` outside 0…1 or for a negative ramp; `.invalidState`
    ///   after `dispose()`.
    public func setVolume(_ volume: Float, rampSeconds: Double) throws {
        try SourceParameters.checkVolume(volume, rampSeconds: rampSeconds)
        try adjustParameters { parameters, source in
            parameters.setVolume(volume, rampSeconds: rampSeconds, clock: device.clockNanoseconds(),
                                 lookahead: device.updateNanoseconds)
            parameters.applyGain(to: source)
        }
    }

    /// The stereo position, −1…1.
    public var pan: Float { locked.withLock { $0.parameters.pan } }

    /// Sets the stereo position. A mono voice follows `PanLaw.mono` at once (placed with
    /// `AL_POSITION`, see `PanCalibration`); a stereo voice is balanced by `PanLaw.stereo`
    /// from the next buffer copied into OpenAL (what is already queued there keeps its
    /// balance); more channels are folded to stereo and not panned.
    /// - Throws: `.invalidParameter` outside −1…1; `.invalidState` after `dispose()`.
    public func setPan(_ pan: Float) throws {
        try SourceParameters.checkPan(pan)
        try adjustParameters { parameters, source in
            parameters.pan = pan
            parameters.applyGain(to: source)
        }
    }

    /// The playback rate, 0.5…2.
    public var playbackRate: Float { locked.withLock { $0.parameters.pitch } }

    /// Sets the playback rate (`AL_PITCH`): varispeed, so pitch follows speed.
    /// - Throws: `.invalidParameter` outside 0.5…2; `.invalidState` after `dispose()`.
    public func setPlaybackRate(_ rate: Float) throws {
        try SourceParameters.checkRate(rate)
        try adjustParameters { parameters, source in
            parameters.pitch = rate
            parameters.applyPitch(to: source)
            try OpenALStatus.al().check("alSourcef(AL_PITCH, \(rate))")
        }
    }

    // MARK: Helpers

    func usable(_ st: State) throws -> UInt32 {
        if let ended = st.ended { throw ended }
        guard let source = st.source else { throw AudioError(.invalidState, "the voice holds no OpenAL source") }
        return source
    }

    private func waitForStopFade() {
        let deadline = HostTime.now() + UInt64(3 * device.settleNanoseconds) + HostTime.nanoseconds(0.1)
        while HostTime.now() < deadline, locked.withLock({ $0.fade?.stopping == true }) {
            usleep(1_000)
        }
    }

    static func sourceState(_ source: UInt32) -> Int32 {
        var value: Int32 = 0
        alGetSourcei(source, AL_SOURCE_STATE, &value)
        return value
    }
}
