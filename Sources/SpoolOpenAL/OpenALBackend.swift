import SpoolCore
import SpoolOutput

/// The OpenAL back-end behind Spool's `PlaybackBackend` seam: each voice is an
/// `OpenALStreamingSource` on one `OpenALDevice`, so everything written against the seam
/// (players, `VoiceFeeder`, benchmarks) plays through OpenAL Soft unchanged.
public final class OpenALBackend: PlaybackBackend {
    /// `openal`.
    public let name = "openal"
    /// The device the voices play on.
    public let device: OpenALDevice
    private let defaultQuality = Locked(ResamplingQuality.default)

    /// Makes the back-end over an open device, which it becomes the one event handler of
    /// (`OpenALDevice.setEventHandler`); listen with `addOutputEventHandler(_:)`.
    /// - Parameter device: The sound server, the null device or a loopback device.
    public init(device: OpenALDevice) {
        self.device = device
        device.setEventHandler { [outputEvents] event in outputEvents.dispatch(event) }
    }

    private let outputEvents = OutputEventHandlers()

    /// OpenAL Soft's name for the device.
    public var outputName: String { device.name }

    /// Adds a handler for what the device reports: OpenAL Soft's driver shows a lost device
    /// (`ALC_CONNECTED`) and underruns, not the sound server's cork requests or route changes.
    public func addOutputEventHandler(_ handler: @escaping @Sendable (OutputDeviceEvent) -> Void) -> VoiceHandlerToken {
        outputEvents.add(handler)
    }

    public func removeOutputEventHandler(_ token: VoiceHandlerToken) { outputEvents.remove(token) }

    /// OpenAL Soft's mixer update (`ALC_REFRESH`'s period), in frames.
    public var outputPeriodFrames: Int { device.updateFrames }

    /// Whether the device's mix goes through a limiter (`OpenALDevice.outputLimiter`).
    public var outputLimiter: Bool { device.outputLimiter }

    /// Turns the device's limiter on or off (`OpenALDevice.setOutputLimiter(_:)`).
    public func setOutputLimiter(_ enabled: Bool) throws { try device.setOutputLimiter(enabled) }

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

    /// Opens a device of `kind` as `init(_:configuration:)` does and, when it cannot be
    /// opened (no sound server or sound card answers, an unknown name) and `fallbackToNull`
    /// is set, plays to Spool's null device instead, clock-paced like the device asked for,
    /// and says so: the fallback `spool play --output default` uses, for any program.
    /// OpenAL Soft 1.19 does not fall back to its own null driver by itself.
    /// - Parameters:
    ///   - kind: The device to open.
    ///   - configuration: The device buffer wanted (for the null device too), or `nil` for
    ///     whatever is in effect (48 kHz, 1024 × 3 frames for the null device).
    ///   - fallbackToNull: Whether to fall back to the null device.
    /// - Returns: The back-end, and a one-line notice for the user when it plays to the null
    ///   device instead of the device asked for (`nil` otherwise).
    /// - Throws: As `init(_:configuration:)`; `.deviceUnavailable` only without the fallback.
    public static func open(_ kind: OpenALDevice.Kind = .systemDefault, configuration: OutputConfiguration? = nil,
                            fallbackToNull: Bool) throws -> (backend: OpenALBackend, notice: String?) {
        do {
            return (try OpenALBackend(kind, configuration: configuration), nil)
        } catch let error as AudioError where error.code == .deviceUnavailable && fallbackToNull {
            let backend = try OpenALBackend(.null(configuration ?? OutputConfiguration(sampleRate: 48_000)))
            return (backend, "no audio device could be opened (\(error.message)); playing to the null device")
        }
    }

