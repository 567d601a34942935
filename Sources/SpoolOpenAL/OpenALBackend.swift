import SpoolCore

/// The OpenAL back-end behind Spool's `PlaybackBackend` seam: each voice is an
/// `OpenALStreamingSource` on one `OpenALDevice`, so everything written against the seam
/// (players, `VoiceFeeder`, benchmarks) plays through OpenAL Soft unchanged.
public final class OpenALBackend: PlaybackBackend {
    /// `openal`.
    public let name = "openal"
    /// The device the voices play on.
    public let device: OpenALDevice

    /// Makes the back-end over an open device.
    /// - Parameter device: The sound server, the null device or a loopback device.
    public init(device: OpenALDevice) {
        self.device = device
    }

    /// Opens a device of `kind` for the back-end. For the sound server, when a
    /// `configuration` is given it is applied first (`OpenALConfiguration.apply()`): its
    /// rate, period size and count then set OpenAL Soft's device buffer.
    /// - Parameters:
    ///   - kind: The device to open.
    ///   - configuration: The device buffer wanted from the sound server, or `nil` for
    ///     whatever is in effect. Null and loopback devices take theirs from `kind`.
    /// - Throws: `.invalidState` when OpenAL Soft already started in this process with
    ///   another configuration; the device's errors (`OpenALDevice.init`).
    public convenience init(_ kind: OpenALDevice.Kind, configuration: OutputConfiguration? = nil) throws {
        if let configuration {
            switch kind {
            case .systemDefault, .named: try OpenALConfiguration(configuration).apply()
            case .null, .loopback: break
            }
        }
        self.init(device: try OpenALDevice(kind))
    }

    /// Stereo at the device's rate.
    public var outputFormat: AudioFormat { device.format }

    /// Seconds the output holds ahead of the speaker (`OpenALDevice.outputLatency`).
    public var outputLatency: Double { device.outputLatency }

    /// Makes a streaming source of priority 0 (`alGenSources`).
    /// - Throws: `.invalidParameter` for a rate OpenAL cannot take; `.invalidState` when no
    ///   source is left for it (see `OpenALDevice.sourceLimit`) or the device is closed.
    public func makeVoice(format: AudioFormat) throws -> any PlaybackVoice {
        try OpenALStreamingSource(device: device, format: format)
    }

    /// Makes a streaming source with a priority for when sources run out.
    /// - Parameters:
    ///   - format: The format of the buffers it will take.
    ///   - priority: Higher keeps its source when a new voice needs one.
    /// - Returns: The voice.
    /// - Throws: As `makeVoice(format:)`.
    public func makeVoice(format: AudioFormat, priority: Int) throws -> OpenALStreamingSource {
        try OpenALStreamingSource(device: device, format: format, priority: priority)
    }
}
