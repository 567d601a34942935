internal import COpenAL
import Foundation
import SpoolCore
import SpoolOutput
import SpoolResampling
import Synchronization

/// An OpenAL source fed with a queue of buffers, the OpenAL streaming model: the program
/// enqueues `PCMBuffer`s; Spool converts them to the device's rate with the buffer queue's
/// own converter (`VoiceResampler`: libsoxr HQ, Spool's windowed sinc for varispeed) and queues the
/// result on the source a few mixer updates ahead (`alBufferData`, `alSourceQueueBuffers`),
/// and the pump unqueues what OpenAL has played (`AL_BUFFERS_PROCESSED`,
/// `alSourceUnqueueBuffers`) and refills. Each `PCMBuffer` is handed back once its last
/// frame has been converted, on the device's handler thread after the pump's pass (or on a
/// loopback device's rendering thread), never on OpenAL's mixer thread nor on the pump's.
///
/// It is the OpenAL back-end's `PlaybackVoice`, and behaves as `PlaybackVoice` describes, call
/// by call and state by state, exactly as a `BufferQueue` does.
///
/// **Rate conversion.** OpenAL Soft's own resampler steps through a source with a
/// fixed-point increment (12 fractional bits in 1.19), so 44 100 → 48 000 Hz runs 53 ppm slow
/// and drops frames at the end. So OpenAL only ever sees audio at the device's rate with
/// `AL_PITCH` at 1, which it copies: both back-ends play the same samples, every source
/// frame, and varispeed is exact in frames too. A playback rate change is heard once the
/// audio already converted (`leadFrames`: three mixer updates, or at least 40 ms on a device
/// mixing in real time) has played.
///
/// **Underruns.** When the source has too little audio for the converter to run without
/// reading past it, the voice waits for more; when OpenAL would otherwise run dry, it plays
/// what there is followed by silence and counts an underrun, as the buffer queue does. Where
/// OpenAL stops a source that played out (`AL_STOPPED`), the pump unqueues what played and
/// starts it again once there is audio (unqueueing first, as OpenAL Soft's maintainer advises).
///
/// **Position.** `framesPlayed` is the source frames the converter had taken when OpenAL's
/// mixer reached its current frame (`AL_SAMPLE_OFFSET` into the queued chunks): exact at
/// equal rates, ahead by the converter's look-ahead otherwise, as on the buffer queue. While
/// paused it is the frame the resume plays on, from the moment `pause()` returns.
///
/// **Fades.** OpenAL Soft 1.19 stops and pauses a source at once, mid-waveform. So `pause()`
/// and `stop(immediately: true)` first set its gain to 0, which OpenAL glides over the next
/// mix, and pause or stop it at the next pump pass after that mix. On the devices Spool
/// renders (loopback, null) that mix is made 5 ms long (`VoiceParameters.declickSeconds`,
/// `OpenALDevice.renderMix`), so pause, stop and resume fade as the buffer queue's do; on a
/// sound server OpenAL Soft mixes one update at a time and the glide takes one update. A
/// device mixing in real time may mix the source again, at gain 0, before that pass pauses
/// it; the pause then moves the source back to where the glide ended (`AL_SAMPLE_OFFSET`),
/// so the resume plays on from the frame after the fade, none lost and none repeated.
public final class OpenALStreamingSource: PlaybackVoice, SourceOwner, PlayedOutFrameReporting, Sendable {
    /// The format of the buffers it takes.
    public let format: AudioFormat
    /// Its claim on a source when they run out (see `OpenALDevice.sourceLimit`): higher keeps its source.
    public let priority: Int
    /// The device it plays on.
    public let device: OpenALDevice

    /// Most OpenAL buffers one source has queued at a time.
    public static let maximumQueuedALBuffers = 16

