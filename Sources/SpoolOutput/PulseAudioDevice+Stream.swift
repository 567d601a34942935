#if canImport(Glibc)
import Glibc
#endif
internal import CPulse
import Dispatch
import Synchronization
import SpoolCore

/// Owns a PulseAudio device's threaded main loop, its context and its one playback stream, and
/// tears them down in `close()`.
///
/// libpulse calls the callbacks below on the main loop's thread with the main loop's lock held;
/// every other thread takes that lock (`withMainloopLock`) before it touches the context or
/// the stream. The callbacks reach this object through an unretained pointer: the device keeps
/// it alive and `close()` stops the main loop (joining its thread) before anything is freed.
final class PulseAudioStream: @unchecked Sendable {
    // Sendable: the C handles and `renderer`, `sampleTime` are guarded by the threaded main
    // loop's lock (libpulse holds it around every callback); the rest is immutable or atomic.
    let pulse: PulseAudioLibrary
    let mainloop: OpaquePointer
    private(set) var context: OpaquePointer?
    private(set) var stream: OpaquePointer?
    let events: RenderThread.EventRelay
    /// Follows the server's sinks through the context, for the device's `.routeChanged` events.
    let sinkWatcher: PulseAudioSinkWatcher
    /// The device's name for messages, `pulse` or `pulse:SINK`.
    let name: String
    let format: AudioFormat
    let frameBytes: Int
    /// What the server granted, in bytes; set once the stream is ready.
    private(set) var granted = pa_buffer_attr()
    /// Frames per render call: the granted `minreq`.
    private(set) var periodFrames = 0

    /// Main loop lock: the renderer `start` handed over; nil when stopped.
    var renderer: (any AudioRenderer)?
    /// Main loop lock: frames written since the last start.
    var sampleTime: Int64 = 0
    /// Main loop lock: the renderer, when it can add a sound into frames already written.
    var rewinder: (any RewindingRenderer)?
    /// Main loop lock: what the stream has written and may write again; made once the
    /// buffer is granted.
    var history: RewindHistory?
    let rewind = RewindRequest()
    /// Whether the device is pulling audio; written under the main loop lock, read anywhere.
    let running = Atomic<Bool>(false)
    /// Set once the stream or the context failed; never cleared.
    let lost = Atomic<Bool>(false)
    /// Set when the context failed while the device was in use: the server went away (or
    /// dropped the connection), not only the stream's sink.
    let serverGone = Atomic<Bool>(false)
    /// Set by `close()`, so that the disconnection it makes is not reported as a loss.
    private let closing = Atomic<Bool>(false)
    /// Asks for the stream's timing every 100 ms while it plays (`requestTiming`).
    private let timingQueue: DispatchQueue
    private var timingTimer: (any DispatchSourceTimer)?

    /// How the stream asks the server to size its buffer (`pa_stream_flags_t`).
    enum LatencyRequest: Sendable, CaseIterable {
        /// `PA_STREAM_ADJUST_LATENCY`: tlength is the whole latency, the sink's included.
        case adjustLatency
        /// `PA_STREAM_EARLY_REQUESTS`: requests come every minreq, as a sound card's periods.
        case earlyRequests
        /// Neither: tlength is the stream's own buffer, the sink's latency comes on top.
        case bufferOnly
    }

    /// Starts a threaded main loop and connects a context to `server`.
    /// - Throws: `.deviceUnavailable` when libpulse cannot be loaded, the server cannot be
    ///   reached or does not answer within `timeout` seconds.
    init(name: String, format: AudioFormat, server: String?, applicationName: String, timeout: Double) throws {
        let pulse = try PulseAudioLibrary.shared.get()
        let mainloop = try pulse.startMainloop(threadName: "spool-pulse", owner: name)
        self.pulse = pulse
        self.mainloop = mainloop
        self.name = name
        self.format = format
        frameBytes = format.channelCount * MemoryLayout<Float>.size
        events = RenderThread.EventRelay(label: "spool.\(name).events") { status in
            AudioError(.deviceLost, "\(name): \(pulse.text(status))", underlying: pulse.status(status))
        }
        sinkWatcher = PulseAudioSinkWatcher(pulse: pulse, mainloop: mainloop, label: "spool.\(name).sinks") { [events] in
            events.report($0)
        }
        timingQueue = DispatchQueue(label: "spool.\(name).timing")
        do {
            try withMainloopLock { try connectContext(server: server, applicationName: applicationName, timeout: timeout) }
        } catch {
            close()
            throw error
        }
        let timer = DispatchSource.makeTimerSource(queue: timingQueue)
        timer.schedule(deadline: .now(), repeating: .milliseconds(100), leeway: .milliseconds(10))
        timer.setEventHandler { [weak self] in self?.requestTiming() }
        timer.activate()
        timingTimer = timer
    }

