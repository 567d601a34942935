internal import COpenAL
import SpoolCore
import Synchronization

/// An OpenAL source playing one `OpenALStaticBuffer` (`AL_BUFFER`), once or looping
/// (`AL_LOOPING`): the OpenAL static model, for sound effects. Many sources may play the
/// same buffer at once; each holds it until the source is disposed.
///
/// A stereo buffer plays through `AL_SOFT_direct_channels`, unpanned: the buffer is shared,
/// so it cannot be balanced per source; use a mono buffer for a positioned effect.
public final class OpenALStaticSource: SourceOwner, SharedBufferVoice {
    /// The buffer it plays.
    public let buffer: OpenALStaticBuffer
    /// Its claim on a source when they run out; higher keeps its source.
    public let priority: Int
    /// The device it plays on.
    public var device: OpenALDevice { buffer.device }
    /// Seconds the device holds ahead of the speaker (`OpenALDevice.outputLatency`).
    public var outputLatency: Double { device.outputLatency }

    let state: Locked<State>

    struct State: Sendable {
        var source: UInt32?
        var ended: AudioError?
        var playingInAL = false
        var looping = false
        var finishDue = false
        var parameters: SourceParameters
        var onFinished: (@Sendable () -> Void)?
    }

    /// Makes a source for `buffer` on its device, taking one of the device's sources.
    /// - Parameters:
    ///   - buffer: The buffer to play.
    ///   - priority: Its claim on a source when they run out.
    /// - Throws: `.invalidState` when every source plays a voice of higher priority or the
    ///   device is closed; `.deviceLost` when it is lost.
    public init(buffer: OpenALStaticBuffer, priority: Int = 0) throws {
        self.buffer = buffer
        self.priority = priority
        state = Locked(State(parameters: SourceParameters(channelCount: buffer.format.channelCount)))
        let device = buffer.device
        let deliveries = try device.perform { s -> Deliveries in
            var deliveries = Deliveries()
            let source = try device.acquireSource(priority: priority, owner: self, &s, &deliveries)
            state.withLock { st in
                st.source = source
                st.parameters.applyAll(to: source)
            }
            alSourcei(source, AL_BUFFER, Int32(bitPattern: buffer.name))
            try OpenALStatus.al().check("attaching a static buffer to an OpenAL source")
            return deliveries
        }
        deliveries.run()
    }

    deinit {
        if let source = state.withLock({ $0.source }) { device.retire(source: source) }
    }

    /// Sets what to call when it stops by itself: played to the end (not looping), its
    /// source was stolen, or the device closed or went away.
    public func setFinishedHandler(_ handler: (@Sendable () -> Void)?) {
        state.withLock { $0.onFinished = handler }
    }

    // MARK: Transport

    /// Plays from the start (`alSourcePlay`); when already playing, restarts, as OpenAL does.
    /// - Throws: `.invalidState` after `dispose()`, once stolen or closed; `.deviceLost`.
    public func play() throws {
        try transport("alSourcePlay") { source, st in
            alSourcePlay(source)
            st.playingInAL = true
        }
    }

    /// Pauses (`alSourcePause`); `play` after a pause resumes.
    /// - Throws: As `play()`.
    public func pause() throws {
        try transport("alSourcePause") { source, st in
            alSourcePause(source)
            st.playingInAL = false
        }
    }

    /// Stops and rewinds (`alSourceStop`), without running the finished handler.
    /// - Throws: As `play()`.
    public func stop() throws {
        try transport("alSourceStop") { source, st in
            alSourceStop(source)
            st.playingInAL = false
        }
    }

    private func transport(_ call: String, _ body: (UInt32, inout State) -> Void) throws {
        try device.perform { _ in
            try state.withLock { st in
                let source = try usable(st)
                body(source, &st)
                try OpenALStatus.al().check(call)
            }
        }
    }

    /// Whether OpenAL is playing it (`AL_SOURCE_STATE` is `AL_PLAYING`).
    public var isPlaying: Bool { query { source, _ in OpenALStreamingSource.sourceState(source) == AL_PLAYING } ?? false }

    /// The frame it is playing in its buffer (`AL_SAMPLE_OFFSET`); 0 when stopped.
    public var framesPlayed: Int {
        query { source, _ in
            var offset: Int32 = 0
            alGetSourcei(source, AL_SAMPLE_OFFSET, &offset)
            return Int(offset)
        } ?? 0
    }

    /// Whether it starts again at the end (`AL_LOOPING`).
    public var isLooping: Bool { state.withLock { $0.looping } }

    /// Sets whether it loops (`AL_LOOPING`); takes effect at the end of the current pass.
    /// - Throws: `.invalidState` after `dispose()`, once stolen or closed; `.deviceLost`.
    public func setLooping(_ looping: Bool) throws {
        try device.perform { _ in
            try state.withLock { st in
                let source = try usable(st)
                alSourcei(source, AL_LOOPING, looping ? AL_TRUE : AL_FALSE)
                st.looping = looping
            }
        }
    }

