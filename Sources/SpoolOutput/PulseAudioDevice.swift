internal import CPulse
import SpoolCore
import Dispatch

/// An output device on the PulseAudio server itself (libpulse's asynchronous API), without
/// ALSA's plug-in in between: one playback stream of Float32 frames on a threaded main loop.
///
/// The server asks for audio through the stream's write callback, on the main loop's thread;
/// the device renders whole periods (the granted `minreq`) straight into the server's
/// shared-memory buffer. The stream's `media.role` and `application.name` are set, so the
/// server's policies (role-based ducking, volume restore) see what plays. A stream whose sink
/// or server goes away is reported as `.deviceLost`; the server's requests that the stream
/// pause and resume (`module-role-cork`) as `.corkRequested`, which the device leaves to its
/// owner; sinks coming and going and the default sink changing as `.routeChanged`. libpulse
/// is loaded with `dlopen` when the first device is opened, never linked. The corresponding
/// Apple object is the output unit an Audio Queue renders to.
public final class PulseAudioDevice: OutputDevice {
    /// `pulse`, or `pulse:<sink>` for a named sink.
    public let name: String
    /// Float32 at the configured rate (48 kHz when none) and channel count; the server converts
    /// to its sink.
    public let format: AudioFormat
    /// Frames per render call: the `minreq` the server granted.
    public let periodFrames: Int
    /// The granted `tlength` in periods of `periodFrames`, rounded.
    public let periodCount: Int
    /// What the server granted for the stream's buffer (`pa_stream_get_buffer_attr`), in frames.
    public let bufferAttributes: BufferAttributes

    let stream: PulseAudioStream
    /// Where the device connected (`nil`: libpulse's default), for the watch on the server's return.
    private let server: String?
    private let applicationName: String
    private let serverReturn = ServerReturnWatch()

    /// A playback stream's buffer, in frames. The corresponding C type is `pa_buffer_attr`.
    public struct BufferAttributes: Sendable, Equatable, CustomStringConvertible {
        /// The most the server's buffer for the stream holds (`maxlength`).
        public var maxLength: Int
        /// How full the server keeps the buffer: the latency aimed at (`tlength`).
        public var targetLength: Int
        /// What must be buffered before playback starts, or restarts after an underrun (`prebuf`).
        public var prebuffer: Int
        /// The least the server asks for at a time (`minreq`).
        public var minimumRequest: Int

        /// The four figures with their C names, e.g. `tlength 2560, minreq 1024, prebuf 1537,
        /// maxlength 524288 frames`.
        public var description: String {
            "tlength \(targetLength), minreq \(minimumRequest), prebuf \(prebuffer), maxlength \(maxLength) frames"
        }
    }

    /// Connects to the sound server and opens a corked playback stream on it.
    /// The corresponding PulseAudio calls are `pa_context_connect`, `pa_stream_new_with_proplist`
    /// and `pa_stream_connect_playback`.
    /// - Parameters:
    ///   - sink: The sink to play to, by name; `nil` for the server's default, which the stream
    ///     then follows. A stream on a named sink stays there (`PA_STREAM_DONT_MOVE`).
    ///   - configuration: Rate (`nil` for 48 kHz), channels, and the period size and count
    ///     asked for, as `tlength` = size × count and `minreq` = size; read `periodFrames`,
    ///     `periodCount` and `bufferAttributes` for what the server granted.
    ///   - role: The stream's `media.role` (`music`, `game`, `event`, `phone`…).
    ///   - applicationName: The stream's and the context's `application.name`.
    /// - Throws: `AudioError.Code.invalidParameter` for a bad configuration;
    ///   `AudioError.Code.deviceUnavailable` (`pulse…: <reason>`) when libpulse cannot be
    ///   loaded, no server answers within 2 s, or the server refuses the stream.
    public convenience init(sink: String? = nil, configuration: OutputConfiguration, role: String = "music",
                            applicationName: String = "Spool") throws {
        try self.init(sink: sink, server: nil, configuration: configuration, role: role, applicationName: applicationName)
    }