    /// Runs `body` with the main loop's lock held (`pa_threaded_mainloop_lock`); on the main
    /// loop's own thread, which holds it already, runs it as it is.
    func withMainloopLock<T>(_ body: () throws -> T) rethrows -> T {
        if pulse.mainloopInThread(mainloop) != 0 { return try body() }
        pulse.mainloopLock(mainloop)
        defer { pulse.mainloopUnlock(mainloop) }
        return try body()
    }

    /// Main loop lock: waits, letting the main loop run, until `done` says stop or `timeout`
    /// seconds passed. The state callbacks signal the main loop; a 2 ms poll covers the rest.
    /// - Returns: Whether `done` returned true before the deadline.
    private func wait(timeout: Double, until done: () throws -> Bool) rethrows -> Bool {
        try pulse.wait(on: mainloop, timeout: timeout, until: done)
    }

    /// Main loop lock: makes the context and waits until it is ready.
    private func connectContext(server: String?, applicationName: String, timeout: Double) throws {
        guard let context = pulse.makeContext(on: mainloop, applicationName: applicationName) else {
            throw AudioError(.deviceUnavailable, "\(name): cannot make a PulseAudio context")
        }
        self.context = context
        pulse.contextSetStateCallback(context, { context, userdata in
            guard let userdata else { return }
            Unmanaged<PulseAudioStream>.fromOpaque(userdata).takeUnretainedValue().contextStateChanged()
        }, Unmanaged.passUnretained(self).toOpaque())
        // No autospawn: a program that finds no server falls back, it does not start one.
        let serverName = server.map { "the sound server at \($0)" } ?? "the sound server"
        guard pulse.contextConnect(context, server, PA_CONTEXT_NOAUTOSPAWN, nil) >= 0 else {
            let error = pulse.contextErrno(context)
            throw AudioError(.deviceUnavailable, "\(name): cannot connect to \(serverName): \(pulse.text(error))",
                             underlying: pulse.status(error))
        }
        let ready = try wait(timeout: timeout) {
            switch pulse.contextGetState(context) {
            case PA_CONTEXT_READY: return true
            case PA_CONTEXT_FAILED, PA_CONTEXT_TERMINATED:
                let error = pulse.contextErrno(context)
                throw AudioError(.deviceUnavailable, "\(name): cannot connect to \(serverName): \(pulse.text(error))",
                                 underlying: pulse.status(error))
            default: return false
            }
        }
        guard ready else {
            throw AudioError(.deviceUnavailable, "\(name): \(serverName) did not answer within \(timeout) s")
        }
    }

