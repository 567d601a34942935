/// A change to the outputs a sound server offers: what an `OutputDeviceEvent.routeChanged`
/// and a sound-server monitor report. The corresponding Apple notification is
/// `AVAudioSession.routeChangeNotification`, its reason `AVAudioSession.RouteChangeReason`.
public struct OutputRouteChange: Sendable, Equatable {
    /// Why the route changed.
    public enum Reason: Sendable {
        /// An output appeared (a sink was added). The Apple reason is `.newDeviceAvailable`.
        case newDeviceAvailable
        /// An output went away (a sink was removed). The Apple reason is `.oldDeviceUnavailable`.
        case oldDeviceUnavailable
        /// The server's default output changed (`pactl set-default-sink`, or the default
        /// sink went). The Apple reason closest to it is `.override`.
        case defaultDeviceChanged
        /// The sound server went away: every output with it.
        case serverLost
        /// The sound server answers again, after `serverLost`.
        case serverReturned
    }

    /// Why the route changed.
    public var reason: Reason
    /// The output concerned, by the server's name for it (a PulseAudio sink name); for
    /// `defaultDeviceChanged` the new default; `nil` for the server's own coming and going.
    public var device: String?
    /// The server's default output after the change, when known; `nil` once the server is lost.
    public var defaultDevice: String?

    /// Makes a route change.
    /// - Parameters:
    ///   - reason: Why the route changed.
    ///   - device: The output concerned, by name, if any.
    ///   - defaultDevice: The server's default output after the change, when known.
    public init(reason: Reason, device: String? = nil, defaultDevice: String? = nil) {
        self.reason = reason
        self.device = device
        self.defaultDevice = defaultDevice
    }
}
