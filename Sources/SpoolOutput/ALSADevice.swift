internal import CALSA
import Synchronization
import SpoolCore

/// An output device on ALSA (libasound): a real sound card, or — through `default` and
/// libasound2-plugins — the PulseAudio or PipeWire server.
///
/// A real-time render thread waits until the device has room for a period, asks the renderer
/// for it, and writes it with `snd_pcm_writei`. Underruns are recovered and counted; a device
/// that goes away is reported as `.deviceLost` and the device stops. The corresponding Apple
/// object is the output unit an Audio Queue renders to.
public final class ALSADevice: OutputDevice {
    /// `alsa:<the PCM name>`.
    public let name: String
    /// The format negotiated with the device (rate and channel count may differ from the request).
    public let format: AudioFormat
    /// Frames per period the device agreed to.
    public let periodFrames: Int
    /// Periods the device buffer holds (`buffer size / period size`).
    public let periodCount: Int
    /// The device buffer in frames (`snd_pcm_hw_params_get_buffer_size`).
    public let bufferFrames: Int
    /// The sample encoding written to the device: Float32, or 16-bit integers converted from
    /// Float32 when the device refuses float.
    public let sampleType: PCMBuffer.SampleType

    private let pcm: ALSAPCM
    private let events: RenderThread.EventRelay
    private let clock: VirtualClock
    /// The running render thread; also serialises every control call that touches the PCM.
    private let thread: RenderThread.Slot
    private let rewind = RewindRequest()

    /// Whether the PCM can move its write position back over frames the hardware has not
    /// taken (`snd_pcm_rewind`): a card, `dmix`, `plug` or `null` can; a plug-in that hands
    /// each write on at once (`pulse`, any `ioplug` or `extplug`) cannot. A device that can
    /// may still find nothing to rewind (`snd_pcm_rewindable` answers 0); the start then
    /// waits behind its buffer, as on one that cannot.
    public let rewindSupport: RewindSupport

    /// Opens an ALSA PCM for playback and negotiates the buffer.
    /// The corresponding ALSA calls are `snd_pcm_open`, `snd_pcm_hw_params` and `snd_pcm_sw_params`.
    /// - Parameters:
    ///   - name: An ALSA PCM name: `default`, `pulse`, `hw:0,0`, `plughw:1`…
    ///   - configuration: Rate (`nil` for 48 kHz), channels, period size and count asked for;
    ///     read `format`, `periodFrames` and `periodCount` for what the device gave.
    /// - Throws: `AudioError.Code.invalidParameter` for a bad configuration;
    ///   `AudioError.Code.deviceUnavailable` (`alsa:<name>: <reason>`) when the device cannot
    ///   be opened or refuses every usable setting.
    public init(name: String = "default", configuration: OutputConfiguration) throws {
        let configuration = try configuration.validated()
        let pcm = try ALSAPCM(name: name)
        let negotiated = try pcm.configure(configuration)
        self.pcm = pcm
        self.name = "alsa:\(name)"
        format = try AudioFormat(sampleRate: negotiated.sampleRate, channelCount: negotiated.channelCount)
        periodFrames = negotiated.periodFrames
        periodCount = negotiated.periodCount
        bufferFrames = negotiated.bufferFrames
        sampleType = negotiated.sampleType
        let type = snd_pcm_type(pcm.handle)
        if type == SND_PCM_TYPE_IOPLUG || type == SND_PCM_TYPE_EXTPLUG {
            let kind = snd_pcm_type_name(type).map { String(cString: $0) } ?? "plug-in"
            rewindSupport = .unavailable("alsa:\(name) is an \(kind.lowercased()) plug-in, which hands each write on at once")
        } else {
            rewindSupport = .available
        }
        clock = VirtualClock(sampleRate: negotiated.sampleRate)
        let deviceName = self.name
        thread = RenderThread.Slot(device: deviceName)
        events = RenderThread.EventRelay(label: "spool.\(deviceName).events") { status in
            let status = ALSAStatus(status)
            return AudioError(.deviceLost, "\(deviceName): \(status.text)", underlying: status.libraryStatus)
        }
    }

    // The render loop ends before the PCM it writes to is closed.
    deinit { thread.stop() }

    /// Whether the render thread is pulling audio (false after `stop()` or a lost device).
    public var isRunning: Bool { thread.isRunning }

    /// Underruns the device recovered from (`-EPIPE` from ALSA, then `snd_pcm_prepare`).
    public var xrunCount: Int { events.xrunCount }

    /// Frames written and not yet heard, from the last `snd_pcm_delay` the render thread read,
    /// advanced by the clock since.
    public var queuedFrames: Int { clock.queuedFrames(now: HostTime.now()) }

    /// Whether the render thread runs (or last ran) with `SCHED_FIFO` priority; false before
    /// the first start and where the system refuses real-time scheduling.
    public var isRealTime: Bool { thread.isRealTime }

    /// Starts the real-time render thread pulling from `renderer`.
    /// The corresponding Apple call is `AudioQueueStart`; in ALSA the stream starts with the
    /// first `snd_pcm_writei`.
    /// - Parameter renderer: Asked for `periodFrames` frames at a time.
    /// - Throws: `AudioError.Code.invalidState` when already running;
    ///   `AudioError.Code.deviceLost` when the device went away; `.libraryFailure` when no
    ///   thread can be made.
    public func start(renderer: any AudioRenderer) throws {
        try thread.start(name: "spool-alsa") {
            if snd_pcm_state(pcm.handle) != SND_PCM_STATE_PREPARED {
                try check(snd_pcm_prepare(pcm.handle), device: pcm.name, "prepare the device", code: .deviceLost)
            }
            let loop = ALSARenderLoop(pcm: pcm, format: format, periodFrames: periodFrames, bufferFrames: bufferFrames,
                                      sampleType: sampleType, renderer: renderer, clock: clock, events: events,
                                      rewind: rewind, rewinds: rewindSupport.isAvailable)
            return { loop.run(on: $0) }
        }
    }

    /// Stops the render thread, then drops what the device still holds (`snd_pcm_drop`) and
    /// prepares it for the next start. Returns once the renderer will not be called again:
    /// within about a period. Does nothing when not running.
    /// The corresponding Apple call is `AudioQueueStop(queue, true)`.
    public func stop() {
        thread.stop {
            // Errors here mean the device is gone; `start` reports that when it is next asked.
            _ = snd_pcm_drop(pcm.handle)
            _ = snd_pcm_prepare(pcm.handle)
        }
        clock.reset()
    }

    /// Has the render thread, when it next wakes (within a period), move back over what the
    /// device allows, re-mix and write again. Does nothing on a device that cannot rewind, or
    /// while stopped.
    public func requestRewind() { if rewindSupport.isAvailable, isRunning { rewind.request() } }

    /// Rewinds carried out, and requests that found nothing to rewind.
    public var rewindCounts: (performed: Int, declined: Int) {
        (rewind.performed.load(ordering: .relaxed), rewind.declined.load(ordering: .relaxed))
    }

    /// Sets what to call, on a queue of the device's own (never the render thread), when the
    /// device reports an underrun or goes away.
    /// - Parameter handler: The handler, or `nil` to stop listening.
    public func setEventHandler(_ handler: (@Sendable (OutputDeviceEvent) -> Void)?) {
        events.setHandler(handler)
    }
}