    /// Main loop lock: makes the playback stream, connects it corked and waits until it is
    /// ready; reads back what the server granted.
    func connectPlayback(sink: String?, role: String, applicationName: String, request: OutputConfiguration, latency: LatencyRequest,
                         timeout: Double) throws {
        guard let context else { throw AudioError(.deviceUnavailable, "\(name): no context") }
        var spec = pa_sample_spec(format: spool_pulse_float32(), rate: UInt32(format.sampleRate.rounded()),
                                  channels: UInt8(format.channelCount))
        // Spool's channel order is WAV's (WAVE_FORMAT_EXTENSIBLE), which PulseAudio calls WAVEEX.
        var map = pa_channel_map()
        _ = pulse.channelMapInit(&map, UInt32(format.channelCount), PA_CHANNEL_MAP_WAVEEX)
        let properties = pulse.proplistNew()
        defer { pulse.proplistFree(properties) }
        _ = pulse.proplistSets(properties, PA_PROP_MEDIA_ROLE, role)
        _ = pulse.proplistSets(properties, PA_PROP_APPLICATION_NAME, applicationName)
        guard let stream = pulse.streamNew(context, "Playback", &spec, &map, properties) else {
            let error = pulse.contextErrno(context)
            throw AudioError(.deviceUnavailable, "\(name): cannot make a playback stream: \(pulse.text(error))",
                             underlying: pulse.status(error))
        }
        self.stream = stream
        let me = Unmanaged.passUnretained(self).toOpaque()
        pulse.streamSetStateCallback(stream, { _, userdata in
            guard let userdata else { return }
            Unmanaged<PulseAudioStream>.fromOpaque(userdata).takeUnretainedValue().streamStateChanged()
        }, me)
        pulse.streamSetWriteCallback(stream, { _, _, userdata in
            guard let userdata else { return }
            Unmanaged<PulseAudioStream>.fromOpaque(userdata).takeUnretainedValue().fill()
        }, me)
        pulse.streamSetUnderflowCallback(stream, { _, userdata in
            guard let userdata else { return }
            Unmanaged<PulseAudioStream>.fromOpaque(userdata).takeUnretainedValue().events.reportXrun()
        }, me)
        setEventCallback(stream)

        let period = UInt32(request.periodFrames * frameBytes)
        let target = period * UInt32(request.periodCount)
        // Measured on a null sink at 48 kHz (PulseAudioSoundServerTests prints them), tlength
        // and minreq granted for 128×2, 256×2 and 1024×3: PA_STREAM_ADJUST_LATENCY 280/128,
        // 536/256, 2560/1024 (prebuf cut to tlength − minreq + 1); PA_STREAM_EARLY_REQUESTS
        // 384, 768, 3072 (small requests rounded up to three periods); neither flag 280, 536,
        // 3072. ADJUST_LATENCY is used: the closest for small periods, 512 frames short of
        // the request for 1024×3, and the one where tlength covers the sink's latency too
        // (libpulse's documentation), so the latency heard stays within the request (37 ms
        // for 1024×3). The timing is asked for by the timing queue, not
        // PA_STREAM_AUTO_TIMING_UPDATE, whose requests allocate on the main loop's thread;
        // PA_STREAM_INTERPOLATE_TIMING is not used (`latencyNanoseconds` says why).
        // prebuf one period short of tlength: after an underrun, playback resumes once the
        // buffer is full but for the period being rendered (a start fills it whole, corked).
        var attributes = pa_buffer_attr(maxlength: UInt32.max, tlength: target, prebuf: target - period, minreq: period,
                                        fragsize: UInt32.max)
        var flags = PA_STREAM_START_CORKED.rawValue
        switch latency {
        case .adjustLatency: flags |= PA_STREAM_ADJUST_LATENCY.rawValue
        case .earlyRequests: flags |= PA_STREAM_EARLY_REQUESTS.rawValue
        case .bufferOnly: break
        }
        // A device opened on a named sink stays on it: when that sink goes, the device is lost
        // (as an ALSA device on a card is), rather than moved to the server's default.
        if sink != nil { flags |= PA_STREAM_DONT_MOVE.rawValue }
        guard pulse.streamConnectPlayback(stream, sink, &attributes, pa_stream_flags_t(rawValue: flags), nil, nil) >= 0 else {
            let error = pulse.contextErrno(context)
            throw AudioError(.deviceUnavailable, "\(name): cannot connect a playback stream: \(pulse.text(error))",
                             underlying: pulse.status(error))
        }
        let ready = try wait(timeout: timeout) {
            switch pulse.streamGetState(stream) {
            case PA_STREAM_READY: return true
            case PA_STREAM_FAILED, PA_STREAM_TERMINATED:
                let error = pulse.contextErrno(context)
                throw AudioError(.deviceUnavailable, "\(name): the server refused the playback stream: \(pulse.text(error))",
                                 underlying: pulse.status(error))
            default: return false
            }
        }
        guard ready else { throw AudioError(.deviceUnavailable, "\(name): the playback stream was not ready within \(timeout) s") }
        guard let attributes = pulse.streamGetBufferAttributes(stream)?.pointee, attributes.minreq >= frameBytes else {
            throw AudioError(.deviceUnavailable, "\(name): the server granted no buffer")
        }
        granted = attributes
        periodFrames = Int(attributes.minreq) / frameBytes
        // What the server may hold of the stream: its tlength and a period in flight.
        history = RewindHistory(capacity: Int(attributes.tlength) / frameBytes + 2 * periodFrames,
                                channelCount: format.channelCount)
    }

