/// What a back-end's output reports, handed to any number of listeners: the back-end installs
/// one of these as its device's event handler, and the session and players add their own.
package final class OutputEventHandlers: Sendable {
    private struct State {
        var next = 0
        var handlers: [(VoiceHandlerToken, @Sendable (OutputDeviceEvent) -> Void)] = []
    }
    private let state = Locked(State())

    package init() {}

    /// Adds `handler`; the token removes it.
    package func add(_ handler: @escaping @Sendable (OutputDeviceEvent) -> Void) -> VoiceHandlerToken {
        state.withLock { s in
            s.next += 1
            let token = VoiceHandlerToken(rawValue: s.next)
            s.handlers.append((token, handler))
            return token
        }
    }

    /// Removes the handler `token` names; does nothing for one already removed.
    package func remove(_ token: VoiceHandlerToken) {
        state.withLock { $0.handlers.removeAll { $0.0 == token } }
    }

    /// Calls every handler with `event`, outside the lock, in the order they were added.
    package func dispatch(_ event: OutputDeviceEvent) {
        for handler in state.withLock({ $0.handlers.map(\.1) }) { handler(event) }
    }
}

extension PlaybackBackend {
    /// A back-end whose output reports nothing has no one to tell.
    public func addOutputEventHandler(_ handler: @escaping @Sendable (OutputDeviceEvent) -> Void) -> VoiceHandlerToken {
        VoiceHandlerToken(rawValue: 0)
    }

    /// Nothing to remove where nothing was added.
    public func removeOutputEventHandler(_ token: VoiceHandlerToken) {}

    /// The back-end's name, where it does not name its output.
    public var outputName: String { name }

    /// An output that does not say its period.
    public var outputPeriodFrames: Int { 0 }

    /// Outputs that carry no stream role ignore it.
    public func setOutputRole(_ role: String) {}

    /// Outputs without a server stream have nothing to cork.
    public func setOutputCorked(_ corked: Bool) {}
}
