internal import COpenAL
import Foundation
import SpoolCore
import SpoolOutput
import SpoolResampling
import Synchronization

/// An OpenAL Soft output device with its one context: the sound server (the default or a
/// named device), Spool's clock-paced null device, or a loopback device the program renders
/// on demand. It owns the device and context and frees them when it goes, hands out the
/// OpenAL sources its voices play on, and runs the pump that keeps streaming sources fed.
///
/// Every device mixes stereo Float32. Its context is made with HRTF off
/// (`ALC_HRTF_SOFT` false: the pan law must be the plain stereo one) and the output limiter
/// off (`ALC_OUTPUT_LIMITER_SOFT` false: it adds 1 ms of look-ahead latency; `outputLimiter`
/// turns one on, as the buffer-queue back-end's), and with no distance attenuation
/// (`alDistanceModel(AL_NONE)`): sources are placed only to pan them.
///
/// **Threads.** AL calls run in batches under the device's lock, with the context made
/// current on the calling thread only (`alcSetThreadContext`, see `ContextHandle`), so any
/// thread may call any method. OpenAL Soft mixes on a thread of its own for the sound
/// server; Spool's code never runs there. Voices' handlers run on a thread of the device's
/// own, never on the pump thread that converts and queues every voice's audio (a slow handler
/// holds up no voice but its own), or, on a loopback device, on the thread that calls `render`.
///
/// The corresponding OpenAL calls are `alcOpenDevice`, `alcLoopbackOpenDeviceSOFT`,
/// `alcCreateContext`, `alcDestroyContext` and `alcCloseDevice`.
public final class OpenALDevice: Sendable {
    /// Which device to open.
    public enum Kind: Sendable, Equatable {
        /// OpenAL Soft's default device: the first driver of `OpenALConfiguration.drivers`
        /// (or OpenAL Soft's own list) that opens, normally the sound server
        /// (`alcOpenDevice(NULL)`). OpenAL Soft 1.19 does not fall back to its null driver
        /// by itself: where nothing opens, this fails.
        case systemDefault
        /// A device by the name `OpenALDevice.availableDeviceNames()` lists (for PulseAudio,
        /// the sink's description) (`alcOpenDevice(name)`).
        case named(String)
        /// Spool's null device: a loopback device rendered to nowhere by a thread of Spool's
        /// own, paced by the monotonic clock like a sound card holding `periodCount` periods
        /// of `periodFrames` frames (48 kHz when the configuration names no rate).
        case null(OutputConfiguration)
        /// A loopback device (`ALC_SOFT_loopback`) the program renders with `render`, as fast
        /// as the CPU allows, `periodFrames` at a time (48 kHz when the configuration names
        /// no rate).
        case loopback(OutputConfiguration)
    }

    /// The kind of device this is.
    public let kind: Kind
    /// The device's name as OpenAL reports it (`ALC_ALL_DEVICES_SPECIFIER`), e.g. the sound
    /// server's sink description, or `null` / `loopback`.
    public let name: String
    /// Stereo at the rate the device really mixes at (`ALC_FREQUENCY`).
    public let format: AudioFormat
    /// Frames the mixer renders at a time: for the sound server `ALC_FREQUENCY / ALC_REFRESH`
    /// (the `period_size` OpenAL Soft settled on); for the null and loopback devices the
    /// configured period.
    public let updateFrames: Int
    /// Mixer updates per second as OpenAL reports it (`ALC_REFRESH`); for the null and
    /// loopback devices, the rate over the configured period.
    public let refreshRate: Int
    /// Periods the null device holds ahead of the (virtual) speaker; `nil` for the other
    /// kinds, where OpenAL Soft does not report it.
    public let periodCount: Int?
    /// Most sources this device hands out at once, to streaming and static sources alike.
    ///
    /// When every source is taken, a new voice of priority *p* steals the source of the
    /// voice with the lowest priority — the oldest of those when several share it — provided
    /// that priority is *p* or lower. The stolen voice stops at once, hands back its buffers,
    /// runs its finished handler, and throws `.invalidState` from then on. When every source
    /// plays a voice of higher priority than *p*, making the voice throws `.invalidState`.
    public let sourceLimit: Int
    /// For a loopback device, the host time of the first rendered frame: the timeline
    /// `start(atHostTime:)` is read against. For other kinds, when the device opened.
    public let hostTimeBase: UInt64

