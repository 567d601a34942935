import SpoolCore

/// Watches the PulseAudio server's outputs without playing anything: its sinks, its default
/// sink, and the server itself going away and coming back. What an audio session keeps one
/// of per process to hear about route changes.
///
/// A threaded main loop and a context of its own, no stream. Sinks added and removed and the
/// default sink changed (`pa_context_subscribe`) are reported as the `PulseAudioDevice`
/// reports them; when the context fails (the server stopped or crashed) the monitor reports
/// `.serverLost`, forgets the sinks and tries to connect again every 250 ms, and reports
/// `.serverReturned` once the server answers and its sinks are known again. The corresponding
/// Apple notifications are `AVAudioSession.routeChangeNotification` and
/// `.mediaServicesWereLostNotification` / `.mediaServicesWereResetNotification`.
public final class SoundServerMonitor: Sendable {
    private let connection: SoundServerConnection

    /// Connects to the sound server and reads its sinks.
    /// The corresponding PulseAudio calls are `pa_context_connect`, `pa_context_subscribe` and
    /// `pa_context_get_sink_info_list`.
    /// - Parameter applicationName: The context's `application.name`.
    /// - Throws: `AudioError.Code.deviceUnavailable` (`pulse monitor: <reason>`) when libpulse
    ///   cannot be loaded or no server answers within 2 s.
    public convenience init(applicationName: String = "Spool") throws {
        try self.init(server: nil, applicationName: applicationName)
    }

    /// As the public initializer, on a given server (`pa_context_connect`'s server argument,
    /// e.g. `unix:/run/user/1000/pulse/native`): what the tests use.
    init(server: String?, applicationName: String = "Spool", timeout: Double = 2, retryInterval: Double = 0.25) throws {
        connection = try SoundServerConnection(server: server, applicationName: applicationName, timeout: timeout,
                                               retryInterval: retryInterval)
    }

    // The main loop stops (its thread joined) before the context and the timer are freed.
    deinit { connection.close() }

    /// Sets what to call, on a queue of the monitor's own, when the server's outputs change or
    /// the server goes away (`.serverLost`) or comes back (`.serverReturned`).
    /// - Parameter handler: The handler, or `nil` to stop listening.
    public func setEventHandler(_ handler: (@Sendable (OutputRouteChange) -> Void)?) {
        connection.setEventHandler(handler)
    }

    /// The server's sinks by name, in the order the server numbered them; empty while the
    /// server is lost.
    public var sinks: [String] { connection.sinks }

    /// The server's default sink; `nil` while the server is lost (or has no sink).
    public var defaultSink: String? { connection.defaultSink }

    /// Whether the monitor is connected to the server now (false between `.serverLost` and
    /// `.serverReturned`).
    public var isConnected: Bool { connection.isConnected }

    /// Connections tried so far, the first included.
    var connectionAttempts: Int { connection.connectionAttempts.load(ordering: .relaxed) }
}
