internal import COpenAL
import Foundation
import SpoolCore
import SpoolOutput
import Synchronization

extension OpenALDevice {
    /// One service pass over every source: checks the device is still connected, then lets
    /// each voice unqueue, refill, restart and move its ramps on; runs the handler calls that
    /// fell due after releasing the lock, on the calling thread, or, when `handlers` is given,
    /// hands them to that thread.
    /// - Returns: false once the device is closed or lost (the pump then ends).
    @discardableResult
    func serviceVoices(handlers: HandlerThread? = nil) -> Bool {
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
        if !outcome.1 { stopNullDevice() }
        if let handlers { handlers.post(outcome.0) } else { outcome.0.run() }
        return outcome.1
    }

    /// Starts Spool's null device rendering this loopback device, registered with
    /// `ServiceThreads` so that the process's exit stops it before OpenAL Soft cleans up.
    func startNullDevice() throws {
        guard let nullDevice else { return }
        let renderer = LoopbackRenderer(device: self)
        let registration = ServiceThreads.starting(stop: { [nullDevice] in
            renderer.stop()
            nullDevice.stop()
        })
        nullRenderer.withLock { $0 = (renderer, registration) }
        do {
            try nullDevice.start(renderer: renderer)
        } catch {
            stopNullDevice()
            throw error
        }
    }

    /// Stops the null device's rendering (once the call returns it renders this device no
    /// more, unless the call came on its own render thread, where it stops after the period).
    func stopNullDevice() {
        guard let nullDevice, let started = nullRenderer.withLock({ r in defer { r = nil }; return r }) else { return }
        started.renderer.stop()
        nullDevice.stop()
        ServiceThreads.ended(started.registration)
    }

    /// The thread that renders the null device, 0 before it first rendered or for other kinds.
    var nullRenderThreadID: UInt { nullRenderer.withLock { $0?.renderer.threadID.load(ordering: .acquiring) } ?? 0 }

    /// Renders one period of the null device to nowhere (`alcRenderSamplesSOFT`), on its clock thread.
    func renderToNowhere(_ buffer: UnsafeMutablePointer<Float>, frames: Int) {
        var done = 0
        while done < frames { done += renderMix(into: buffer + done * 2, frames: frames - done) }
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
                guard let device, load.measure({ device.serviceVoices(handlers: device.handlers) }) else { break }
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

/// Where the handler calls of the pump's passes run: a thread of the device's own, so that a
/// handler that takes long (a feeder whose decoder stalls while it refills its voice) holds
/// up neither the pump, which converts and queues every streaming voice's audio, nor any
/// other voice. The calls run in the order the passes made them.
final class HandlerThread: Sendable {
    private let pending = Locked<[Deliveries]>([])
    private let wakeup = DispatchSemaphore(value: 0)
    private let stopped = Atomic<Bool>(false)
    /// The thread's `pthread_self()`, 0 until it runs: tests check where handlers run.
    let threadID = Atomic<UInt>(0)

    func start() {
        let running = ServiceThreads.starting(stop: { [self] in stop() })
        let thread = Thread { [self] in
            defer { ServiceThreads.ended(running) }
            threadID.store(UInt(pthread_self()), ordering: .releasing)
            Thread.current.name = "spool-al-calls"
            while true {
                wakeup.wait()
                let batches = pending.withLock { p in defer { p = [] }; return p }
                for deliveries in batches { deliveries.run() }
                if stopped.load(ordering: .acquiring) { break }
            }
        }
        thread.start()
    }

    /// Runs `deliveries` on the thread, after those posted before.
    func post(_ deliveries: Deliveries) {
        guard !deliveries.isEmpty else { return }
        pending.withLock { $0.append(deliveries) }
        wakeup.signal()
    }

    /// Ends the thread once it has run what was posted; never waits (it may be called on the
    /// thread itself).
    func stop() {
        stopped.store(true, ordering: .releasing)
        wakeup.signal()
    }
}

/// What Spool's null device renders for OpenAL: the loopback device's whole mix
/// (`alcRenderSamplesSOFT`), period by period, on the shared `NullDevice`'s clock-paced render
/// thread, which times it with its `RenderLoad` and counts its late periods. After each period
/// it wakes the pump, which services the sources. It holds the OpenAL device only while it
/// renders, so the device can go away (and its `deinit` run) between periods; once the device
/// is gone, or once the process's exit has stopped it, it renders silence.
final class LoopbackRenderer: AudioRenderer {
    private weak let device: OpenALDevice?
    private let stopped = Atomic<Bool>(false)
    /// The render thread's `pthread_self()`, 0 until it first renders.
    let threadID = Atomic<UInt>(0)

    init(device: OpenALDevice) { self.device = device }

    func render(into buffer: UnsafeMutablePointer<Float>, frames: Int, timestamp: RenderTimestamp) {
        if threadID.load(ordering: .relaxed) == 0 { threadID.store(UInt(pthread_self()), ordering: .releasing) }
        guard !stopped.load(ordering: .acquiring), let device else {
            buffer.update(repeating: 0, count: frames * 2)
            return
        }
        device.renderToNowhere(buffer, frames: frames)
        device.pump.wake()
    }

    /// Renders silence from now on without touching the OpenAL device.
    func stop() { stopped.store(true, ordering: .releasing) }
}

/// The devices' pump and clock threads that are running, so that the process can stop them
/// before it exits.
///
/// OpenAL Soft frees what is left of its devices in a library destructor when the process
/// exits. A thread of Spool's still rendering or servicing a device then races that cleanup.
/// The library's exit handler (`OpenALLibrary`), which runs before the library destructors,
/// stops every running thread here and waits (up to a second) for each to end, before it
/// closes OpenAL to every other call.
enum ServiceThreads {
    private struct Registry {
        var stops: [Int: @Sendable () -> Void] = [:]
        var nextID = 0
    }

    private static let registry = Locked(Registry())
    private static let ended = DispatchSemaphore(value: 0)

    /// Registers a thread about to start; `stop` asks it to end after its current pass.
    /// - Returns: Its id, for `ended(_:)`.
    static func starting(stop: @escaping @Sendable () -> Void) -> Int {
        registry.withLock { r -> Int in
            r.nextID += 1
            r.stops[r.nextID] = stop
            return r.nextID
        }
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