    /// OpenAL Soft's default number of sources per device (its `sources` setting): the
    /// `ALC_MONO_SOURCES` / `ALC_STEREO_SOURCES` attributes only split it, 1.19 never
    /// lowers it, so Spool enforces a smaller `sourceLimit` itself.
    public static let defaultSourceLimit = 256

    /// The most sources a device of this process can hand out: the `sources` of the
    /// configuration applied before OpenAL Soft started (`OpenALConfiguration.sources`), else
    /// OpenAL Soft's 256.
    public static var sourceCapacity: Int { OpenALConfiguration.current?.sources ?? defaultSourceLimit }

    let context: ContextHandle
    /// Loopback or null: OpenAL Soft's mixer runs only when Spool renders.
    let rendersBySpool: Bool
    /// Loopback: rendered by the program's `render` calls, not in real time.
    var rendersOnDemand: Bool { if case .loopback = kind { true } else { false } }

    /// The device buffer OpenAL Soft asked the driver for, in seconds: update size × periods
    /// (3, OpenAL Soft's default, when unknown).
    var requestedBufferSeconds: Double { Double(updateFrames * (periodCount ?? 3)) / format.sampleRate }
    /// How long after a gain change OpenAL Soft has surely mixed it in: one period for a
    /// loopback device rendered between control calls, two mixer updates otherwise.
    let settleNanoseconds: Int64
    /// One mixer update, the time over which OpenAL Soft glides a gain change.
    let updateNanoseconds: Int64
    /// 5 ms at the device's rate (`VoiceParameters.declickSeconds`): on a device Spool renders
    /// (loopback, null), the length of the mix after a fade's gain change, over which OpenAL
    /// Soft glides it, so that pause, stop and resume fade as the buffer queue's do.
    let declickFrames: Int
    /// Whether the next mix glides a fade's gain change (`glidingOverDeclick`). Its lock is held
    /// by the thread that renders a device of Spool's for the whole of each mix, and by a voice
    /// while it changes its gain and reads where the glide begins, so a mix never starts in
    /// between.
    let glide = Locked<Bool>(false)
    let shared: Locked<Shared>
    let retired = Locked(Retired())
    let eventHandler = Locked<(@Sendable (OutputDeviceEvent) -> Void)?>(nil)
    let pump = PumpThread()
    /// Where the pump's handler calls run (a device that mixes in real time).
    let handlers = HandlerThread()
    private let streamingLeadMicroseconds = Atomic<Int>(40_000)
    /// Spool's null device: the shared clock-paced `NullDevice`, rendering this loopback
    /// device through `LoopbackRenderer`; nil for other kinds.
    let nullDevice: NullDevice?
    /// What `nullDevice` renders, and its registration with `ServiceThreads`.
    let nullRenderer = Locked<(renderer: LoopbackRenderer, registration: Int)?>(nil)
    let renderState = Locked(RenderState())
    /// Spool's limiter on a device it renders (loopback, null); see `outputLimiter`.
    let limiterOn = Atomic<Bool>(false)
    /// Tests set this to take the device-lost path without a sound server.
    let forcedDisconnect = Atomic<Bool>(false)
    /// Tests set this to see what the null device renders: each period's interleaved stereo
    /// frames, on the clock's thread, as rendered.
    let renderTap = Locked<(@Sendable (UnsafePointer<Float>, Int) -> Void)?>(nil)

    /// What the device's lock guards: its source pool and the voices holding sources.
    struct Shared: Sendable {
        /// Why the device can no longer be used (closed, or lost), or nil.
        var closed: AudioError?
        var freeSources: [UInt32] = []
        var generatedSources: [UInt32] = []
        var sourceLimit: Int
        /// Voices by the source they hold.
        var voices: [UInt32: VoiceEntry] = [:]
        var nextSequence = 0
    }

