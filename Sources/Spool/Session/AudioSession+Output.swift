import Foundation
import SpoolCore

extension AudioSession {
    // MARK: The output

    /// The output the session's players play on unless they name one: the one given at
    /// creation, or opened on first use on the system's default output (the sound server,
    /// then ALSA, then the null device with a one-line notice) at the preferred sample rate
    /// and I/O buffer duration, its stream carrying the category's role. An output that was
    /// lost is opened again.
    /// - Returns: The back-end.
    /// - Throws: The device's error when not even the null device opens.
    public func backend() throws -> any PlaybackBackend {
        let (existing, configuration, role, opener) = state.withLock { s in
            if let backend = s.backend, !s.reopens || !s.lost.contains(ObjectIdentifier(backend)) {
                return (Optional(backend), OutputConfiguration(), "", s.opener)
            }
            return (nil, Self.configuration(s), s.category.role, s.opener)
        }
        if let existing { return existing }
        let backend = try opener?(configuration, role) ?? Self.openOutput(configuration: configuration, role: role)
        state.withLock { s in
            if let old = s.backend { s.retired.append(WeakBackend(backend: old)) }
            s.backend = backend
        }
        watch(backend)
        return backend
    }

    /// The output to play on instead of `old` when `old` is an output of the session's own
    /// that was lost (now, or before the one it has), and the session opens its outputs
    /// itself: the current one, opened anew when it must be; nil when none can be, or need be.
    func replacement(for old: any PlaybackBackend) -> (any PlaybackBackend)? {
        let replace = state.withLock { s in
            s.retired.removeAll { $0.backend == nil }
            let ownLost = s.backend === old && s.lost.contains(ObjectIdentifier(old))
            return s.reopens && (ownLost || s.retired.contains { $0.backend === old })
        }
        guard replace, let backend = try? backend(), backend !== old else { return nil }
        return backend
    }

    /// What the output is opened with: the preferred rate (48 kHz when none) and, when an I/O
    /// buffer duration is preferred, periods of that duration (at least 16 frames), two of
    /// them; 1024 × 3 frames otherwise.
    static func configuration(_ s: State) -> OutputConfiguration {
        let rate = s.preferredSampleRate ?? 48_000
        guard let duration = s.preferredIOBufferDuration else { return OutputConfiguration(sampleRate: rate) }
        let frames = min(65_536, max(16, Int((duration * rate).rounded())))
        return OutputConfiguration(sampleRate: rate, periodFrames: frames, periodCount: 2)
    }

    /// The route: the output's name, and the sink it plays to when known.
    public var currentRoute: Route { state.withLock { Self.route($0) } }

    static func route(_ s: State) -> Route {
        guard let backend = s.backend else { return Route(output: "none", sink: nil) }
        return Route(output: backend.outputName, sink: s.sink ?? Self.namedSink(backend.outputName))
    }

    /// The sink an output opened by name plays to: `pulse:NAME` → `NAME`.
    static func namedSink(_ output: String) -> String? {
        output.hasPrefix("pulse:") ? String(output.dropFirst("pulse:".count)) : nil
    }

    /// Asks for a sample rate: the output opened next runs at it. The corresponding Apple
    /// call is `setPreferredSampleRate(_:)`.
    /// - Throws: `.invalidParameter` outside 8 000…192 000 Hz (NaN and ±∞ included).
    public func setPreferredSampleRate(_ rate: Double) throws {
        guard rate.isFinite, (8_000...192_000).contains(rate) else {
            throw AudioError(.invalidParameter, "preferred sample rate must be within 8000...192000 Hz, not \(rate)")
        }
        state.withLock { $0.preferredSampleRate = rate }
    }

    /// Asks for an I/O buffer duration (the device's period): the output opened next uses it.
    /// The corresponding Apple call is `setPreferredIOBufferDuration(_:)`.
    /// - Throws: `.invalidParameter` outside 0.000 3…1 s (NaN and ±∞ included).
    public func setPreferredIOBufferDuration(_ seconds: Double) throws {
        guard seconds.isFinite, (0.000_3...1).contains(seconds) else {
            throw AudioError(.invalidParameter, "preferred I/O buffer duration must be within 0.0003...1 s, not \(seconds)")
        }
        state.withLock { $0.preferredIOBufferDuration = seconds }
    }

    /// The rate asked for, if any. The corresponding Apple property is `preferredSampleRate`.
    public var preferredSampleRate: Double? { state.withLock { $0.preferredSampleRate } }

    /// The I/O buffer duration asked for, if any. The corresponding Apple property is
    /// `preferredIOBufferDuration`.
    public var preferredIOBufferDuration: Double? { state.withLock { $0.preferredIOBufferDuration } }

    /// The rate the output really runs at (before it is opened, what it would be asked for).
    /// The corresponding Apple property is `sampleRate`.
    public var sampleRate: Double {
        state.withLock { s in s.backend?.outputFormat.sampleRate ?? Self.configuration(s).sampleRate ?? 48_000 }
    }