    let locked: Locked<State>
    /// The converter and its scratch memory; touched only with `locked` held.
    let lane: ConversionLane
    /// Device frames per OpenAL buffer: one mixer update (64 to 4096) where the program
    /// renders on demand, whole updates of about 20 ms (at most 4096) in real time.
    let chunkFrames: Int
    /// Converted frames kept queued ahead of OpenAL's mixer: three mixer updates where the
    /// program renders on demand; on a device mixing in real time, one chunk more than the
    /// device's `streamingLead` (40 ms unless set) or one update more than the device holds,
    /// whichever is more, rounded up to chunks.
    let leadFrames: Int
    /// With fewer frames than this queued ahead, OpenAL's next mix would run dry: one update,
    /// and on a device mixing in real time what plays between two pump passes.
    let dryFrames: Int
    let outbox = Locked(Outbox())
    /// The one thread at a time that runs the outbox.
    let delivery = DeliveryTurn()
    /// OpenAL has reported a source latency other than 0: the sound server's timing has come,
    /// and a 0 from then on is a real figure (a stream drained dry), not a missing one.
    private let latencyTimingSeen = Atomic<Bool>(false)

    /// A chunk of converted audio queued on the OpenAL source, and the count of source frames
    /// the converter had taken before and after making it.
    struct Entry: Sendable {
        let name: UInt32
        let frames: Int
        let readBefore: Int
        let readAfter: Int
    }

    /// A fade-out under way before a pause or a stop: done once the device clock reaches
    /// `until` nanoseconds, or, on a device that mixes in real time, once the host clock
    /// passes `hostDeadline` (a mixer that has stopped asking for audio advances no clock,
    /// and plays nothing that could click).
    ///
    /// A pause's fade also knows when its glide is over: OpenAL Soft takes a gain change at
    /// the start of its next mix and glides it over that mix, so once the device clock has
    /// moved past `glideClock` (read with the source's offset right after the change, with no
    /// mix under way) the source is silent and may be paused.
    struct Fade: Sendable {
        var stopping: Bool
        var until: Int64
        var hostDeadline: UInt64?
        /// The device clock right after a pause's gain change; nil for a stop, or unread.
        var glideClock: Int64?
        /// Where the glide ends, in frames queued on the source since it was made
        /// (`unqueuedFrames` + offset): `OpenALDevice.glideFrames` past the offset read with
        /// `glideClock`.
        var glideEnd: Int?

        func isOver(clock: Int64) -> Bool {
            clock >= until || hostDeadline.map { HostTime.now() >= $0 } ?? false
        }
    }

    /// Handler calls due, in the order their events happened (run by `delivery`).
    struct Outbox: Sendable {
        var calls: [@Sendable () -> Void] = []
    }

    /// The voice's state; its lock is taken only inside a device batch, or alone.
    struct State: Sendable {
        var source: UInt32?
        /// Why the voice can no longer be used: disposed, stolen, device closed or lost.
        var ended: AudioError?
        var transport = VoiceState.stopped
        /// `stop(immediately: false)` marked the end of the input.
        var draining = false
        var scheduledStart: UInt64?
        var fade: Fade?
        /// Spool last told OpenAL to play the source, and has not seen it stop since.
        var playingInAL = false
        /// Converted chunks queued on the OpenAL source, oldest first.
        var queued: [Entry] = []
        /// Frames of the chunks taken off the source so far, played or not: with
        /// `AL_SAMPLE_OFFSET` (which counts from the first chunk still queued), a position on
        /// the source that outlives an unqueue.
        var unqueuedFrames = 0
        /// Enqueued buffers not yet wholly converted; the converter has taken `readOffset`
        /// frames of the first.
        var pending: [PCMBuffer] = []
        var readOffset = 0
        var freeNames: [UInt32] = []
        var ownedNames: [UInt32] = []
        /// Source frames taken by the converter since the start, silence not counted.
        var sourceRead = 0
        /// `sourceRead` after the last chunk OpenAL played and Spool unqueued.
        var playedFrames = 0
        /// The converter has played a draining source to its end.
        var converterEnded = false
        /// Silence the converter was given since the source last ran dry.
        var paddedFrames = 0
        var inUnderrun = false
        var underruns = 0
        /// The device clock (ns) until which the pump may pass the voice by: its lead is in
        /// hand and nothing else is under way (see `service`). Any call that may change it
        /// clears it.
        var restUntil: Int64?
        /// Buffers handed back whose handler calls have not run yet.
        var undelivered = 0
        var parameters: SourceParameters
        var upload = SampleUpload()
        var handlers = VoiceHandlers()
        /// The handlers set with `setBufferConsumedHandler` / `setFinishedHandler`.
        var setConsumed: VoiceHandlerToken?
        var setFinished: VoiceHandlerToken?
        /// Plays begun (starts from `.stopped`): what position handlers belong to.
        var play = 0
        /// On a device rendered on demand, once a draining source has its last chunk queued
        /// and plays: the device's `renderedFrames` its last frame ends on (OpenAL plays the
        /// chunks one after another, at `AL_PITCH` 1, so the end does not move).
        var endsOnRenderedFrame: Int64?
        /// `endsOnRenderedFrame` of the latest play that played out.
        var playedOutOnRenderedFrame: Int64?
    }