    /// A source handed out: to whom, how important it is and how old.
    struct VoiceEntry: Sendable {
        weak var owner: (any SourceOwner)?
        let priority: Int
        let sequence: Int
    }

    /// Sources and buffers whose owners went away, deleted at the start of the next batch
    /// (an owner's `deinit` may run inside a batch, where the device lock is already held).
    struct Retired: Sendable {
        var sources: [UInt32] = []
        var buffers: [UInt32] = []
    }

    struct RenderState: Sendable {
        /// Frames rendered so far (loopback and null).
        var renderedFrames: Int64 = 0
    }

    // MARK: Opening

    /// Opens a device and makes its context.
    /// - Parameters:
    ///   - kind: Which device.
    ///   - sourceLimit: Most sources to hand out at once, 1…`sourceCapacity` (256 unless a
    ///     configuration gave OpenAL Soft more).
    /// - Throws: `.deviceUnavailable` when the device does not open (no sound server, an
    ///   unknown name); `.invalidParameter` for a configuration the device cannot take
    ///   (other than 2 channels, a rate that is not a whole number or that the loopback
    ///   device refuses); `.libraryFailure` when OpenAL Soft fails otherwise.
    public init(_ kind: Kind = .systemDefault, sourceLimit: Int = OpenALDevice.defaultSourceLimit) throws {
        let capacity = Self.sourceCapacity
        guard (1...capacity).contains(sourceLimit) else {
            throw AudioError(.invalidParameter, "source limit \(sourceLimit) is outside 1...\(capacity)")
        }
        self.kind = kind
        self.sourceLimit = sourceLimit
        hostTimeBase = HostTime.now()
        prepareRateConverters()
        // Placed from the calibration every device shares; measured before the first device
        // opens, so that a failure there is this call's.
        _ = try PanCalibration.shared.get()
        var attributes: [Int32] = [ALC_HRTF_SOFT, ALC_FALSE, ALC_OUTPUT_LIMITER_SOFT, ALC_FALSE]
        switch kind {
        case .systemDefault, .named:
            let requested: String? = if case .named(let name) = kind { name } else { nil }
            let label = requested ?? "default"
            let opened: OpaquePointer? = try OpenALLibrary.use {
                if let requested { return alcOpenDevice(requested) }
                return alcOpenDevice(nil)
            }
            guard let opened else {
                let status = OpenALStatus.alc(nil)
                throw AudioError(.deviceUnavailable, "openal:\(label): alcOpenDevice failed (\(status.name)): "
                                 + "no sound server or sound card answered", underlying: status.libraryStatus)
            }
            let device = DeviceHandle(pointer: opened)
            attributes.append(0)
            context = try ContextHandle(device: device, attributes: attributes, deviceName: "openal:\(label)")
            name = Self.string(opened, ALC_ALL_DEVICES_SPECIFIER) ?? label
            let rate = Self.integer(opened, ALC_FREQUENCY)
            let refresh = Self.integer(opened, ALC_REFRESH)
            format = try AudioFormat(sampleRate: Double(rate), channelCount: 2)
            refreshRate = Int(refresh)
            updateFrames = refresh > 0 ? Int((Double(rate) / Double(refresh)).rounded()) : 1024
            periodCount = nil
            rendersBySpool = false
            updateNanoseconds = Int64(Double(updateFrames) / Double(rate) * 1e9)
            settleNanoseconds = 2 * updateNanoseconds
            nullDevice = nil
        case .null(let configuration), .loopback(let configuration):
            let configuration = try configuration.validated()
            guard configuration.channelCount == 2 else {
                throw AudioError(.invalidParameter, "the OpenAL back-end mixes stereo, not \(configuration.channelCount) channels")
            }
            let rate = configuration.sampleRate ?? 48_000
            guard rate == rate.rounded() else {
                throw AudioError(.invalidParameter, "OpenAL mixes at a whole-number rate, not \(rate) Hz")
            }
            let isNull = if case .null = kind { true } else { false }
            let opened = try OpenALLibrary.use { alcLoopbackOpenDeviceSOFT(nil) }
            guard let opened else {
                let status = OpenALStatus.alc(nil)
                throw AudioError(.deviceUnavailable, "openal:loopback: alcLoopbackOpenDeviceSOFT failed (\(status.name))",
                                 underlying: status.libraryStatus)
            }
            let device = DeviceHandle(pointer: opened)
            guard alcIsRenderFormatSupportedSOFT(opened, Int32(rate), ALC_STEREO_SOFT, ALC_FLOAT_SOFT) != 0 else {
                throw AudioError(.invalidParameter, "openal:loopback: OpenAL Soft cannot render Float32 stereo at \(rate) Hz")
            }
            attributes += [ALC_FORMAT_CHANNELS_SOFT, ALC_STEREO_SOFT, ALC_FORMAT_TYPE_SOFT, ALC_FLOAT_SOFT,
                           ALC_FREQUENCY, Int32(rate), 0]
            let label = isNull ? "null" : "loopback"
            context = try ContextHandle(device: device, attributes: attributes, deviceName: "openal:\(label)")
            name = label
            format = try AudioFormat(sampleRate: rate, channelCount: 2)
            updateFrames = configuration.periodFrames
            refreshRate = Int((rate / Double(configuration.periodFrames)).rounded())
            periodCount = isNull ? configuration.periodCount : nil
            rendersBySpool = true
            updateNanoseconds = Int64(Double(configuration.periodFrames) / rate * 1e9)
            // Between two render calls of a loopback device nothing mixes, so one period
            // after a change it has been mixed in; the null device renders on its own thread.
            settleNanoseconds = isNull ? 2 * updateNanoseconds : updateNanoseconds
            nullDevice = isNull ? try NullDevice(configuration: configuration) : nil
        }
        declickFrames = VoiceParameters.declickFrames(atRate: format.sampleRate)
        shared = Locked(Shared(sourceLimit: sourceLimit))
        try context.withCurrent {
            alDistanceModel(AL_NONE)
            try OpenALStatus.al().check("\(name): alDistanceModel(AL_NONE)")
        }
        switch kind {
        case .systemDefault, .named:
            // Half an update, so that a buffer played out is refilled well before the next one
            // is due; at least 2 ms and at most 10 ms.
            handlers.start()
            pump.start(device: self, interval: min(0.010, max(0.002, Double(updateNanoseconds) * 0.5e-9)))
        case .null:
            handlers.start()
            pump.start(device: self, interval: 0.010)
            try startNullDevice()
        case .loopback:
            break  // `render` services the voices itself
        }
    }

