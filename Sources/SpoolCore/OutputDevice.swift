/// When a rendered period will be heard.
public struct RenderTimestamp: Sendable, Equatable {
    /// Device frames rendered before this period since the device started.
    public var sampleTime: Int64
    /// `HostTime` at which the period's first frame is expected to leave the device.
    public var hostTime: UInt64

    /// Makes a timestamp.
    public init(sampleTime: Int64, hostTime: UInt64) {
        self.sampleTime = sampleTime
        self.hostTime = hostTime
    }
}

/// What an output device pulls audio from, one period at a time.
///
/// `render` runs on the device's render thread: it must not take a lock another thread may
/// hold, allocate, do I/O, or call user code. The corresponding Apple notion is an
/// AudioUnit render callback.
public protocol AudioRenderer: AnyObject, Sendable {
    /// Writes `frames` interleaved frames in the device's format into `buffer`.
    ///
    /// - Parameters:
    ///   - buffer: Room for `frames × channelCount` samples; its contents on entry are undefined.
    ///   - frames: Frames to write, at most the device's period.
    ///   - timestamp: When the first of them will be heard.
    func render(into buffer: UnsafeMutablePointer<Float>, frames: Int, timestamp: RenderTimestamp)
}

/// Something an output device reports off its render thread.
public enum OutputDeviceEvent: Sendable {
    /// The device ran dry (or over) and recovered; `count` is the total so far.
    case xrun(count: Int)
    /// The device went away; it has stopped. The error says which device and why.
    case deviceLost(AudioError)
    /// The sound server asks the stream to pause (`true`: a stream of a higher-priority role,
    /// a call, started elsewhere) or says that it may resume (`false`).
    ///
    /// The device does not cork itself: what to do is the caller's choice (an audio session
    /// pauses its players, as iOS ends a session's playback when an interruption begins).
    /// PulseAudio's `module-role-cork` sends these as the stream events
    /// `PA_STREAM_EVENT_REQUEST_CORK` and `PA_STREAM_EVENT_REQUEST_UNCORK`, and mutes the
    /// stream itself meanwhile; it asks for the uncork only of a stream that did pause, and
    /// unmutes one that played on without a word. The corresponding Apple notification is
    /// `AVAudioSession.interruptionNotification` (`.began`, `.ended`).
    case corkRequested(Bool)
    /// The sound server's outputs changed: a sink came or went, or its default changed.
    /// The corresponding Apple notification is `AVAudioSession.routeChangeNotification`.
    case routeChanged(OutputRouteChange)
}

/// The size of the device buffer a program asks for. The device reports what it really got.
public struct OutputConfiguration: Sendable, Equatable {
    /// Frames per second; `nil` takes the device's own rate (48 kHz where it has none).
    public var sampleRate: Double?
    /// Output channels.
    public var channelCount: Int
    /// Frames per period (the unit the device asks the renderer for).
    public var periodFrames: Int
    /// Periods the device holds ahead of the speaker.
    public var periodCount: Int

    /// Makes a configuration.
    ///
    /// - Parameters:
    ///   - sampleRate: Frames per second, or `nil` for the device's own.
    ///   - channelCount: Output channels, 1…8.
    ///   - periodFrames: Frames per period, 16…65536.
    ///   - periodCount: Periods in the device buffer, 2…32.
    public init(sampleRate: Double? = nil, channelCount: Int = 2, periodFrames: Int = 1024, periodCount: Int = 3) {
        self.sampleRate = sampleRate
        self.channelCount = channelCount
        self.periodFrames = periodFrames
        self.periodCount = periodCount
    }

    /// Checks every field.
    ///
    /// - Throws: `AudioError.Code.invalidParameter` naming the field at fault.
    public func validated() throws -> OutputConfiguration {
        if let sampleRate { _ = try AudioFormat(sampleRate: sampleRate, channelCount: 1) }
        guard (1...AudioFormat.maximumChannelCount).contains(channelCount) else {
            throw AudioError(.invalidParameter, "channel count \(channelCount) is outside 1...\(AudioFormat.maximumChannelCount)")
        }
        guard (16...65_536).contains(periodFrames) else {
            throw AudioError(.invalidParameter, "period of \(periodFrames) frames is outside 16...65536")
        }
        guard (2...32).contains(periodCount) else {
            throw AudioError(.invalidParameter, "period count \(periodCount) is outside 2...32")
        }
        return self
    }
}

/// An audio output that pulls frames from an `AudioRenderer` one period at a time: ALSA, a
/// clock-paced null device, or an offline renderer.
public protocol OutputDevice: AnyObject, Sendable {
    /// A name for messages, e.g. `alsa:default`, `null`, `offline`.
    var name: String { get }
    /// The format the device really runs at.
    var format: AudioFormat { get }
    /// Frames per period the device really uses.
    var periodFrames: Int { get }
    /// Periods the device really holds.
    var periodCount: Int { get }
    /// Whether the device is pulling audio.
    var isRunning: Bool { get }
    /// Underruns (or overruns) the device recovered from.
    var xrunCount: Int { get }
    /// Frames already handed to the device and not yet heard: what new audio waits behind.
    var queuedFrames: Int { get }
    /// Whether a thread of the device's own calls the renderer in real time (ALSA, null);
    /// false for a device the program renders on demand (offline).
    var rendersInRealTime: Bool { get }

    /// Starts pulling from `renderer` on the device's render thread.
    ///
    /// - Throws: `AudioError.Code.invalidState` when already running, or a device error.
    func start(renderer: any AudioRenderer) throws
    /// Stops pulling and returns once the render thread will not call the renderer again.
    func stop()
    /// Sets what to call, off the render thread, when the device reports an event.
    func setEventHandler(_ handler: (@Sendable (OutputDeviceEvent) -> Void)?)
    /// Whether the device can rewrite the frames it holds and has not played (see
    /// `requestRewind()`).
    var rewindSupport: RewindSupport { get }
    /// Asks the device to have its renderer add what just started into the frames it holds
    /// and has not played, as soon as it can (a renderer that is a `RewindingRenderer`), and
    /// to write them again: the frames the hardware or the server has taken are never
    /// rewritten. Any thread but the render thread; does nothing on a device that does not
    /// rewind, or that is stopped.
    func requestRewind()
    /// Tells the sound server what the device's stream plays (`media.role`); devices without
    /// a server stream ignore it.
    func setRole(_ role: String)
    /// Pauses the device's stream on the sound server, or plays it again, without stopping
    /// the device (what answers a cork request); devices without a server stream ignore it.
    func setCorked(_ corked: Bool)
}

extension OutputDevice {
    /// Devices without a server stream carry no role.
    public func setRole(_ role: String) {}

    /// Devices without a server stream have nothing to cork.
    public func setCorked(_ corked: Bool) {}
}

extension OutputDevice {
    /// Devices render in real time unless they say otherwise.
    public var rendersInRealTime: Bool { true }
}