    /// The output's period as the device granted it, in seconds (0 before it is opened). The
    /// corresponding Apple property is `ioBufferDuration`.
    public var ioBufferDuration: Double {
        state.withLock { s in
            guard let backend = s.backend else { return 0 }
            return Double(backend.outputPeriodFrames) / backend.outputFormat.sampleRate
        }
    }

    /// Seconds the output holds ahead of the speaker (0 before it is opened). The
    /// corresponding Apple property is `outputLatency`.
    public var outputLatency: Double { state.withLock { $0.backend?.outputLatency ?? 0 } }

    // MARK: What the outputs report

    /// Hears `backend`'s reports from now on (once per back-end); the output the session
    /// opened or was given also takes the category's role.
    func watch(_ backend: any PlaybackBackend) {
        let id = ObjectIdentifier(backend)
        let (new, role) = state.withLock { s -> (Bool, String?) in
            // Forget the outputs that are gone, so that another one made at the same address
            // is not taken for them.
            s.watched = s.watched.filter { $0.value.backend.backend != nil }
            s.lost = s.lost.filter { s.watched[$0] != nil }
            return (s.watched[id] == nil, s.backend === backend ? s.category.role : nil)
        }
        guard new else { return }
        let token = backend.addOutputEventHandler { [weak self] event in
            guard let session = self else { return }
            session.eventQueue.async { session.handle(event, from: id) }
        }
        state.withLock { $0.watched[id] = (WeakBackend(backend: backend), token) }
        if let role { backend.setOutputRole(role) }
    }

    /// Stops hearing `backend` once no participant plays on it, unless it is the session's own.
    func unwatch(_ backend: any PlaybackBackend) {
        let id = ObjectIdentifier(backend)
        let token = state.withLock { s -> VoiceHandlerToken? in
            let used = s.backend === backend || s.participants.contains { participant in
                participant.participant?.participantBackend.map { ObjectIdentifier($0) == id } ?? false
            }
            guard !used else { return nil }
            return s.watched.removeValue(forKey: id)?.token
        }
        if let token { backend.removeOutputEventHandler(token) }
    }

    /// On the session's queue: what an output reported.
    func handle(_ event: OutputDeviceEvent, from id: ObjectIdentifier) {
        switch event {
        case .xrun: break
        case .corkRequested(true):
            // Paused on the server too, so that it asks for the stream again when the call ends.
            interrupt(by: .soundServer)
            watchedBackend(id)?.setOutputCorked(true)
        case .corkRequested(false):
            watchedBackend(id)?.setOutputCorked(false)
            endInterruption(from: .soundServer, shouldResume: true)
        case .deviceLost: outputGone(id, device: nil)
        case .routeChanged(let change):
            switch change.reason {
            case .newDeviceAvailable:
                send(.routeChange(AudioSessionRouteChange(reason: .newDeviceAvailable, device: change.device,
                                                          previousRoute: currentRoute)))
            case .oldDeviceUnavailable:
                // Only the output in use going away concerns the session.
                let ours = state.withLock { s in
                    s.watched[id]?.backend.backend.map { Self.namedSink($0.outputName) ?? s.sink } ?? nil
                }
                if ours == change.device { outputGone(id, device: change.device) }
            case .defaultDeviceChanged:
                let previous = currentRoute
                state.withLock { s in if let backend = s.backend, Self.namedSink(backend.outputName) == nil { s.sink = change.device } }
                send(.routeChange(AudioSessionRouteChange(reason: .override, device: change.device, previousRoute: previous)))
            case .serverLost:
                outputGone(id, device: nil)
                send(.mediaServicesWereLost)
            case .serverReturned:
                // The output that reported it stays lost (its stream died with the server): a
                // session that opens its own output opens a new one at the next play().
                send(.routeChange(AudioSessionRouteChange(reason: .newDeviceAvailable, device: change.defaultDevice,
                                                          previousRoute: currentRoute)))
                send(.mediaServicesWereReset)
            }
        }
    }

    func watchedBackend(_ id: ObjectIdentifier) -> (any PlaybackBackend)? {
        state.withLock { $0.watched[id]?.backend.backend }
    }

    /// A player's voice on `backend` ended because its device went away: the session takes
    /// the loss in now (its route change included) when the output's own report has not
    /// reached it yet, and not a second time when it comes.
    func outputLost(_ backend: any PlaybackBackend) {
        let id = ObjectIdentifier(backend)
        guard state.withLock({ $0.watched[id] != nil }) else { return }
        outputGone(id, device: nil)
    }

    /// The output `id` went away: its players pause, once, and a route change says so.
    private func outputGone(_ id: ObjectIdentifier, device: String?) {
        let (first, route, players) = state.withLock { s -> (Bool, Route, [any AudioSessionParticipant]) in
            let first = s.lost.insert(id).inserted
            let players = s.participants.compactMap(\.participant).filter { participant in
                participant.participantBackend.map { ObjectIdentifier($0) == id } ?? false
            }
            return (first, Self.route(s), players)
        }
        guard first else { return }
        for player in players where player.isPlayingInSession { player.pauseForSession(.outputLost) }
        send(.routeChange(AudioSessionRouteChange(reason: .oldDeviceUnavailable, device: device ?? route.sink,
                                                  previousRoute: route)))
    }
}