    deinit {
        // The last reference may go on the device's own pump, handler or clock thread, which
        // holds the device while it services or renders it or runs a handler: the device is
        // then closed on a queue of the library's, not on a thread its closing stops.
        let current = UInt(pthread_self())
        let onOwnThread = pump.threadID.load(ordering: .acquiring) == current || nullRenderThreadID == current
            || handlers.threadID.load(ordering: .acquiring) == current
        pump.stop()
        handlers.stop()
        stopNullDevice()
        // No voice or static buffer holds the device any more: every source is free or
        // retired. Delete what OpenAL still holds before the handles close the context and
        // device, which they do when `close` lets go of them (once the process's exit has
        // closed OpenAL, nothing is called: the exit closed them).
        let generated = shared.withLock { $0.generatedSources }
        let leftovers = retired.withLock { $0 }
        let context = self.context
        let close: @Sendable () -> Void = {
            try? context.withCurrent {
                if !generated.isEmpty {
                    for source in generated { alSourceStop(source); alSourcei(source, AL_BUFFER, 0) }
                    generated.withUnsafeBufferPointer { alDeleteSources(Int32($0.count), $0.baseAddress) }
                }
                if !leftovers.buffers.isEmpty {
                    leftovers.buffers.withUnsafeBufferPointer { alDeleteBuffers(Int32($0.count), $0.baseAddress) }
                }
            }
        }
        if onOwnThread { OpenALLibrary.closer.async(execute: close) } else { close() }
    }

