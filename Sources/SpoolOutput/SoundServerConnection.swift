#if canImport(Glibc)
import Glibc
#endif
internal import CPulse
import Synchronization
import SpoolCore

/// A `SoundServerMonitor`'s threaded main loop, its context and the timer that reconnects it,
/// torn down in `close()`.
///
/// libpulse calls the callbacks below on the main loop's thread with the main loop's lock
/// held; they reach this object through an unretained pointer. The monitor keeps it alive and
/// calls `close()`, which stops the main loop (joining its thread) before anything is freed;
/// a callback holds the object only for its own length, so that when it outlives the monitor
/// its `deinit` frees nothing of libpulse's and may run on the main loop's thread.
final class SoundServerConnection: @unchecked Sendable {
    // Sendable: the C handles, `context` and `retryEvent` are guarded by the threaded main
    // loop's lock (libpulse holds it around every callback); the rest is immutable or atomic.
    private let pulse: PulseAudioLibrary
    private let mainloop: OpaquePointer
    private let server: String?
    private let applicationName: String
    private let retryInterval: Double
    private let events: RenderThread.EventRelay
    private let watcher: PulseAudioSinkWatcher
    /// Main loop lock: the context connected, or trying to.
    private var context: OpaquePointer?
    /// Main loop lock: the one-shot timer that connects again after a failure.
    private var retryEvent: OpaquePointer?
    private let connected = Atomic<Bool>(false)
    /// Set once the first connection succeeded: from then on a failure is retried, not thrown.
    private let retrying = Atomic<Bool>(false)
    /// Set by `close()`, so that the disconnection it makes is not reported as a loss.
    private let closing = Atomic<Bool>(false)
    /// Connections tried so far, the first included.
    let connectionAttempts = Atomic<Int>(0)

    /// Starts a threaded main loop, connects a context to `server` and reads its sinks.
    /// - Parameter awaitingReturn: The server is known to be gone: connect in the background,
    ///   every `retryInterval`, and report `.serverReturned` once it answers, instead of
    ///   throwing when it does not.
    /// - Throws: `.deviceUnavailable` when libpulse cannot be loaded, or (unless
    ///   `awaitingReturn`) the server cannot be reached or does not answer within `timeout` seconds.
    init(server: String?, applicationName: String, timeout: Double, retryInterval: Double, awaitingReturn: Bool = false) throws {
        let pulse = try PulseAudioLibrary.shared.get()
        let name = "pulse monitor"
        let mainloop = try pulse.startMainloop(threadName: "spool-pulse-monitor", owner: name)
        self.pulse = pulse
        self.mainloop = mainloop
        self.server = server
        self.applicationName = applicationName
        self.retryInterval = retryInterval
        events = RenderThread.EventRelay(label: "spool.pulse.monitor.events") { status in
            AudioError(.deviceLost, "\(name): \(pulse.text(status))", underlying: pulse.status(status))
        }
        watcher = PulseAudioSinkWatcher(pulse: pulse, mainloop: mainloop, label: "spool.pulse.monitor.sinks") { [events] in
            events.report($0)
        }
        if awaitingReturn {
            retrying.store(true, ordering: .releasing)
            withMainloopLock {
                makeRetryEvent()
                if !connect() { scheduleRetry() }
            }
            return
        }
        let serverName = server.map { "the sound server at \($0)" } ?? "the sound server"
        let failure: AudioError? = withMainloopLock {
            makeRetryEvent()
            let started = connect()
            guard let context else { return AudioError(.deviceUnavailable, "\(name): cannot make a PulseAudio context") }
            let answered = started && pulse.wait(on: mainloop, timeout: timeout) {
                let state = pulse.contextGetState(context)
                return state == PA_CONTEXT_READY || state == PA_CONTEXT_FAILED || state == PA_CONTEXT_TERMINATED
            }
            if connected.load(ordering: .acquiring) { return nil }
            guard answered || !started else {
                return AudioError(.deviceUnavailable, "\(name): \(serverName) did not answer within \(timeout) s")
            }
            let error = pulse.contextErrno(context)
            return AudioError(.deviceUnavailable, "\(name): cannot connect to \(serverName): \(pulse.text(error))",
                              underlying: pulse.status(error))
        }
        if let failure {
            close()
            throw failure
        }
        retrying.store(true, ordering: .releasing)
        watcher.synchronize()
    }

    /// Sets what to call, on the event queue, for each route change.
    func setEventHandler(_ handler: (@Sendable (OutputRouteChange) -> Void)?) {
        guard let handler else { return events.setHandler(nil) }
        events.setHandler { event in
            if case .routeChanged(let change) = event { handler(change) }
        }
    }