    /// Makes a streaming source on `device`, taking one of its sources (`alGenSources`).
    /// - Parameters:
    ///   - device: The device to play on.
    ///   - format: The format of the buffers it will take: any channel count (more than two
    ///     are folded down to stereo), any rate the converter takes (1/16 to 16 times the
    ///     device's).
    ///   - priority: Its claim on a source when they run out; higher keeps its source.
    /// - Throws: `.invalidParameter` for a rate the converter cannot take; `.invalidState` when
    ///   every source plays a voice of higher priority, or the device is closed;
    ///   `.deviceLost` when it is lost.
    /// How its audio is converted to the device rate.
    public var resamplingQuality: ResamplingQuality { lane.resampler.quality }

    /// Changes how its audio is converted, also while it plays (see
    /// `BufferQueue.setResamplingQuality(_:)`: the same converters, the same crossfade).
    /// - Throws: `.invalidState` after `dispose()`, once stolen or closed.
    public func setResamplingQuality(_ quality: ResamplingQuality) throws {
        try locked.withLock { st in _ = try usable(&st) }
        lane.resampler.setQuality(quality)
    }

    public init(device: OpenALDevice, format: AudioFormat, priority: Int = 0, quality: ResamplingQuality = .default) throws {
        self.device = device
        self.format = format
        self.priority = priority
        let update = min(4096, max(64, device.updateFrames))
        if device.rendersOnDemand {
            // Rendered on demand: one update per chunk, three ahead, serviced after each render.
            chunkFrames = update
            leadFrames = 3 * update
            dryFrames = update
        } else {
            // In real time: chunks of whole updates, about 20 ms, so that a voice is refilled
            // (and its OpenAL source asked about) every few passes rather than at each. Never
            // less than the device's `streamingLead` ahead when the pump comes, or one
            // update more than the device holds (it refills its whole buffer at once after a
            // late period, before the pump runs), rounded up to chunks, and the chunk the pump
            // waits for before refilling.
            let perChunk = max(1, Int((device.format.sampleRate * 0.020 / Double(update)).rounded()))
            chunkFrames = min(4096, update * perChunk)
            let asked = Int((device.streamingLead * device.format.sampleRate).rounded(.up))
            let floor = max(asked, ((device.periodCount ?? 3) + 1) * update)
            let chunks = min(Self.maximumQueuedALBuffers - 1, (floor + chunkFrames - 1) / chunkFrames + 1)
            leadFrames = chunks * chunkFrames
            dryFrames = update + Int(device.format.sampleRate * 0.012)
        }
        lane = try ConversionLane(format: format, deviceRate: device.format.sampleRate, chunkFrames: chunkFrames,
                                  quality: quality)
        var parameters = SourceParameters(channelCount: format.channelCount)
        parameters.pitchInOpenAL = false
        locked = Locked(State(parameters: parameters))
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

    public func addBufferConsumedHandler(_ handler: @escaping @Sendable (PCMBuffer) -> Void) -> VoiceHandlerToken {
        locked.withLock { $0.handlers.addConsumed(handler) }
    }

    public func addFinishedHandler(_ handler: @escaping @Sendable (VoiceFinish) -> Void) -> VoiceHandlerToken {
        locked.withLock { $0.handlers.addFinished(handler) }
    }

    public func addPositionHandler(atFramesPlayed frame: Int,
                                   _ handler: @escaping @Sendable () -> Void) -> VoiceHandlerToken {
        locked.withLock { st in
            st.restUntil = nil
            return st.handlers.addPosition(atFramesPlayed: frame, play: st.transport == .stopped ? st.play + 1 : st.play, handler)
        }
    }

    public func removeHandler(_ token: VoiceHandlerToken) {
        locked.withLock { $0.handlers.remove(token) }
    }

    /// Sets the one consumed-buffer handler of the caller's own: it replaces the handler this
    /// method set before, and leaves those added with `addBufferConsumedHandler` (a feeder's)
    /// alone. `nil` removes it.
    public func setBufferConsumedHandler(_ handler: (@Sendable (PCMBuffer) -> Void)?) {
        locked.withLock { st in
            if let token = st.setConsumed { st.handlers.remove(token) }
            st.setConsumed = handler.map { st.handlers.addConsumed($0) }
        }
    }

    /// Sets the one finished handler of the caller's own, as `setBufferConsumedHandler` does
    /// for consumed buffers.
    public func setFinishedHandler(_ handler: (@Sendable (VoiceFinish) -> Void)?) {
        locked.withLock { st in
            if let token = st.setFinished { st.handlers.remove(token) }
            st.setFinished = handler.map { st.handlers.addFinished($0) }
        }
    }

    // MARK: Buffers

    /// Queues `buffer` after those already queued.
    /// - Throws: `.invalidParameter` for another format or an empty buffer; `.invalidState`
    ///   while draining, after `dispose()`, once the source was stolen or the device closed;
    ///   `.deviceLost` once the device went away.
    public func enqueue(_ buffer: PCMBuffer) throws {
        guard buffer.format == format else {
            throw AudioError(.invalidParameter, "a \(buffer.format) buffer cannot be enqueued on a \(format) voice")
        }
        guard buffer.frameCount > 0 else { throw AudioError(.invalidParameter, "an empty buffer cannot be enqueued") }
        try device.perform { _ in
            try locked.withLock { st in
                let source = try usable(&st)
                guard !st.draining else {
                    throw AudioError(.invalidState,
                        "the voice is playing out its end (stop(immediately: false)); enqueue after it has stopped")
                }
                st.pending.append(buffer)
                try feed(&st, source: source)
            }
        }
        handToService()
    }

    /// Leaves the handler calls a call that goes on playing made (buffers it converted to
    /// their end, which can be several when they are shorter than the lead) to the next
    /// service pass, so that they run on the device's handler thread, or during a loopback
    /// device's render call, as every other handback does: never on the thread of `enqueue` or `start`.
    private func handToService() {
        guard outbox.withLock({ !$0.calls.isEmpty }), !device.rendersOnDemand else { return }
        device.pump.wake()
    }

    /// Buffers enqueued and not yet handed back.
    public var queuedBufferCount: Int { locked.withLock { $0.pending.count + $0.undelivered } }

    // MARK: Transport

    /// Starts or resumes (`alSourcePlay`), now or when `hostTime` is heard; see
    /// `PlaybackVoice.start(atHostTime:)`.
    /// - Parameter hostTime: The `HostTime` at which the first frame should be heard, or `nil`.
    ///   On a loopback device the start falls on the exact frame of the rendered timeline
    ///   (`OpenALDevice.hostTimeBase`); on others the pump starts it when the time is one
    ///   output latency away.
    /// - Throws: `.invalidState` after `dispose()`, once stolen or closed; `.deviceLost`.
    public func start(atHostTime hostTime: UInt64?) throws {
        try device.perform { _ in
            try locked.withLock { st in
                let source = try usable(&st)
                guard st.transport != .playing else { return }
                if st.fade?.stopping == true { stopNow(&st, source: source, report: .stopped) }
                st.fade = nil
                if st.parameters.muted {
                    // A resume fades in as a pause fades out.
                    st.parameters.muted = false
                    device.glidingOverDeclick { st.parameters.applyGain(to: source) }
                }
                if st.transport == .stopped {
                    st.play += 1
                    st.handlers.dropPositionHandlers(through: st.play - 1)
                    st.sourceRead = 0
                    st.playedFrames = 0
                    st.converterEnded = false
                    st.paddedFrames = 0
                    st.inUnderrun = false
                    (st.endsOnRenderedFrame, st.playedOutOnRenderedFrame) = (nil, nil)
                    lane.resampler.restart(timeline: 0, playbackRate: st.parameters.pitch)
                }
                st.transport = .playing
                if let hostTime, hostTime > device.nextHeardHostTime() { st.scheduledStart = hostTime }
                try feed(&st, source: source)
            }
        }
        handToService()
    }

    /// Pauses (`alSourcePause`, after a fade over 5 ms on a device Spool renders, over one
    /// mixer update on a sound server); `start` resumes at the same frame, which
    /// `framesPlayed` reads from when this returns (on a device mixing in real time the fade
    /// is over by then). A scheduled start not yet reached is cancelled.
    /// - Throws: `.invalidState` after `dispose()`, once stolen or closed; `.deviceLost`.
    public func pause() throws {
        let fading = try device.perform { _ -> Bool in
            try locked.withLock { st -> Bool in
                let source = try usable(&st)
                guard st.transport == .playing else { return false }
                st.transport = .paused
                if st.scheduledStart != nil {
                    st.scheduledStart = nil
                } else if st.playingInAL {
                    fadeOut(&st, source: source, stopping: false)
                    return true
                }
                return false
            }
        }
        if fading, !device.rendersOnDemand { waitForFade() }
    }

    /// Stops; see `PlaybackVoice.stop(immediately:)`. `immediately` fades a playing voice out
    /// as `pause()` does, then stops the source (`alSourceStop`); on a device that mixes in
    /// real time the call returns once that is done and everything is handed back.
    /// - Throws: `.invalidState` after `dispose()`, once stolen or closed; `.deviceLost`.
    public func stop(immediately: Bool) throws {
        let fading = try device.perform { _ -> Bool in
            try locked.withLock { st -> Bool in
                let source = try usable(&st)
                guard immediately else {
                    guard !st.draining else { return false }
                    st.draining = true
                    try feed(&st, source: source)
                    return false
                }
                st.draining = false
                st.scheduledStart = nil
                if st.transport != .stopped { st.handlers.dropPositionHandlers(through: st.play) }
                handBack(&st, st.pending)
                st.pending = []
                st.readOffset = 0
                guard st.transport != .stopped else {
                    if st.fade?.stopping == true { return true }
                    discardChunks(&st, source: source)
                    return false
                }
                let audible = st.transport == .playing && st.playingInAL
                    || st.fade.map { !$0.stopping } ?? false
                st.transport = .stopped
                if audible {
                    fadeOut(&st, source: source, stopping: true)
                    return true
                }
                stopNow(&st, source: source, report: .stopped)
                return false
            }
        }
        if fading, !device.rendersOnDemand { waitForFade() }
        // A stop at its end goes on playing: what it converted is handed back as any pass's.
        if immediately { drainOutbox(waiting: true) } else { handToService() }
    }

    /// Stops at once (no fade) and frees the voice: its source goes back to the device's pool,
    /// its OpenAL buffers are deleted, every buffer it held is handed back and the finished
    /// handlers hear `.disposed` (when it was started), here. Later calls throw `.invalidState`.
    public func dispose() {
        let reason = AudioError(.invalidState, "the voice was disposed")
        _ = try? device.perform { s in
            locked.withLock { st in
                guard st.ended == nil, let source = st.source else { return }
                let started = st.transport != .stopped
                alSourceStop(source)
                discardChunks(&st, source: source)
                device.releaseSource(source, &s)
                deleteNames(&st)
                end(&st, reason: reason, report: started ? .disposed : nil)
            }
        }
        locked.withLock { st in if st.ended == nil { st.ended = reason } }
        drainOutbox(waiting: true)
        locked.withLock { $0.handlers.removeAll() }
    }

    // MARK: State and time

    public var state: VoiceState { locked.withLock { $0.transport } }

    public var isDraining: Bool { locked.withLock { $0.draining } }

    /// Whether it is playing: started and not paused or stopped (also while waiting for a
    /// scheduled start, for buffers after an underrun, or playing out after a non-immediate stop).
    public var isPlaying: Bool { locked.withLock { $0.transport == .playing } }

    /// Source frames taken since the start, at the frame OpenAL's mixer has reached; while
    /// paused, the frame `start` resumes on, also while the pause's fade is still to be mixed.
    public var framesPlayed: Int {
        let fromAL = try? device.perform { _ in locked.withLock { st in position(st) } }
        return fromAL ?? locked.withLock { $0.playedFrames }
    }

    /// Times it ran dry while playing.
    public var underrunCount: Int { locked.withLock { $0.underruns } }

    /// Seconds from a frame being mixed to its being heard: OpenAL's own figure
    /// (`AL_SEC_OFFSET_LATENCY_SOFT`, `AL_SOFT_source_latency`), plus the null device's
    /// virtual buffer. Until a sound server has sent its first timing update, the device
    /// buffer OpenAL Soft asked for (`isLatencyReported` is false then).
    public var outputLatency: Double { latency().seconds }

    /// Whether `outputLatency` is a figure the output reported (OpenAL's, on a sound server;
    /// the virtual buffer's, on the null device; 0 on a loopback device), rather than the
    /// requested device buffer assumed while a sound server has sent no timing yet. Once
    /// reported, it stays reported: a 0 from OpenAL after that is the server's own figure.
    public var isLatencyReported: Bool { latency().isReported }

    private func latency() -> (seconds: Double, isReported: Bool) {
        let openAL = (try? device.perform { _ in
            locked.withLock { st -> Double in
                guard let source = st.source else { return 0 }
                var values: [Double] = [0, 0]
                alGetSourcedvSOFT(source, AL_SEC_OFFSET_LATENCY_SOFT, &values)
                return values[1]
            }
        }) ?? 0
        if let nullDevice = device.nullDevice {
            return (openAL + Double(nullDevice.queuedFrames) / device.format.sampleRate, true)
        }
        if device.rendersOnDemand { return (openAL, true) }
        if openAL != 0 {
            latencyTimingSeen.store(true, ordering: .relaxed)
        } else if !latencyTimingSeen.load(ordering: .relaxed) {
            // A sound server reports no latency until its first timing update arrives (about
            // 2 s after a stream opens on an idle PulseAudio sink); until then the device
            // buffer OpenAL Soft asked for is the best estimate.
            return (device.requestedBufferSeconds, false)
        }
        return (openAL, true)
    }

    /// Changes the source's parameters under the device and state locks, on a usable source.
    private func adjustParameters(_ body: (inout SourceParameters, UInt32) throws -> Void) throws {
        try device.perform { _ in
            try locked.withLock { st in
                let source = try usable(&st)
                try body(&st.parameters, source)
            }
        }
    }

    // MARK: Parameters

    /// The volume, 0…1, where its ramp has reached.
    public var volume: Float { locked.withLock { $0.parameters.volume } }

    /// Sets the volume (`AL_GAIN`), gliding to it over `rampSeconds` (over one mixer update,
    /// OpenAL Soft's own smoothing, when 0). Before `start`, it applies from the first frame.
    /// - Throws: `.invalidParameter` outside 0…1 or for a negative ramp; `.invalidState`
    ///   after `dispose()`.
    public func setVolume(_ volume: Float, rampSeconds: Double) throws {
        try VoiceParameters.checkVolume(volume, rampSeconds: rampSeconds)
        try adjustParameters { parameters, source in
            parameters.setVolume(volume, rampSeconds: rampSeconds, clock: device.clockNanoseconds(),
                                 lookahead: device.updateNanoseconds)
            parameters.applyGain(to: source)
        }
    }

    /// The stereo position, −1…1.
    public var pan: Float { locked.withLock { $0.parameters.pan } }

    /// Sets the stereo position by `PanLaw`. A mono voice moves at once (placed with
    /// `AL_POSITION`, see `PanCalibration`); a stereo voice is balanced as its audio is
    /// converted, so from the next chunk (what is already queued in OpenAL keeps its
    /// balance); more channels are folded to stereo and not panned.
    /// - Throws: `.invalidParameter` outside −1…1; `.invalidState` after `dispose()`.
    public func setPan(_ pan: Float) throws {
        try VoiceParameters.checkPan(pan)
        try adjustParameters { parameters, source in
            parameters.pan = pan
            parameters.applyGain(to: source)
        }
    }

    /// The playback rate, 0.5…2.
    public var playbackRate: Float { locked.withLock { $0.parameters.pitch } }

    /// Sets the playback rate: varispeed, so pitch follows speed, converted by Spool (OpenAL's
    /// `AL_PITCH` stays 1). Before `start` it applies from the first frame; while playing, from
    /// the next chunk converted.
    /// - Throws: `.invalidParameter` outside 0.5…2; `.invalidState` after `dispose()`.
    public func setPlaybackRate(_ rate: Float) throws {
        try VoiceParameters.checkPlaybackRate(rate)
        try adjustParameters { parameters, _ in parameters.pitch = rate }
    }

    // MARK: Helpers

    /// The voice's source, for a call that may change it: the voice is serviced at the next
    /// pass, resting or not.
    func usable(_ st: inout State) throws -> UInt32 {
        if let ended = st.ended { throw ended }
        guard let source = st.source else { throw AudioError(.invalidState, "the voice holds no OpenAL source") }
        st.restUntil = nil
        return source
    }

    /// On a device that mixes in real time, waits (a few updates at most) for the pump to
    /// carry out the fade begun, unless this is the pump's own thread.
    private func waitForFade() {
        guard device.pump.threadID.load(ordering: .acquiring) != UInt(pthread_self()) else { return }
        let deadline = HostTime.now() + UInt64(3 * device.settleNanoseconds) + HostTime.nanoseconds(0.1)
        while HostTime.now() < deadline, locked.withLock({ $0.fade != nil }) {
            usleep(1_000)
        }
    }

    static func sourceState(_ source: UInt32) -> Int32 {
        var value: Int32 = 0
        alGetSourcei(source, AL_SOURCE_STATE, &value)
        return value
    }
}

/// A streaming source's converter and the memory it converts into. Not thread-safe: its
/// voice touches it only with its lock held.
final class ConversionLane: @unchecked Sendable {
    // Sendable: only used under the owning voice's `locked` mutex.
    let resampler: VoiceResampler
    let channelCount: Int
    let output: UnsafeMutablePointer<Float>

    init(format: AudioFormat, deviceRate: Double, chunkFrames: Int, quality: ResamplingQuality) throws {
        channelCount = format.channelCount
        resampler = try VoiceResamplerPool.shared.take(
            channelCount: format.channelCount, sourceRate: format.sampleRate, ratio: deviceRate / format.sampleRate,
            maximumFrames: max(chunkFrames, 4096), declickFrames: VoiceParameters.declickFrames(atRate: deviceRate), quality: quality)
        output = .allocate(capacity: chunkFrames * format.channelCount)
    }

    deinit {
        VoiceResamplerPool.shared.give(resampler)
        output.deallocate()
    }
}