    /// The names of the output devices OpenAL Soft can open (`alcGetString(NULL,
    /// ALC_ALL_DEVICES_SPECIFIER)`), which also makes it look again: a PulseAudio sink loaded
    /// since the last call is listed. Only names that open are listed: OpenAL Soft also names
    /// devices of drivers that cannot reach anything ("ALSA Default" where ALSA has no card),
    /// so each is opened once (`alcOpenDevice`, `alcCloseDevice`) to check.
    /// - Returns: Device names for `Kind.named`, the default one first when OpenAL says which.
    public static func availableDeviceNames() -> [String] {
        let listed: [String] = (try? OpenALLibrary.use {
            var names = list(alcGetString(nil, ALC_ALL_DEVICES_SPECIFIER))
            if let preferred = alcGetString(nil, ALC_DEFAULT_ALL_DEVICES_SPECIFIER).map({ String(cString: $0) }),
               let index = names.firstIndex(of: preferred) {
                names.insert(names.remove(at: index), at: 0)
            }
            return names
        }) ?? []
        return listed.filter { name in
            (try? OpenALLibrary.use {
                guard let device = alcOpenDevice(name) else { return false }
                alcCloseDevice(device)
                return true
            }) ?? false
        }
    }

    /// Closes the device: stops every voice (handing back their buffers and running their
    /// finished handlers), frees its sources; later calls on it or its voices throw
    /// `.invalidState`. OpenAL's device and context are freed once nothing holds the device.
    /// Does nothing when already closed or lost. The corresponding OpenAL calls are
    /// `alcDestroyContext` and `alcCloseDevice`, which run when the object goes.
    public func close() {
        let reason = AudioError(.invalidState, "openal:\(name): the device was closed")
        let deliveries = (try? perform { s -> Deliveries in
            var deliveries = Deliveries()
            shutDown(&s, reason: reason, &deliveries)
            return deliveries
        }) ?? Deliveries()
        pump.stop()
        stopNullDevice()
        deliveries.run()
    }

    // MARK: State

    /// Whether the device still plays: not closed, and OpenAL says it is connected
    /// (`alcGetIntegerv(ALC_CONNECTED)`, `ALC_EXT_disconnect`).
    public var isConnected: Bool {
        guard shared.withLock({ $0.closed == nil }) else { return false }
        return connectedNow()
    }

    func connectedNow() -> Bool {
        if forcedDisconnect.load(ordering: .relaxed) { return false }
        if rendersBySpool { return true }
        return Self.integer(context.device.pointer, ALC_CONNECTED) != 0
    }

    /// Seconds OpenAL says its output holds after the mixer (`ALC_DEVICE_LATENCY_SOFT`,
    /// `ALC_SOFT_device_clock`): the sound server's buffer; 0 for loopback and null devices.
    public var deviceLatency: Double {
        var values: [Int64] = [0, 0]
        OpenALLibrary.gate.ifOpen { alcGetInteger64vSOFT(context.device.pointer, ALC_DEVICE_CLOCK_LATENCY_SOFT, 2, &values) }
        return Double(values[1]) * 1e-9
    }

    /// Seconds of audio the output holds ahead of the speaker: what a sound started now waits
    /// behind. The sound server's latency for a real device; the virtual buffer for the null
    /// device; 0 for a loopback device.
    public var outputLatency: Double {
        if let nullDevice { return Double(nullDevice.queuedFrames) / format.sampleRate }
        return deviceLatency
    }

    /// Frames rendered so far by a loopback or null device; 0 for the sound server.
    public var renderedFrames: Int { Int(renderState.withLock { $0.renderedFrames }) }

    /// Times the null device's thread woke too late and restarted its virtual buffer.
    public var xrunCount: Int { nullDevice?.xrunCount ?? 0 }

    /// What the null device's periods cost OpenAL Soft's mixer, and which late periods were
    /// the machine's stalls rather than its overruns; nil on other devices.
    public var renderLoad: RenderLoad? { nullDevice?.renderLoad }