    /// Stops it at once and gives its source back; it lets go of the buffer when it goes.
    /// Later calls throw `.invalidState`.
    public func dispose() {
        _ = try? device.perform { s in
            state.withLock { st in
                guard st.ended == nil, let source = st.source else { return }
                device.releaseSource(source, &s)
                st.source = nil
                st.playingInAL = false
            }
        }
        state.withLock { st in if st.ended == nil { st.ended = AudioError(.invalidState, "the source was disposed") } }
    }

    /// Changes the source's parameters under the device and state locks, on a usable source.
    private func adjustParameters(_ body: (inout SourceParameters, UInt32) throws -> Void) throws {
        try device.perform { _ in
            try state.withLock { st in
                let source = try usable(st)
                try body(&st.parameters, source)
            }
        }
    }

    // MARK: Parameters

    /// Sets the volume (`AL_GAIN`), gliding over `rampSeconds` (one mixer update when 0).
    /// - Throws: `.invalidParameter` outside 0…1 or for a negative ramp; `.invalidState` after `dispose()`.
    public func setVolume(_ volume: Float, rampSeconds: Double = 0) throws {
        try VoiceParameters.checkVolume(volume, rampSeconds: rampSeconds)
        try adjustParameters { parameters, source in
            parameters.setVolume(volume, rampSeconds: rampSeconds, clock: device.clockNanoseconds(),
                                 lookahead: device.updateNanoseconds)
            parameters.applyGain(to: source)
        }
    }

    /// Sets the stereo position of a mono buffer by `PanLaw.mono` (`AL_POSITION`, see `PanCalibration`).
    /// - Throws: `.invalidParameter` outside −1…1, or for a pan other than 0 on a stereo
    ///   buffer (shared by every source, it cannot be balanced per source); `.invalidState`
    ///   after `dispose()`.
    public func setPan(_ pan: Float) throws {
        try VoiceParameters.checkPan(pan)
        guard state.withLock({ $0.parameters.uploadedChannels }) == 1 || pan == 0 else {
            throw AudioError(.invalidParameter, "a static \(buffer.format) buffer plays unpanned; pan a mono buffer instead")
        }
        try adjustParameters { parameters, source in
            parameters.pan = pan
            parameters.applyGain(to: source)
        }
    }

    /// Sets the playback rate (`AL_PITCH`), 0.5…2.
    /// - Throws: `.invalidParameter` outside 0.5…2; `.invalidState` after `dispose()`.
    public func setPlaybackRate(_ rate: Float) throws {
        try VoiceParameters.checkPlaybackRate(rate)
        try adjustParameters { parameters, source in
            parameters.pitch = rate
            parameters.applyPitch(to: source)
        }
    }

    // MARK: SourceOwner

    var scheduledHostTime: UInt64? { nil }

    func service(_ step: ServiceStep, _ deliveries: inout Deliveries) {
        state.withLock { st in
            guard let source = st.source else { return }
            if st.parameters.advance(clock: step.clock, lookahead: device.updateNanoseconds) {
                st.parameters.applyGain(to: source)
            }
            if st.playingInAL, OpenALStreamingSource.sourceState(source) == AL_STOPPED {
                st.playingInAL = false
                if let finished = st.onFinished { deliveries.add { finished() } }
            }
        }
    }

    func relinquish(reason: AudioError, _ deliveries: inout Deliveries) {
        state.withLock { st in
            guard let source = st.source else { return }
            alSourceStop(source)
            alSourcei(source, AL_BUFFER, 0)
            st.source = nil
            st.ended = reason
            st.playingInAL = false
            if let finished = st.onFinished { deliveries.add { finished() } }
        }
    }

    // MARK: Helpers

    private func usable(_ st: State) throws -> UInt32 {
        if let ended = st.ended { throw ended }
        guard let source = st.source else { throw AudioError(.invalidState, "the source holds no OpenAL source") }
        return source
    }

    private func query<R: Sendable>(_ body: (UInt32, State) -> R) -> R? {
        let result = try? device.perform { _ in
            state.withLock { st -> R? in
                guard let source = st.source else { return nil }
                return body(source, st)
            }
        }
        return result ?? nil
    }
}

extension OpenALDevice {
    /// Makes a source playing `buffer` (see `OpenALStaticSource`).
    /// - Parameters:
    ///   - buffer: A buffer of this device.
    ///   - priority: Its claim on a source when they run out.
    /// - Returns: The source, stopped.
    /// - Throws: `.invalidParameter` for a buffer of another device; as `OpenALStaticSource.init`.
    public func makeStaticSource(playing buffer: OpenALStaticBuffer, priority: Int = 0) throws -> OpenALStaticSource {
        guard buffer.device === self else {
            throw AudioError(.invalidParameter, "the static buffer belongs to another OpenAL device")
        }
        return try OpenALStaticSource(buffer: buffer, priority: priority)
    }
}
