internal import COpenAL
import Foundation
import SpoolCore
import Synchronization

extension OpenALDevice {
    /// One service pass over every source: checks the device is still connected, then lets
    /// each voice unqueue, refill, restart and move its ramps on; runs the handler calls that
    /// fell due after releasing the lock, on the calling thread.
    /// - Returns: false once the device is closed or lost (the pump then ends).
    @discardableResult
    func serviceVoices() -> Bool {
        let outcome: (Deliveries, Bool)
        do {
            outcome = try perform { s -> (Deliveries, Bool) in
                var deliveries = Deliveries()
                guard connectedNow() else {
                    // ALC_EXT_disconnect: OpenAL Soft has stopped every source and mixes no more.
                    let error = AudioError(.deviceLost, "openal:\(name): the device went away (ALC_CONNECTED is 0)")
                    shutDown(&s, reason: error, &deliveries)
                    if let handler = eventHandler.withLock({ $0 }) { deliveries.add { handler(.deviceLost(error)) } }
                    return (deliveries, false)
                }
                let step = ServiceStep(clock: clockNanoseconds(), heardHostTime: nextHeardHostTime())
                // Read in place: iterating the values would copy each entry and its weak reference.
                for index in s.voices.values.indices { s.voices.values[index].owner?.service(step, &deliveries) }
                return (deliveries, true)
            }
        } catch {
            return false
        }
        if !outcome.1 { clock?.stop() }
        outcome.0.run()
        return outcome.1
    }

    /// Renders one period of the null device to nowhere (`alcRenderSamplesSOFT`), on its clock thread.
    func renderToNowhere(_ buffer: UnsafeMutablePointer<Float>, frames: Int) {
        alcRenderSamplesSOFT(context.device.pointer, buffer, Int32(frames))
        renderState.withLock { $0.renderedFrames += Int64(frames) }
        if let tap = renderTap.withLock({ $0 }) { tap(UnsafePointer(buffer), frames) }
    }
}

/// The thread that services a device's sources: every `interval` seconds for the sound
/// server, and after each period for the null device. It holds the device only while it
/// services it, so the device can go away (and its `deinit` run) between passes.
final class PumpThread: Sendable {
    private let stopped = Atomic<Bool>(false)
    private let wakeup = DispatchSemaphore(value: 0)
    /// The thread's `pthread_self()`, 0 until it runs: tests check where handlers run.
    let threadID = Atomic<UInt>(0)
    /// What its passes cost and how far apart they came.
    let load = PumpLoad()

    func start(device: OpenALDevice, interval: Double) {
        let running = ServiceThreads.starting(stop: { [self] in stop() })
        let thread = Thread { [weak device, self] in
            defer { ServiceThreads.ended(running) }
            threadID.store(UInt(pthread_self()), ordering: .releasing)
            // Named from inside: Linux keeps a name set before start only for the Thread
            // object, and takes at most 15 characters.
            Thread.current.name = "spool-al-pump"
            while !stopped.load(ordering: .acquiring) {
                _ = wakeup.wait(timeout: .now() + interval)
                if stopped.load(ordering: .acquiring) { break }
                guard let device, load.measure({ device.serviceVoices() }) else { break }
            }
        }
        thread.start()
    }

    /// Runs a pass now rather than at the next interval.
    func wake() { wakeup.signal() }

    /// Ends the thread after its current pass; never waits (it may be called on the thread itself).
    func stop() {
        stopped.store(true, ordering: .releasing)
        wakeup.signal()
    }
}

/// The null device's clock: renders the loopback device to nowhere at the pace a sound card
/// would take audio, on absolute deadlines of `CLOCK_MONOTONIC` (no drift). On start it
/// renders `periodCount` periods to fill its virtual buffer, then one every period; a period
/// rendered too late for the virtual buffer counts as an xrun and refills it, as a card would.
/// After each period it wakes the pump, which services the sources. The thread asks for
/// real-time priority (`RenderPriority`).
final class NullClock: Sendable {
    let periodFrames: Int
    let periodCount: Int
    let sampleRate: Double
    private let stopped = Atomic<Bool>(false)
    /// The thread's `pthread_self()`, 0 until it runs.
    let threadID = Atomic<UInt>(0)
    /// Host time at which everything rendered so far will have been played; 0 when stopped.
    private let drainTime = Atomic<UInt64>(0)
    private let xruns = Atomic<Int>(0)
    /// What its periods' renders cost (`alcRenderSamplesSOFT`: OpenAL Soft's whole mix), and
    /// which late periods were stalls.
    let load = RenderLoad()

    init(periodFrames: Int, periodCount: Int, sampleRate: Double) {
        self.periodFrames = periodFrames
        self.periodCount = periodCount
        self.sampleRate = sampleRate
    }

    var xrunCount: Int { xruns.load(ordering: .relaxed) }

