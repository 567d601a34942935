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
/// It always rewinds (`requestRewind()`): woken at once, it has its renderer add what just
/// started into the frames not yet played, from 1 ms past the virtual play head on.
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
    let rewind = RewindRequest()
    /// Where the frames the virtual device plays are copied, when a test asks (`capture(frames:)`).
    private let capture = Locked<OutputCapture?>(nil)

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

    /// Always: the null device keeps every frame it has not played.
    public var rewindSupport: RewindSupport { .available }

    /// Wakes the render thread to re-mix the frames ahead of the play head (see the type's
    /// description); nothing happens while stopped or when the renderer is no
    /// `RewindingRenderer`.
    public func requestRewind() { if isRunning { rewind.request() } }

    /// Rewinds the render thread carried out, and requests that found nothing to rewrite.
    public var rewindCounts: (performed: Int, declined: Int) {
        (rewind.performed.load(ordering: .relaxed), rewind.declined.load(ordering: .relaxed))
    }

    /// From the next start on, copies the first `frames` frames the virtual device plays
    /// (each once it has left the rewindable window, so rewound frames appear as played):
    /// what the tests compare a rewind's output with.
    package func capture(frames: Int) -> OutputCapture {
        let target = OutputCapture(frames: frames, channelCount: format.channelCount)
        capture.withLock { $0 = target }
        return target
    }

    /// Starts the clock and pulls from `renderer` on a real-time render thread.
    /// The corresponding Apple call is `AudioQueueStart`.
    /// - Parameter renderer: Asked for one period at a time.
    /// - Throws: `AudioError.Code.invalidState` when already running;
    ///   `AudioError.Code.libraryFailure` when no thread can be made.
    public func start(renderer: any AudioRenderer) throws {
        try thread.start(name: "spool-null") {
            let loop = NullRenderLoop(format: format, periodFrames: periodFrames, periodCount: periodCount,
                                      renderer: renderer, clock: clock, events: events, load: renderLoad,
                                      rewind: rewind, capture: capture.withLock { $0 })
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

/// The first frames a device played, copied as they leave its rewindable window: what the
/// tests compare a rewind's output with. Written by the render thread into memory made
/// beforehand; read once the device has stopped.
package final class OutputCapture: @unchecked Sendable {
    // Sendable: the render thread writes `samples` below `count`, then publishes `count`;
    // readers read only below the count they load.
    private let samples: UnsafeMutablePointer<Float>
    private let capacity: Int
    private let channelCount: Int
    private let count = Atomic<Int>(0)

    init(frames: Int, channelCount: Int) {
        capacity = max(0, frames)
        self.channelCount = channelCount
        samples = .allocate(capacity: max(1, capacity * channelCount))
    }

    deinit { samples.deallocate() }

    /// Render thread: copies what fits of `frames` more frames.
    func record(_ source: UnsafePointer<Float>, frames: Int) {
        let done = count.load(ordering: .relaxed)
        let n = min(frames, capacity - done)
        guard n > 0 else { return }
        (samples + done * channelCount).update(from: source, count: n * channelCount)
        count.store(done + n, ordering: .releasing)
    }

    /// The frames captured so far, interleaved.
    package var frames: [Float] {
        let n = count.load(ordering: .acquiring)
        return Array(UnsafeBufferPointer(start: samples, count: n * channelCount))
    }
}

/// The null device's render loop: everything it touches is made before the thread starts.
private final class NullRenderLoop: Sendable {
    let format: AudioFormat
    let periodFrames: Int
    let periodCount: Int
    let renderer: any AudioRenderer
    let rewinder: (any RewindingRenderer)?
    let clock: VirtualClock
    let events: RenderThread.EventRelay
    let load: RenderLoad
    let rewind: RewindRequest
    let capture: OutputCapture?
    /// One period more than the virtual buffer: the period pushed out is one the play head has passed.
    let history: RewindHistory
    /// Frames past the play head a rewind leaves as they are: the time the re-mix takes.
    let rewindMargin: Int

    init(format: AudioFormat, periodFrames: Int, periodCount: Int, renderer: any AudioRenderer,
         clock: VirtualClock, events: RenderThread.EventRelay, load: RenderLoad, rewind: RewindRequest, capture: OutputCapture?) {
        self.format = format
        self.periodFrames = periodFrames
        self.periodCount = periodCount
        self.renderer = renderer
        rewinder = renderer as? any RewindingRenderer
        self.clock = clock
        self.events = events
        self.load = load
        self.rewind = rewind
        self.capture = capture
        history = RewindHistory(capacity: (periodCount + 1) * periodFrames, channelCount: format.channelCount)
        rewindMargin = max(1, Int((format.sampleRate * 0.001).rounded(.up)))
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
            history.append(buffer, frames: periodFrames) { played, frames in capture?.record(played, frames: frames) }
            renderedFrames += Int64(periodFrames)
        }
        func rewindNow() {
            guard rewind.take() else { return }
            guard let rewinder else { return rewind.record(rewound: false) }
            // The frame the virtual play head is on, and the first one left to rewrite.
            let now = HostTime.now()
            let elapsed = now > anchorTime ? Double(now - anchorTime) / nanosecondsPerFrame : 0
            let from = anchorFrame + Int64(elapsed.rounded(.up)) + Int64(rewindMargin)
            guard from < renderedFrames else { return rewind.decline(rewinder) }
            guard history.remix(from: from, renderer: rewinder, hostTime: hostTime(ofFrame:)) != nil else {
                return rewind.decline(rewinder)
            }
            rewind.record(rewound: true)
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
            // The next period is due once the play head has consumed one more period; a rewind
            // asked for meanwhile is done at once.
            while rewind.sleep(until: hostTime(ofFrame: renderedFrames - (fill - 1) * period)), !thread.shouldStop {
                rewindNow()
            }
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
