/// Handlers in the order they were added, each under a token that removes it: what a back-end's
/// output events, a system sound's completions and the like keep (under a lock of their own).
package struct HandlerList<Token: Hashable, Handler> {
    private var next = 0
    private var entries: [(Token, Handler)] = []

    package init() {}

    /// Adds `handler` under a new token, numbered from 1 (`makeToken` wraps the number).
    package mutating func add(_ handler: Handler, makeToken: (Int) -> Token) -> Token {
        next += 1
        let token = makeToken(next)
        entries.append((token, handler))
        return token
    }

    /// Removes the handler `token` names; does nothing for one already removed.
    package mutating func remove(_ token: Token) { entries.removeAll { $0.0 == token } }

    /// The handlers, in the order they were added.
    package var handlers: [Handler] { entries.map(\.1) }
}

extension HandlerList: Sendable where Token: Sendable, Handler: Sendable {}

/// What a back-end's output reports, handed to any number of listeners: the back-end installs
/// one of these as its device's event handler, and the session and players add their own.
package final class OutputEventHandlers: Sendable {
    private let list = Locked(HandlerList<VoiceHandlerToken, @Sendable (OutputDeviceEvent) -> Void>())

    package init() {}

    /// Adds `handler`; the token removes it.
    package func add(_ handler: @escaping @Sendable (OutputDeviceEvent) -> Void) -> VoiceHandlerToken {
        list.withLock { $0.add(handler, makeToken: VoiceHandlerToken.init(rawValue:)) }
    }

    /// Removes the handler `token` names; does nothing for one already removed.
    package func remove(_ token: VoiceHandlerToken) { list.withLock { $0.remove(token) } }

    /// Calls every handler with `event`, outside the lock, in the order they were added.
    package func dispatch(_ event: OutputDeviceEvent) {
        for handler in list.withLock({ $0.handlers }) { handler(event) }
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
