import SpoolCore

extension AudioSession {
    /// How the session's audio lives with other audio. The corresponding Apple type is
    /// `AVAudioSession.Category`; Spool plays only, so the categories that record are refused.
    public enum Category: String, Sendable, CaseIterable, CustomStringConvertible {
        /// Sounds that mix with everything and are not interrupted by other sessions of the
        /// process (game effects, UI sounds). Sound-server role `event`.
        case ambient
        /// The default: not mixable, so activating it interrupts the process's other
        /// non-mixable sessions; it does not keep playing when another takes over. Role `game`.
        case soloAmbient
        /// Music and spoken audio the program is for: not mixable (unless `mixWithOthers`),
        /// interrupts the other non-mixable sessions when activated. Role `music`.
        case playback
        /// Recording: refused (`AudioError.Code.unsupported`), Spool plays only.
        case record
        /// Recording and playing (VoIP): refused, Spool plays only.
        case playAndRecord
        /// Offline processing with no playback: refused; render offline instead
        /// (`AudioPlayer.render(…)` on an offline back-end), which needs no session.
        case audioProcessing
        /// Several routes at once: refused, Spool plays to one output.
        case multiRoute

        /// The `media.role` the session's streams carry on the sound server, so its policies
        /// see them for what they are (PulseAudio's `module-role-cork` corks `music` and
        /// `video` while a `phone` stream plays).
        public var role: String {
            switch self {
            case .ambient: "event"
            case .soloAmbient: "game"
            case .playback, .record, .playAndRecord, .audioProcessing, .multiRoute: "music"
            }
        }

        /// Whether Spool offers the category.
        public var isSupported: Bool { self == .ambient || self == .soloAmbient || self == .playback }

        public var description: String { rawValue }
    }

    /// How a category behaves with other audio. The corresponding Apple type is
    /// `AVAudioSession.CategoryOptions`.
    public struct CategoryOptions: OptionSet, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// Mixes with the process's other sessions instead of interrupting them
        /// (`soloAmbient` and `playback`; `ambient` always mixes).
        public static let mixWithOthers = CategoryOptions(rawValue: 1)
        /// While the session is active, the process's other sessions play at a quarter of
        /// their volume (`AudioSession.duckedGain`); implies `mixWithOthers`.
        public static let duckOthers = CategoryOptions(rawValue: 2)
    }

    /// What `setActive(_:options:)` does besides. The corresponding Apple type is
    /// `AVAudioSession.SetActiveOptions`.
    public struct SetActiveOptions: OptionSet, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// On deactivation, tells the sessions this one interrupted that they may resume
        /// (`.ended(shouldResume: true)`); without it they hear `.ended(shouldResume: false)`.
        public static let notifyOthersOnDeactivation = SetActiveOptions(rawValue: 1)
    }

    /// The output the session plays to. The corresponding Apple type is
    /// `AVAudioSessionRouteDescription`.
    public struct Route: Sendable, Equatable, CustomStringConvertible {
        /// The output's name: `pulse`, `pulse:SINK`, `alsa:default`, `null`, OpenAL Soft's
        /// device name; `none` before the session has opened one.
        public var output: String
        /// The sound server's sink the output plays to, when known: the named one, or for an
        /// output that follows the server's default, that default.
        public var sink: String?

        /// Makes a route.
        public init(output: String, sink: String?) {
            self.output = output
            self.sink = sink
        }

        public var description: String { sink.map { "\(output) (\($0))" } ?? output }
    }
}

/// What an `AudioSession` reports: interruptions, route changes, the sound server lost and back.
public enum AudioSessionEvent: Sendable, Equatable, CustomStringConvertible {
    /// Another session or program took the audio (`.began`) or gave it back (`.ended`). The
    /// corresponding Apple notification is `AVAudioSession.interruptionNotification`.
    case interruption(AudioSessionInterruption)
    /// The output changed. The corresponding Apple notification is
    /// `AVAudioSession.routeChangeNotification`.
    case routeChange(AudioSessionRouteChange)
    /// The sound server went away; every player of the session paused. The corresponding
    /// Apple notification is `AVAudioSession.mediaServicesWereLostNotification`.
    case mediaServicesWereLost
    /// The sound server answers again; players play once asked. The corresponding Apple
    /// notification is `AVAudioSession.mediaServicesWereResetNotification`.
    case mediaServicesWereReset

    public var description: String {
        switch self {
        case .interruption(let interruption): "interruption \(interruption)"
        case .routeChange(let change): "route change \(change)"
        case .mediaServicesWereLost: "media services were lost"
        case .mediaServicesWereReset: "media services were reset"
        }
    }
}

/// An interruption's two ends. The corresponding Apple type is
/// `AVAudioSession.InterruptionType` with its options.
public enum AudioSessionInterruption: Sendable, Equatable, CustomStringConvertible {
    /// The session's players were paused.
    case began(AudioSessionInterruptionSource)
    /// The interruption is over; `shouldResume` says whether to play again
    /// (`AVAudioSession.InterruptionOptions.shouldResume`). Players resume only when the
    /// program asks (`play()`), or by themselves when the session's
    /// `resumesAfterInterruption` is set.
    case ended(shouldResume: Bool)

    public var description: String {
        switch self {
        case .began(let source): "began (\(source))"
        case .ended(let shouldResume): "ended\(shouldResume ? ", should resume" : "")"
        }
    }
}

/// Who interrupted a session.
public enum AudioSessionInterruptionSource: Sendable, Equatable, CustomStringConvertible {
    /// Another non-mixable session of the process became active.
    case otherSession
    /// The sound server corked the session's stream for a stream of a higher-priority role in
    /// another program (a `phone` call under `module-role-cork`).
    case soundServer

    public var description: String {
        switch self {
        case .otherSession: "another session of the process"
        case .soundServer: "the sound server"
        }
    }
}

/// Why and how the route changed. The corresponding Apple type is
/// `AVAudioSession.RouteChangeReason` with the previous route.
public struct AudioSessionRouteChange: Sendable, Equatable, CustomStringConvertible {
    /// Why, in AVAudioSession's terms.
    public enum Reason: Sendable, Equatable {
        /// An output appeared (a sink was added, or the server came back).
        case newDeviceAvailable
        /// The output in use went away (its sink removed, the device lost, the server gone):
        /// the session's players on it paused, as iOS pauses when headphones are pulled.
        case oldDeviceUnavailable
        /// `setCategory` changed the category, and with it the stream's role.
        case categoryChange
        /// The sound server's default output changed (the user chose another output): an
        /// output that follows the default moves to it and plays on.
        case override
    }

    /// Why.
    public var reason: Reason
    /// The output concerned, by the server's name, when there is one.
    public var device: String?
    /// The route before the change.
    public var previousRoute: AudioSession.Route

    /// Makes a route change.
    public init(reason: Reason, device: String?, previousRoute: AudioSession.Route) {
        self.reason = reason
        self.device = device
        self.previousRoute = previousRoute
    }

    public var description: String {
        "\(reason)\(device.map { " (\($0))" } ?? ""), from \(previousRoute)"
    }
}
