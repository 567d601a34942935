import SpoolCore

/// Which output device to open, as a program or the command line names it.
public enum OutputTarget: Sendable, Equatable, CustomStringConvertible {
    /// The PulseAudio server's default sink, else ALSA's `default` PCM, else the null device.
    case `default`
    /// The PulseAudio server, on its default sink (`nil`) or on the named sink.
    case pulse(String?)
    /// A named ALSA PCM, e.g. `hw:0,0`, `pulse`.
    case alsa(String)
    /// The clock-paced null device.
    case null
    /// The offline renderer, driven by the caller (`OutputDeviceFactory.openOffline` gives
    /// it typed as `OfflineDevice`, which renders).
    case offline

    /// Reads a target as the command line spells it: `default`, `null`, `offline`, `pulse`,
    /// `pulse:SINK` or `alsa:NAME`.
    /// - Parameter text: The spelling.
    /// - Throws: `AudioError.Code.invalidParameter` naming the text when it is none of those.
    public init(parsing text: String) throws {
        switch text {
        case "default": self = .default
        case "null": self = .null
        case "offline": self = .offline
        case "pulse": self = .pulse(nil)
        default:
            if text.hasPrefix("pulse:"), text.count > "pulse:".count {
                self = .pulse(String(text.dropFirst("pulse:".count)))
                return
            }
            guard text.hasPrefix("alsa:"), text.count > "alsa:".count else {
                throw AudioError(.invalidParameter, "output \"\(text)\" is not one of default, null, pulse, pulse:SINK, alsa:NAME")
            }
            self = .alsa(String(text.dropFirst("alsa:".count)))
        }
    }

    /// The command-line spelling, which `init(parsing:)` reads back.
    public var description: String {
        switch self {
        case .default: "default"
        case .pulse(let sink): sink.map { "pulse:\($0)" } ?? "pulse"
        case .alsa(let name): "alsa:\(name)"
        case .null: "null"
        case .offline: "offline"
        }
    }
}

/// Opens the output device a program asked for.
public enum OutputDeviceFactory {
    /// Opens an offline device: what `open(.offline, configuration:)` opens, typed so that the
    /// program can render it (`render(frames:)`, `render(seconds:toWAV:)`).
    /// - Parameter configuration: Rate (`nil` for 48 kHz), channels and period size.
    /// - Returns: The device, not started (a back-end or engine starts it).
    /// - Throws: `AudioError.Code.invalidParameter` for a bad configuration.
    public static func openOffline(configuration: OutputConfiguration = OutputConfiguration()) throws -> OfflineDevice {
        try OfflineDevice(configuration: configuration)
    }

    /// Opens `target`. `.default` tries the PulseAudio server, then ALSA's `default`, then falls
    /// back to the null device, and says so in `notice`.
    /// - Parameters:
    ///   - target: The device to open.
    ///   - configuration: Rate, channels, period size and count to ask for.
    ///   - role: The stream's `media.role` on the PulseAudio server (`music`, `game`, `event`…).
    /// - Returns: The device, and a one-line notice for the user when it is not the one asked
    ///   for (`nil` otherwise).
    /// - Throws: `AudioError.Code.invalidParameter` for a bad configuration;
    ///   `AudioError.Code.deviceUnavailable` when a named ALSA device or the PulseAudio server
    ///   (or its named sink) cannot be opened.
    public static func open(_ target: OutputTarget, configuration: OutputConfiguration, role: String = "music") throws
        -> (device: any OutputDevice, notice: String?) {
        switch target {
        case .default:
            do {
                return (try PulseAudioDevice(configuration: configuration, role: role), nil)
            } catch let error as AudioError where error.code == .deviceUnavailable {
                // No server (or no libpulse): a sound card through ALSA, quietly.
            }
            do {
                return (try ALSADevice(name: "default", configuration: configuration), nil)
            } catch let error as AudioError where error.code == .deviceUnavailable {
                let device = try NullDevice(configuration: configuration)
                return (device, "no audio device could be opened (\(error.message)); playing to the null device")
            }
        case .pulse(let sink):
            return (try PulseAudioDevice(sink: sink, configuration: configuration, role: role), nil)
        case .alsa(let name):
            return (try ALSADevice(name: name, configuration: configuration), nil)
        case .null:
            return (try NullDevice(configuration: configuration), nil)
        case .offline:
            return (try OfflineDevice(configuration: configuration), nil)
        }
    }
}