    /// How far ahead of OpenAL's mixer, at least, a streaming voice made after this is set
    /// keeps audio converted on a device that mixes in real time, in seconds (40 ms unless set):
    /// how long the pump may be held up without a voice running dry. A longer lead rides out
    /// longer stalls of a busy machine; a playback-rate change (and a stereo voice's pan) is
    /// heard once the audio already converted has played, so it also comes later.
    public var streamingLead: Double { Double(streamingLeadMicroseconds.load(ordering: .relaxed)) * 1e-6 }

    /// Sets `streamingLead` for the voices made from now on.
    /// - Throws: `.invalidParameter` outside 10 ms…1 s.
    public func setStreamingLead(_ seconds: Double) throws {
        guard seconds.isFinite, (0.010...1).contains(seconds) else {
            throw AudioError(.invalidParameter, "a streaming lead is 10 ms to 1 s, not \(seconds) s")
        }
        streamingLeadMicroseconds.store(Int((seconds * 1e6).rounded()), ordering: .relaxed)
    }

    /// What the pump's passes cost (Spool's voices convert there) and how far apart they came;
    /// empty on a loopback device, whose passes run on the rendering thread.
    public var pumpLoad: PumpLoad { pump.load }

    /// Sets what to call, on the device's handler thread (or a loopback device's rendering thread), when
    /// the device is lost (`OutputDeviceEvent.deviceLost`).
    /// - Parameter handler: The handler, or `nil` to stop listening.
    public func setEventHandler(_ handler: (@Sendable (OutputDeviceEvent) -> Void)?) {
        eventHandler.withLock { $0 = handler }
    }

    /// Whether the mix goes through a soft limiter: on a device Spool renders (loopback, null),
    /// `SoftLimiter` after each mix (samples at or below −1 dBFS untouched); on a sound server,
    /// OpenAL Soft's own (`ALC_OUTPUT_LIMITER_SOFT`, a compressor with 1 ms of look-ahead). Off
    /// unless set.
    public var outputLimiter: Bool { limiterOn.load(ordering: .relaxed) }

    /// Turns the limiter on or off: on a device Spool renders from the next mix; on a sound
    /// server by resetting the device with the attribute (`alcResetDeviceSOFT`), which keeps its
    /// sources playing.
    /// - Throws: `.libraryFailure` when OpenAL Soft does not reset the device; `.invalidState`
    ///   once the process is exiting.
    public func setOutputLimiter(_ enabled: Bool) throws {
        if !rendersBySpool {
            let attributes: [Int32] = [ALC_HRTF_SOFT, ALC_FALSE, ALC_OUTPUT_LIMITER_SOFT, enabled ? ALC_TRUE : ALC_FALSE, 0]
            let device = context.device.pointer
            let reset = try OpenALLibrary.use { attributes.withUnsafeBufferPointer { alcResetDeviceSOFT(device, $0.baseAddress) } }
            guard reset != 0 else {
                let status = OpenALStatus.alc(device)
                throw AudioError(.libraryFailure, "openal:\(name): alcResetDeviceSOFT with the output limiter "
                                 + "\(enabled ? "on" : "off") failed: \(status.name)", underlying: status.libraryStatus)
            }
        }
        limiterOn.store(enabled, ordering: .relaxed)
    }

    /// Sources in use by voices and static sources now.
    public var sourcesInUse: Int { shared.withLock { $0.voices.count } }

    // MARK: Batches

    /// Runs `body` as one batch of AL calls: under the device lock, with the context current
    /// on this thread, after deleting what was retired.
    /// - Throws: Why the device is closed, or what `body` throws.
    func perform<R: Sendable>(_ body: (inout Shared) throws -> R) throws -> R {
        try shared.withLock { s throws -> R in
            if let closed = s.closed { throw closed }
            return try context.withCurrent {
                deleteRetired(&s)
                return try body(&s)
            }
        }
    }

    /// Hands `source` and `buffers` back for deletion at the next batch. Safe anywhere,
    /// including a `deinit` inside a batch.
    func retire(source: UInt32? = nil, buffers: [UInt32] = []) {
        retired.withLock { r in
            if let source { r.sources.append(source) }
            r.buffers += buffers
        }
    }