    /// Frames rendered and not yet played by the virtual device.
    func queuedFrames(now: UInt64) -> Int {
        let drain = drainTime.load(ordering: .relaxed)
        guard drain > now else { return 0 }
        return Int((Double(drain - now) * 1e-9 * sampleRate).rounded())
    }

    func start(device: OpenALDevice) {
        let running = ServiceThreads.starting(stop: { [self] in stop() })
        let thread = Thread { [weak device, self] in
            defer { ServiceThreads.ended(running) }
            threadID.store(UInt(pthread_self()), ordering: .releasing)
            Thread.current.name = "spool-al-null"
            // The mixer of this device: real-time, as the queue engine's render thread and as
            // OpenAL Soft's own mixer thread on a sound card.
            RenderPriority.requestRealTime()
            run(device: { device })
        }
        thread.start()
    }

    func stop() {
        stopped.store(true, ordering: .releasing)
        drainTime.store(0, ordering: .relaxed)
    }

    private func run(device: () -> OpenALDevice?) {
        let buffer = UnsafeMutablePointer<Float>.allocate(capacity: periodFrames * 2)
        defer { buffer.deallocate() }
        let nanosecondsPerFrame = 1e9 / sampleRate
        // The virtual device began playing frame `anchorFrame` at `anchorTime`; deadlines
        // come from this anchor, never from the previous wake-up.
        var anchorTime = HostTime.now()
        var anchorFrame: Int64 = 0
        var rendered: Int64 = 0
        func hostTime(ofFrame frame: Int64) -> UInt64 {
            anchorTime &+ UInt64((Double(frame - anchorFrame) * nanosecondsPerFrame).rounded())
        }
        let period = Int64(periodFrames)
        let periodNanoseconds = Int((Double(periodFrames) * nanosecondsPerFrame).rounded())
        var overranSinceWake = false
        while !stopped.load(ordering: .acquiring) {
            // Holds the device only while rendering, so it can go away between periods.
            let alive: Bool = {
                guard let device = device() else { return false }
                let periods = rendered == anchorFrame ? periodCount : 1  // fill the virtual buffer first
                for _ in 0..<periods {
                    if load.measure(periodNanoseconds: periodNanoseconds, {
                        device.renderToNowhere(buffer, frames: periodFrames)
                    }) { overranSinceWake = true }
                    rendered += period
                }
                device.pump.wake()
                return true
            }()
            guard alive, !stopped.load(ordering: .acquiring) else { break }
            drainTime.store(hostTime(ofFrame: rendered), ordering: .relaxed)
            // The next period is due once the virtual play head has taken one more.
            HostTime.sleep(until: hostTime(ofFrame: rendered - Int64(periodCount - 1) * period))
            let now = HostTime.now()
            if now >= hostTime(ofFrame: rendered) {
                anchorTime = now
                anchorFrame = rendered
                load.late(afterOverrun: overranSinceWake)
                xruns.add(1, ordering: .relaxed)
            }
            overranSinceWake = false
        }
        drainTime.store(0, ordering: .relaxed)
    }
}

/// The devices' pump and clock threads that are running, so that the process can stop them
/// before it exits.
///
/// OpenAL Soft frees what is left of its devices in a library destructor when the process
/// exits. A thread of Spool's still rendering or servicing a device then, or letting go of the
/// device's last reference (which closes it), races that cleanup and crashes the process.
/// The first thread started registers an `atexit` handler, which runs before the library
/// destructors: it stops every running thread and waits (up to a second) for each to end.
enum ServiceThreads {
    private struct Registry {
        var stops: [Int: @Sendable () -> Void] = [:]
        var nextID = 0
        var handlerRegistered = false
    }

    private static let registry = Locked(Registry())
    private static let ended = DispatchSemaphore(value: 0)

    /// Registers a thread about to start; `stop` asks it to end after its current pass.
    /// - Returns: Its id, for `ended(_:)`.
    static func starting(stop: @escaping @Sendable () -> Void) -> Int {
        let (id, register) = registry.withLock { r -> (Int, Bool) in
            r.nextID += 1
            r.stops[r.nextID] = stop
            defer { r.handlerRegistered = true }
            return (r.nextID, !r.handlerRegistered)
        }
        if register { atexit { ServiceThreads.stopAll(waitingAtMost: 1) } }
        return id
    }

    /// Tells that thread `id` has ended: it holds no device any more.
    static func ended(_ id: Int) {
        registry.withLock { _ = $0.stops.removeValue(forKey: id) }
        ended.signal()
    }

    /// The threads running now.
    static var runningCount: Int { registry.withLock { $0.stops.count } }

    /// Stops every running thread and waits up to `seconds` for them all to end.
    static func stopAll(waitingAtMost seconds: Double) {
        for stop in registry.withLock({ Array($0.stops.values) }) { stop() }
        let deadline = DispatchTime.now() + seconds
        while runningCount > 0, ended.wait(timeout: deadline) == .success {}
    }
}