    /// Opens `target` and makes a back-end over it: the same call, with the same defaults and
    /// the same result, as `BufferQueueBackend.open(_:configuration:)`, so a program chooses
    /// its back-end by type alone. `.default` is the system's default OpenAL device (the
    /// sound server, through OpenAL Soft's own driver) and falls back to Spool's null device,
    /// clock-paced like the device asked for, where none opens, and says so; `.null` is that
    /// null device; `.offline` a loopback device, rendered on demand (`device.render`).
    /// - Parameters:
    ///   - target: The output to open.
    ///   - configuration: Rate (`nil`: the device's own, 48 kHz for the null and loopback
    ///     devices), period size and count; the OpenAL back-end mixes stereo.
    /// - Returns: The back-end, and a one-line notice for the user when the output is not the
    ///   one asked for (`nil` otherwise).
    /// - Throws: `.unsupported` for an ALSA device or Spool's PulseAudio output (OpenAL Soft
    ///   plays through its own drivers;
    ///   `OpenALDevice.availableDeviceNames()` lists its devices, opened with
    ///   `init(_:configuration:)` and `.named`); as `init(_:configuration:)` otherwise.
    public static func open(_ target: OutputTarget = .default, configuration: OutputConfiguration = OutputConfiguration())
        throws -> (backend: OpenALBackend, notice: String?) {
        var clocked = configuration
        clocked.sampleRate = configuration.sampleRate ?? 48_000
        switch target {
        case .default:
            return try open(.systemDefault, configuration: configuration, fallbackToNull: true)
        case .null:
            return (try OpenALBackend(.null(clocked)), nil)
        case .offline:
            return (try OpenALBackend(.loopback(clocked)), nil)
        case .alsa(let name):
            throw AudioError(.unsupported, "openal: plays through OpenAL Soft's own drivers, not the ALSA device \(name); "
                             + "its devices are OpenALDevice.availableDeviceNames(), opened as .named")
        case .pulse:
            throw AudioError(.unsupported, "openal: reaches the sound server through OpenAL Soft's own PulseAudio driver "
                             + "(.default), not Spool's PulseAudio output; its devices, sinks included, are "
                             + "OpenALDevice.availableDeviceNames(), opened as .named")
        }
    }

    /// The loopback device (`open(.offline)`), nil for a device that mixes in real time.
    public var offlineRenderer: (any OfflineRendering & Sendable)? { device.rendersOnDemand ? device : nil }

    /// Stereo at the device's rate.
    public var outputFormat: AudioFormat { device.format }

    /// Seconds the output holds ahead of the speaker (`OpenALDevice.outputLatency`).
    public var outputLatency: Double { device.outputLatency }

    /// Makes a streaming source of priority 0 (`alGenSources`).
    /// - Throws: `.invalidParameter` for a rate OpenAL cannot take; `.invalidState` when no
    ///   source is left for it (see `OpenALDevice.sourceLimit`) or the device is closed.
    public func makeVoice(format: AudioFormat) throws -> any PlaybackVoice {
        try OpenALStreamingSource(device: device, format: format, quality: resamplingQuality)
    }

    public func makeVoice(format: AudioFormat, quality: ResamplingQuality) throws -> any PlaybackVoice {
        try OpenALStreamingSource(device: device, format: format, quality: quality)
    }

    /// The level its voices convert at unless they ask for another (see `ResamplingQuality`):
    /// the voices convert with the buffer queue's `VoiceResampler` at that level, so both
    /// back-ends play the same samples at every level.
    public var resamplingQuality: ResamplingQuality {
        get { defaultQuality.withLock { $0 } }
        set { defaultQuality.withLock { $0 = newValue } }
    }

    /// True: a shared buffer is an `OpenALStaticBuffer`, its voices `OpenALStaticSource`s.
    public var supportsSharedBuffers: Bool { true }

    /// Copies `buffer` once into an OpenAL buffer of the device (`OpenALDevice.makeStaticBuffer`).
    /// - Parameter buffer: The audio, at a whole-number rate.
    /// - Returns: An `OpenALStaticBuffer`.
    /// - Throws: As `OpenALStaticBuffer.init(_:device:)`.
    public func makeSharedBuffer(_ buffer: PCMBuffer) throws -> any SharedBuffer {
        try device.makeStaticBuffer(buffer)
    }

    /// Makes a static source playing `buffer` (`OpenALDevice.makeStaticSource`).
    /// - Parameters:
    ///   - buffer: An `OpenALStaticBuffer` of this back-end's device.
    ///   - priority: Its claim on a source when they run out.
    /// - Returns: An `OpenALStaticSource`, stopped.
    /// - Throws: `.invalidParameter` for a buffer of another back-end; as `OpenALStaticSource.init`.
    public func makeVoice(playing buffer: any SharedBuffer, priority: Int) throws -> any SharedBufferVoice {
        guard let buffer = buffer as? OpenALStaticBuffer else {
            throw AudioError(.invalidParameter, "openal: the shared buffer was made by another back-end")
        }
        return try device.makeStaticSource(playing: buffer, priority: priority)
    }

    /// Makes a streaming source with a priority for when sources run out.
    /// - Parameters:
    ///   - format: The format of the buffers it will take.
    ///   - priority: Higher keeps its source when a new voice needs one.
    /// - Returns: The voice.
    /// - Throws: As `makeVoice(format:)`.
    public func makeVoice(format: AudioFormat, priority: Int) throws -> OpenALStreamingSource {
        try OpenALStreamingSource(device: device, format: format, priority: priority, quality: resamplingQuality)
    }
}
