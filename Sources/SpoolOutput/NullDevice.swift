import Synchronization
import SpoolCore

/// An output device that plays to nowhere, paced by the monotonic clock exactly as a sound
/// card of the configured size would be: the embedded default when no real device opens.
///
/// On start it renders `periodCount` periods at once to fill its virtual buffer, then one
/// period every period's duration, on absolute deadlines (no drift). Each period's timestamp
/// says when its first frame would leave the virtual device, so audio rendered now is heard
/// behind the (P−1)…P periods already queued. A render that comes too late for the virtual
/// buffer counts as an xrun and refills the buffer, as a real device would.
///
/// The closest Apple equivalent is an Audio Queue on a null output device.
public final class NullDevice: OutputDevice {
    /// `null`.
    public let name = "null"
    /// The format the device runs at (48 kHz when the configuration names no rate).
    public let format: AudioFormat
    /// Frames per period.
    public let periodFrames: Int
    /// Periods in the virtual buffer.
    public let periodCount: Int

    private let thread = RenderThread.Slot(device: "null")
    private let clock: VirtualClock
    private let events: RenderThread.EventRelay

    /// The rate used when the configuration leaves it to the device.
    public static let defaultSampleRate = 48_000.0

    /// Makes a device; nothing runs until `start(renderer:)`.
    /// - Parameter configuration: Rate (`nil` for 48 kHz), channels, period size and count.
    /// - Throws: `AudioError.Code.invalidParameter` naming the configuration field at fault.
    public init(configuration: OutputConfiguration) throws {
        let configuration = try configuration.validated()
        format = try AudioFormat(sampleRate: configuration.sampleRate ?? Self.defaultSampleRate,
                                 channelCount: configuration.channelCount)
        periodFrames = configuration.periodFrames
        periodCount = configuration.periodCount
        clock = VirtualClock(sampleRate: format.sampleRate)
        events = RenderThread.EventRelay(label: "spool.null.events") { status in
            AudioError(.deviceLost, "null: stopped (status \(status))")
        }
    }

    deinit { thread.stop() }

    /// Whether the device is pulling audio.
    public var isRunning: Bool { thread.isRunning }

    /// Times the render thread woke too late for the virtual buffer and refilled it.
    public var xrunCount: Int { events.xrunCount }

    /// What its periods' renders cost, and which late periods were the machine's stalls
    /// rather than the renderer's overruns.
    public let renderLoad = RenderLoad()

    /// Whether the render thread runs (or last ran) with `SCHED_FIFO` priority; false before
    /// the first start and where the system refuses real-time scheduling.
    public var isRealTime: Bool { thread.isRealTime }

    /// Frames rendered and not yet played by the clock: what new audio waits behind.
    public var queuedFrames: Int { clock.queuedFrames(now: HostTime.now()) }

    /// Starts the clock and pulls from `renderer` on a real-time render thread.
    /// The corresponding Apple call is `AudioQueueStart`.
    /// - Parameter renderer: Asked for one period at a time.
    /// - Throws: `AudioError.Code.invalidState` when already running;
    ///   `AudioError.Code.libraryFailure` when no thread can be made.
    public func start(renderer: any AudioRenderer) throws {
        try thread.start(name: "spool-null") {
            let loop = NullRenderLoop(format: format, periodFrames: periodFrames, periodCount: periodCount,
                                      renderer: renderer, clock: clock, events: events, load: renderLoad)
            let startTime = HostTime.now()
            return { loop.run(on: $0, startTime: startTime) }
        }
    }

    /// Stops the clock; returns once the renderer will not be called again (within a period).
    /// Does nothing when not running. The corresponding Apple call is `AudioQueueStop(queue, true)`.
    public func stop() {
        thread.stop()
        clock.reset()
    }

    /// Sets what to call, on a queue of the device's own (never the render thread), when the
    /// device reports an xrun.
    /// - Parameter handler: The handler, or `nil` to stop listening.
    public func setEventHandler(_ handler: (@Sendable (OutputDeviceEvent) -> Void)?) {
        events.setHandler(handler)
    }
}

/// When the virtual device's queue runs dry, published by the render thread for `queuedFrames`.
final class VirtualClock: Sendable {
    private let sampleRate: Double
    /// Host time at which every frame rendered so far will have been played; 0 when stopped.
    private let drainTime = Atomic<UInt64>(0)

    init(sampleRate: Double) { self.sampleRate = sampleRate }

    func publish(drainTime: UInt64) { self.drainTime.store(drainTime, ordering: .relaxed) }
    func reset() { drainTime.store(0, ordering: .relaxed) }

    func queuedFrames(now: UInt64) -> Int {
        let drain = drainTime.load(ordering: .relaxed)
        guard drain > now else { return 0 }
        return Int((Double(drain - now) * 1e-9 * sampleRate).rounded())
    }
}

/// The null device's render loop: everything it touches is made before the thread starts.
private final class NullRenderLoop: Sendable {
    let format: AudioFormat
    let periodFrames: Int
    let periodCount: Int
    let renderer: any AudioRenderer
    let clock: VirtualClock
    let events: RenderThread.EventRelay
    let load: RenderLoad

    init(format: AudioFormat, periodFrames: Int, periodCount: Int, renderer: any AudioRenderer,
         clock: VirtualClock, events: RenderThread.EventRelay, load: RenderLoad) {
        self.format = format
        self.periodFrames = periodFrames
        self.periodCount = periodCount
        self.renderer = renderer
        self.clock = clock
        self.events = events
        self.load = load
    }

    func run(on thread: RenderThread, startTime: UInt64) {
        let buffer = UnsafeMutablePointer<Float>.allocate(capacity: periodFrames * format.channelCount)
        defer { buffer.deallocate() }
        let nanosecondsPerFrame = 1e9 / format.sampleRate
        // The virtual device began playing frame `anchorFrame` at host time `anchorTime`; every
        // deadline is computed from this anchor, never from the previous wake-up, so there is no drift.
        var anchorTime = startTime
        var anchorFrame: Int64 = 0
        var renderedFrames: Int64 = 0
        func hostTime(ofFrame frame: Int64) -> UInt64 {
            anchorTime &+ UInt64((Double(frame - anchorFrame) * nanosecondsPerFrame).rounded())
        }
        let periodNanoseconds = Int((Double(periodFrames) * nanosecondsPerFrame).rounded())
        var overranSinceWake = false
        func renderPeriod() {
            let timestamp = RenderTimestamp(sampleTime: renderedFrames, hostTime: hostTime(ofFrame: renderedFrames))
            if load.measure(periodNanoseconds: periodNanoseconds, {
                renderer.render(into: buffer, frames: periodFrames, timestamp: timestamp)
            }) { overranSinceWake = true }
            renderedFrames += Int64(periodFrames)
        }
        let period = Int64(periodFrames)
        let fill = Int64(periodCount)
        while !thread.shouldStop {
            if renderedFrames == anchorFrame {
                for _ in 0..<periodCount { renderPeriod() }  // fill the virtual buffer
            } else {
                renderPeriod()
            }
            clock.publish(drainTime: hostTime(ofFrame: renderedFrames))
            // The next period is due once the play head has consumed one more period.
            HostTime.sleep(until: hostTime(ofFrame: renderedFrames - (fill - 1) * period))
            let now = HostTime.now()
            if now >= hostTime(ofFrame: renderedFrames) {
                // Woke after the virtual buffer ran dry: restart it from now, as a device does after an xrun.
                anchorTime = now
                anchorFrame = renderedFrames
                load.late(afterOverrun: overranSinceWake)
                events.reportXrun()
            }
            overranSinceWake = false
        }
    }
}