    private func deleteRetired(_ s: inout Shared) {
        let r = retired.withLock { r in defer { r = Retired() }; return r }
        for source in r.sources where s.voices[source] != nil {
            alSourceStop(source)
            alSourcei(source, AL_BUFFER, 0)
            s.voices[source] = nil
            s.freeSources.append(source)
        }
        if !r.buffers.isEmpty {
            r.buffers.withUnsafeBufferPointer { alDeleteBuffers(Int32($0.count), $0.baseAddress) }
        }
        _ = alGetError()
    }

    /// The device clock in nanoseconds (`ALC_DEVICE_CLOCK_SOFT`): how much audio the mixer has
    /// produced. Ramps and fades are timed on it.
    func clockNanoseconds() -> Int64 {
        var value: Int64 = 0
        OpenALLibrary.gate.ifOpen { alcGetInteger64vSOFT(context.device.pointer, ALC_DEVICE_CLOCK_SOFT, 1, &value) }
        return value
    }

    /// The host time at which audio the mixer renders next will be heard: a start scheduled
    /// at this time or earlier is due. On a loopback device, the time of the next frame
    /// rounded down, so that a start is due exactly when its frame is the next to render.
    func nextHeardHostTime() -> UInt64 {
        if case .loopback = kind {
            let frames = renderState.withLock { $0.renderedFrames }
            return hostTimeBase &+ UInt64((Double(frames) * 1e9 / format.sampleRate).rounded(.down))
        }
        return HostTime.now() &+ HostTime.nanoseconds(outputLatency)
    }

    /// Stops every voice for good with `reason` and marks the device unusable: in a batch.
    func shutDown(_ s: inout Shared, reason: AudioError, _ deliveries: inout Deliveries) {
        for (source, entry) in s.voices {
            entry.owner?.relinquish(reason: reason, &deliveries)
            alSourceStop(source)
            alSourcei(source, AL_BUFFER, 0)
            s.freeSources.append(source)
        }
        s.voices = [:]
        s.closed = reason
        _ = alGetError()
    }

    // MARK: ALC queries

    static func integer(_ device: OpaquePointer, _ parameter: Int32) -> Int32 {
        var value: Int32 = 0
        OpenALLibrary.gate.ifOpen { alcGetIntegerv(device, parameter, 1, &value) }
        return value
    }

    static func string(_ device: OpaquePointer?, _ parameter: Int32) -> String? {
        (try? OpenALLibrary.gate.pass { alcGetString(device, parameter).map { String(cString: $0) } }) ?? nil
    }

    /// Splits an ALC list: strings one after another, ended by an empty one.
    private static func list(_ pointer: UnsafePointer<CChar>?) -> [String] {
        guard var cursor = pointer else { return [] }
        var names: [String] = []
        while cursor.pointee != 0 {
            let name = String(cString: cursor)
            names.append(name)
            cursor += strlen(cursor) + 1
        }
        return names
    }
}

/// Handler calls collected inside a batch, run after the device lock is released.
struct Deliveries: Sendable {
    private var calls: [@Sendable () -> Void] = []

    mutating func add(_ call: @escaping @Sendable () -> Void) { calls.append(call) }

    var isEmpty: Bool { calls.isEmpty }

    func run() { for call in calls { call() } }
}

/// Something that holds one of the device's sources: a streaming or a static source.
/// Both methods run inside a batch, with the context current.
protocol SourceOwner: AnyObject, Sendable {
    /// Unqueues what played, refills, restarts after an underrun, moves ramps and fades on;
    /// adds the handler calls that are due.
    func service(_ step: ServiceStep, _ deliveries: inout Deliveries)
    /// Gives the source up at once: it is being stolen, or the device is going. The owner
    /// stops it, detaches and deletes its own buffers, hands back what it held and ends.
    func relinquish(reason: AudioError, _ deliveries: inout Deliveries)
    /// The host time a scheduled start waits for, if any.
    var scheduledHostTime: UInt64? { get }
}

/// What a service pass knows about the device.
struct ServiceStep {
    /// The device clock, in nanoseconds.
    let clock: Int64
    /// The host time at which what the mixer renders next will be heard.
    let heardHostTime: UInt64
}