    /// As the public initializer, on a given server (`pa_context_connect`'s server argument,
    /// e.g. `unix:/run/user/1000/pulse/native`), and with a choice of how the buffer is
    /// requested: what the tests measure.
    init(sink: String? = nil, server: String?, configuration: OutputConfiguration, role: String = "music",
         applicationName: String = "Spool", latency: PulseAudioStream.LatencyRequest = .adjustLatency,
         timeout: Double = 2) throws {
        let configuration = try configuration.validated()
        let name = sink.map { "pulse:\($0)" } ?? "pulse"
        let format = try AudioFormat(sampleRate: configuration.sampleRate ?? NullDevice.defaultSampleRate,
                                     channelCount: configuration.channelCount)
        let start = HostTime.now()
        let stream = try PulseAudioStream(name: name, format: format, server: server, applicationName: applicationName,
                                          timeout: timeout)
        do {
            let remaining = max(0.1, timeout - HostTime.seconds(from: start, to: HostTime.now()))
            try stream.withMainloopLock {
                try stream.connectPlayback(sink: sink, role: role, applicationName: applicationName, request: configuration,
                                           latency: latency, timeout: remaining)
            }
        } catch {
            stream.close()
            throw error
        }
        stream.watchSinks()
        self.stream = stream
        self.server = server
        self.applicationName = applicationName
        roleName = Locked(role)
        self.name = name
        self.format = format
        let granted = stream.granted, frameBytes = stream.frameBytes
        bufferAttributes = BufferAttributes(
            maxLength: Int(granted.maxlength) / frameBytes, targetLength: Int(granted.tlength) / frameBytes,
            prebuffer: Int(granted.prebuf) / frameBytes, minimumRequest: Int(granted.minreq) / frameBytes)
        periodFrames = stream.periodFrames
        periodCount = max(1, Int((Double(granted.tlength) / Double(granted.minreq)).rounded()))
    }

    // The main loop stops (its thread joined) before the stream and the context are freed.
    deinit {
        serverReturn.stop()
        stream.close()
    }

    /// Whether the stream is playing from a renderer (false after `stop()` or once lost).
    public var isRunning: Bool { stream.running.load(ordering: .acquiring) }

    /// Underruns the server reported (`pa_stream_set_underflow_callback`).
    public var xrunCount: Int { stream.events.xrunCount }

    /// How long until a frame written now is heard, in frames: what the stream and the sink
    /// hold by the last timing update (`pa_stream_get_timing_info`, asked for every 100 ms),
    /// less the time since; 0 when stopped.
    public var queuedFrames: Int { stream.withMainloopLock { stream.latencyFrames() } }

    /// Sink and server events the server has sent the device's context: a window of render
    /// calls in which one came is not a measure of the render path alone, since libpulse
    /// parses a new sink's description on the same thread.
    var sinkEventCount: Int { stream.sinkWatcher.eventCount.load(ordering: .relaxed) }

    /// The stream's index on the server (`pa_stream_get_index`): its `Sink Input #` in `pactl`.
    var sinkInputIndex: Int { stream.withMainloopLock { stream.stream.map { Int(stream.pulse.streamGetIndex($0)) } ?? -1 } }

    /// The stream's `media.role`: the one it was made with, or the last `setRole(_:)`.
    public var role: String { roleName.withLock { $0 } }
    private let roleName: Locked<String>

    /// Changes the stream's `media.role` on the server (`pa_stream_proplist_update`), so the
    /// server's policies (`module-role-cork`) see it from now on. Does not wait for the reply.
    public func setRole(_ role: String) {
        roleName.withLock { $0 = role }
        stream.withMainloopLock { stream.updateRole(role) }
    }

    /// Corks the playing stream (`pa_stream_cork`) without stopping it, or uncorks it: what
    /// a session does when the server asks (`OutputDeviceEvent.corkRequested`), so that the
    /// server knows the stream paused and asks it to uncork when the call ends. While corked,
    /// the server asks for nothing and the renderer is not called. Does nothing while stopped.
    public func setCorked(_ corked: Bool) {
        stream.withMainloopLock {
            guard stream.running.load(ordering: .acquiring) else { return }
            stream.cork(corked)
        }
    }