    /// Main loop thread: the context changed state. A failure while in use loses the device;
    /// any change wakes a waiting `init`.
    private func contextStateChanged() {
        guard let context else { return }
        let state = pulse.contextGetState(context)
        if state == PA_CONTEXT_FAILED || state == PA_CONTEXT_TERMINATED {
            if stream != nil, !closing.load(ordering: .acquiring) { serverGone.store(true, ordering: .releasing) }
            lose(status: pulse.contextErrno(context))
        }
        pulse.mainloopSignal(mainloop, 0)
    }

    /// Main loop thread: the stream changed state (failed, or killed when its sink went).
    private func streamStateChanged() {
        guard let stream, let context else { return }
        let state = pulse.streamGetState(stream)
        if state == PA_STREAM_FAILED || state == PA_STREAM_TERMINATED { lose(status: pulse.contextErrno(context)) }
        pulse.mainloopSignal(mainloop, 0)
    }

    /// Main loop thread: reports the device lost, once, unless `close()` is tearing it down.
    private func lose(status: Int32) {
        guard stream != nil, !closing.load(ordering: .acquiring), !lost.exchange(true, ordering: .acquiringAndReleasing) else {
            return
        }
        running.store(false, ordering: .releasing)
        // A stream fails with its context when the server goes: said before the loss is reported.
        if let context, pulse.contextGetState(context) != PA_CONTEXT_READY { serverGone.store(true, ordering: .releasing) }
        events.reportLoss(status: status == 0 ? Int32(PA_ERR_UNKNOWN.rawValue) : status)
    }

    /// Stops the main loop (joining its thread), then disconnects and frees the stream and the
    /// context, callbacks cleared first so that the disconnection calls none of them.
    func close() {
        guard !closing.exchange(true, ordering: .acquiringAndReleasing) else { return }
        timingTimer?.cancel()
        sinkWatcher.stop()
        if pulse.mainloopInThread(mainloop) != 0 {
            // The main loop cannot join itself (only a renderer that drops the device's last
            // reference from inside `render` gets here): its thread is left running, holding
            // the lock now; the stream and the context are disconnected with their callbacks
            // cleared, so nothing calls back into this object, and are left to the process.
            // A timing request waiting for the lock finds no stream and returns.
            disconnect(freeing: false)
            return
        }
        // No timing request runs (or will run) once the queue has drained.
        timingQueue.sync {}
        pulse.mainloopStop(mainloop)
        disconnect(freeing: true)
        pulse.mainloopFree(mainloop)
    }

    /// Clears the callbacks, then disconnects the stream and the context, and frees them when
    /// `freeing`.
    private func disconnect(freeing: Bool) {
        if let stream {
            pulse.streamSetStateCallback(stream, nil, nil)
            pulse.streamSetWriteCallback(stream, nil, nil)
            pulse.streamSetUnderflowCallback(stream, nil, nil)
            pulse.streamSetEventCallback(stream, nil, nil)
            _ = pulse.streamDisconnect(stream)
            if freeing { pulse.streamUnref(stream) }
            self.stream = nil
        }
        if let context {
            pulse.contextSetStateCallback(context, nil, nil)
            sinkWatcher.detach()
            pulse.contextDisconnect(context)
            if freeing { pulse.contextUnref(context) }
            self.context = nil
        }
    }
}