    /// The server's sinks by name, in the order the server numbered them.
    var sinks: [String] { watcher.sinks }

    /// The server's default sink, when known.
    var defaultSink: String? { watcher.defaultSink }

    /// Whether the context is connected now.
    var isConnected: Bool { connected.load(ordering: .acquiring) }

    /// Runs `body` with the main loop's lock held (`pa_threaded_mainloop_lock`).
    private func withMainloopLock<T>(_ body: () throws -> T) rethrows -> T {
        pulse.mainloopLock(mainloop)
        defer { pulse.mainloopUnlock(mainloop) }
        return try body()
    }

    /// Main loop lock: makes the (disabled) timer that `scheduleRetry` arms.
    private func makeRetryEvent() {
        guard let api = pulse.mainloopAPI(mainloop), let timeNew = api.pointee.time_new else { return }
        retryEvent = timeNew(api, nil, { _, _, _, userdata in
            guard let userdata else { return }
            Unmanaged<SoundServerConnection>.fromOpaque(userdata).takeUnretainedValue().retry()
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Main loop lock: frees the last context, if any, and connects a new one
    /// (`PA_CONTEXT_NOAUTOSPAWN`: a monitor never starts a server). The state callback goes on.
    /// - Returns: Whether the connection is under way.
    private func connect() -> Bool {
        dropContext()
        connectionAttempts.add(1, ordering: .relaxed)
        guard let context = pulse.makeContext(on: mainloop, applicationName: applicationName) else { return false }
        self.context = context
        pulse.contextSetStateCallback(context, { _, userdata in
            guard let userdata else { return }
            Unmanaged<SoundServerConnection>.fromOpaque(userdata).takeUnretainedValue().contextStateChanged()
        }, Unmanaged.passUnretained(self).toOpaque())
        return pulse.contextConnect(context, server, PA_CONTEXT_NOAUTOSPAWN, nil) >= 0
    }

    /// Main loop lock: clears the context's callbacks, disconnects and frees it.
    private func dropContext() {
        guard let context else { return }
        watcher.detach()
        pulse.contextSetStateCallback(context, nil, nil)
        pulse.contextDisconnect(context)
        pulse.contextUnref(context)
        self.context = nil
    }

    /// Main loop thread: the context changed state. Ready: the sinks are read again (the
    /// server is back when it had been lost). Failed: the server is lost, reported once, and a
    /// new connection is tried `retryInterval` later.
    private func contextStateChanged() {
        guard let context else { return }
        switch pulse.contextGetState(context) {
        case PA_CONTEXT_READY:
            let returning = retrying.load(ordering: .acquiring)
            watcher.attach(context, sync: returning ? .serverReturned : .baseline)
            connected.store(true, ordering: .releasing)
        case PA_CONTEXT_FAILED, PA_CONTEXT_TERMINATED:
            if connected.exchange(false, ordering: .acquiringAndReleasing) && !closing.load(ordering: .acquiring) {
                watcher.detach()
                events.report(OutputRouteChange(reason: .serverLost))
            }
            // Before the first connection succeeded, `init` reads the error and throws it.
            if retrying.load(ordering: .acquiring) { scheduleRetry() }
        default: break
        }
        pulse.mainloopSignal(mainloop, 0)
    }

    /// Main loop lock: arms the retry timer `retryInterval` from now (a one-shot event on the
    /// main loop, wall-clock time as `pa_mainloop_api.time_restart` takes it).
    private func scheduleRetry() {
        guard !closing.load(ordering: .acquiring), let retryEvent, let api = pulse.mainloopAPI(mainloop),
              let restart = api.pointee.time_restart else { return }
        var when = timeval()
        gettimeofday(&when, nil)
        let micros = Int(when.tv_usec) + Int(retryInterval * 1e6)
        when.tv_sec += micros / 1_000_000
        when.tv_usec = suseconds_t(micros % 1_000_000)
        restart(retryEvent, &when)
    }

    /// Main loop thread: the retry timer fired; a connection that fails at once is retried later.
    private func retry() {
        guard !closing.load(ordering: .acquiring) else { return }
        if !connect() { scheduleRetry() }
    }

    /// Stops the watcher's queue and the main loop (joining its thread), then frees the
    /// timer, the context and the main loop. Never on the main loop's thread: only the monitor
    /// calls it, which no callback holds.
    func close() {
        guard !closing.exchange(true, ordering: .acquiringAndReleasing) else { return }
        watcher.stop()
        pulse.mainloopStop(mainloop)
        if let retryEvent, let free = pulse.mainloopAPI(mainloop)?.pointee.time_free { free(retryEvent) }
        retryEvent = nil
        dropContext()
        pulse.mainloopFree(mainloop)
    }
}