    /// Fills the server's buffer from `renderer` and uncorks the stream.
    /// The corresponding Apple call is `AudioQueueStart`; the PulseAudio call is `pa_stream_cork(stream, 0, …)`.
    /// - Parameter renderer: Asked for `periodFrames` frames at a time, on the main loop's thread.
    /// - Throws: `AudioError.Code.invalidState` when already running; `.deviceLost` once the
    ///   stream has failed.
    public func start(renderer: any AudioRenderer) throws {
        try stream.withMainloopLock { try stream.start(renderer: renderer) }
    }

    /// Stops pulling, then corks the stream and drops what the server still holds
    /// (`pa_stream_cork`, `pa_stream_flush`). Returns once the renderer will not be called
    /// again. The corresponding Apple call is `AudioQueueStop(queue, true)`.
    public func stop() {
        stream.withMainloopLock { stream.stop() }
    }

    /// Always: the stream keeps what it wrote, and writes what the server has not read yet
    /// again (`pa_stream_write` with a negative relative seek).
    public var rewindSupport: RewindSupport { .available }

    /// Asks the server where it reads, then re-mixes what the stream holds on the server past
    /// that and a 2 ms margin, and writes it again over itself (never what the sink has taken).
    /// Does nothing while stopped.
    public func requestRewind() { stream.requestRewind() }

    /// Rewinds carried out, and requests that found nothing to rewrite.
    public var rewindCounts: (performed: Int, declined: Int) {
        (stream.rewind.performed.load(ordering: .relaxed), stream.rewind.declined.load(ordering: .relaxed))
    }

    /// Sets what to call, on a queue of the device's own (never the main loop's thread), when
    /// the server reports an underrun, the stream goes away, the server asks the stream to
    /// pause or resume (`.corkRequested`), or a sink comes or goes or becomes the default
    /// (`.routeChanged`). When the server itself goes away, the handler hears
    /// `.routeChanged(.serverLost)` and then `.deviceLost`; the device stays lost, but watches
    /// for the server (a context of its own, tried every 250 ms) and reports
    /// `.routeChanged(.serverReturned)` once it answers again, so that its owner may open a
    /// new device.
    /// - Parameter handler: The handler, or `nil` to stop listening.
    public func setEventHandler(_ handler: (@Sendable (OutputDeviceEvent) -> Void)?) {
        guard let handler else {
            serverReturn.stop()
            return stream.events.setHandler(nil)
        }
        let watch = serverReturn, server = self.server, applicationName = self.applicationName
        // The stream holds its relay, which holds this handler: the stream is held weakly.
        stream.events.setHandler { [weak stream] event in
            guard case .deviceLost = event, stream?.serverGone.load(ordering: .acquiring) == true else { return handler(event) }
            handler(.routeChanged(OutputRouteChange(reason: .serverLost)))
            handler(event)
            watch.start(server: server, applicationName: applicationName) { handler(.routeChanged($0)) }
        }
    }

    /// Whether the device is watching for its lost server's return.
    var isWatchingForServer: Bool { serverReturn.isWatching }
}

/// A lost device's watch on its server: a `SoundServerConnection` that connects in the
/// background until the server answers, reports its return once, and closes.
final class ServerReturnWatch: Sendable {
    private let connection = Locked<SoundServerConnection?>(nil)

    var isWatching: Bool { connection.withLock { $0 != nil } }

    /// Starts watching, unless already; `returned` is called once, on the connection's event queue.
    func start(server: String?, applicationName: String, returned: @escaping @Sendable (OutputRouteChange) -> Void) {
        connection.withLock { current in
            guard current == nil else { return }
            guard let watch = try? SoundServerConnection(server: server, applicationName: applicationName, timeout: 2,
                                                         retryInterval: 0.25, awaitingReturn: true) else { return }
            watch.setEventHandler { [weak self] change in
                guard change.reason == .serverReturned else { return }
                returned(change)
                self?.stop()
            }
            current = watch
        }
    }

    /// Stops watching. The connection is closed off its own queues (closing joins its main loop).
    func stop() {
        guard let watch = connection.withLock({ current -> SoundServerConnection? in
            defer { current = nil }
            return current
        }) else { return }
        DispatchQueue.global().async { watch.close() }
    }
}
