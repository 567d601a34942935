import Foundation
import SpoolCore
import SpoolResampling
import Synchronization

/// Mixes every running `BufferQueue` into one output device: converts each queue's rate and
/// channel count to the device's, applies volume, pan and fades as ramps, and plays silence
/// (counting an underrun) when a queue runs dry.
///
/// The render path allocates nothing, takes no lock another thread holds, does no I/O and
/// calls no user code: queues cross to it through lock-free rings and atomics, and finished
/// buffers go back through a ring to a callback thread that runs the programs' callbacks.
/// On an offline device (rendered on demand by the caller) there is no real-time thread, so
/// rendering and control calls take turns under one gate and callbacks run right after each
/// render call, on the caller's thread (or synchronously on the queue's `DispatchQueue`),
/// as `AudioQueueOfflineRender` does.
///
/// A queue that starts on a device that rewinds (`OutputDevice.rewindSupport`) is not queued
/// behind the periods the device already holds: the device re-mixes them with the new queue
/// added, from just past its play head (`startsBelowFloor`).
public final class QueueEngine: RewindingRenderer, Sendable {
    /// The device the engine plays through.
    public let device: any OutputDevice
    /// The device's format: what every queue is converted to.
    public var format: AudioFormat { device.format }

    /// Most queues an engine mixes unless it is made with another count: as many as OpenAL
    /// Soft's sources by default (256).
    public static let defaultMaximumQueues = 256
    /// The largest count an engine can be made with.
    public static let maximumQueuesLimit = 65_536
    /// Most queues this engine mixes at once, fixed at creation: its slot table is made to
    /// that size, so nothing grows on the render thread, which looks at one flag per slot
    /// each period (a few microseconds for thousands).
    public let maximumQueues: Int

    let isRealTime: Bool
    private let slots: SlotTable
    private let control = Locked<ControlState>(ControlState())
    /// Serialises rendering with control calls when there is no real-time thread.
    let offlineGate = Locked<Void>(())
    private let pump: CallbackPump

    struct ControlState {
        var queues: [Int: WeakQueue] = [:]
        var started = false
    }

    struct WeakQueue {
        weak var queue: BufferQueue?
    }

    /// The level queues made on it get unless they ask for another (see `ResamplingQuality`).
    public var resamplingQuality: ResamplingQuality {
        get { defaultQuality.withLock { $0 } }
        set { defaultQuality.withLock { $0 = newValue } }
    }
    private let defaultQuality = Locked(ResamplingQuality.default)

    /// Seconds the device holds ahead of the speaker: what it reports while it plays (the sound
    /// server's timing, ALSA's delay, the null device's clock model), or its granted buffer,
    /// periods × period frames, while it reports nothing.
    public var outputLatency: Double {
        let queued = device.queuedFrames
        return Double(queued > 0 ? queued : device.periodFrames * device.periodCount) / format.sampleRate
    }

    /// Whether a queue that starts asks the device to rewind, so that it is heard within the
    /// device's safety margin of the call rather than behind the periods already mixed (the
    /// buffer floor). On by default; it has effect only on a device that rewinds
    /// (`rewindSupport`). Audio already playing is not touched: the new queue is added to
    /// what was mixed, and starts with its usual fade-in.
    public var startsBelowFloor: Bool {
        get { rewindOnStart.load(ordering: .relaxed) }
        set { rewindOnStart.store(newValue, ordering: .relaxed) }
    }
    private let rewindOnStart = Atomic<Bool>(true)

    /// Whether each period's mix goes through `SoftLimiter` (off unless set): samples at or
    /// below −1 dBFS are untouched, so a mix below it renders bit for bit as without.
    public var outputLimiter: Bool {
        get { limiterOn.load(ordering: .relaxed) }
        set { limiterOn.store(newValue, ordering: .relaxed) }
    }
    private let limiterOn = Atomic<Bool>(false)

    /// Whether the device can rewind, and when not, why: starts then wait behind the periods
    /// it holds.
    public var rewindSupport: RewindSupport {
        isRealTime ? device.rewindSupport : .unavailable("\(device.name) renders on demand: nothing is queued ahead")
    }

    /// Control side: whether a start should mark its queue for the device's next rewind.
    var rewindsOnStart: Bool { startsBelowFloor && isRealTime && device.isRunning && device.rewindSupport.isAvailable }

    /// Makes an engine over `device` that mixes up to `defaultMaximumQueues` queues. The
    /// engine starts the device with `start()`.
    /// - Parameter device: ALSA, null or offline output.
    public convenience init(device: any OutputDevice) {
        self.init(device: device, slots: Self.defaultMaximumQueues)
    }

    /// Makes an engine over `device` that mixes up to `maximumQueues` queues.
    /// - Parameters:
    ///   - device: ALSA, null or offline output.
    ///   - maximumQueues: 1…`maximumQueuesLimit`.
    /// - Throws: `.invalidParameter` outside that range.
    public convenience init(device: any OutputDevice, maximumQueues: Int) throws {
        guard (1...Self.maximumQueuesLimit).contains(maximumQueues) else {
            throw AudioError(.invalidParameter, "an engine mixes 1...\(Self.maximumQueuesLimit) queues, not \(maximumQueues)")
        }
        self.init(device: device, slots: maximumQueues)
    }

    private init(device: any OutputDevice, slots count: Int) {
        self.device = device
        isRealTime = device.rendersInRealTime
        maximumQueues = count
        slots = SlotTable(capacity: count)
        pump = CallbackPump()
        pump.engine = self
        prepareRateConverters()
    }

    deinit {
        device.stop()
        pump.shutdown()
    }

    /// Starts the device pulling from the engine.
    ///
    /// The device holds the engine only through an unowned reference, so that a running
    /// device does not keep the engine alive: once its owners (back-end, queues) let go,
    /// `deinit` stops the device, which returns only when the render thread will not call
    /// the engine again.
    /// - Throws: The device's error.
    public func start() throws {
        try control.withLock { state in
            guard !state.started else { return }
            try device.start(renderer: UnownedRenderer(self))
            state.started = true
        }
    }

    /// Stops the device; queues keep their buffers and state.
    public func stop() {
        control.withLock { state in
            guard state.started else { return }
            device.stop()
            state.started = false
        }
    }

    /// Whether the device is pulling from the engine.
    public var isRunning: Bool { control.withLock { $0.started } && device.isRunning }

    // MARK: Queues

    func attach(_ queue: BufferQueue, slot: QueueSlot) throws -> Int {
        let index = try slots.claim(slot)
        control.withLock { $0.queues[index] = WeakQueue(queue: queue) }
        return index
    }

    func detach(index: Int) {
        slots.release(index)
        control.withLock { _ = $0.queues.removeValue(forKey: index) }
    }

    func queue(at index: Int) -> BufferQueue? { control.withLock { $0.queues[index]?.queue } }

    var attachedIndices: [Int] { control.withLock { Array($0.queues.keys) } }

    /// Runs render-side work for a control call: on a real-time engine the render thread
    /// does it at its next period; offline, the caller does it now, under the gate.
    func applyNow(_ slot: QueueSlot) -> Bool {
        guard !isRealTime || !device.isRunning else { return false }
        let due = offlineGate.withLock { _ in slot.processCommands() }
        if due { deliverCallbacks() }
        return true
    }

    func wakeCallbacks() { pump.wake() }

    func deliverCallbacks() {
        for index in attachedIndices { queue(at: index)?.deliverCompletions() }
    }

    // MARK: Rendering

    public func render(into buffer: UnsafeMutablePointer<Float>, frames: Int, timestamp: RenderTimestamp) {
        if isRealTime {
            let due = renderSlots(into: buffer, frames: frames, timestamp: timestamp)
            limit(buffer, frames: frames)
            if due { pump.wake() }
        } else {
            let due = offlineGate.withLock { _ in renderSlots(into: buffer, frames: frames, timestamp: timestamp) }
            limit(buffer, frames: frames)
            if due { deliverCallbacks() }
        }
    }

    /// Puts the mix through the limiter, when it is on.
    private func limit(_ buffer: UnsafeMutablePointer<Float>, frames: Int) {
        if limiterOn.load(ordering: .relaxed) { SoftLimiter.process(buffer, count: frames * device.format.channelCount) }
    }

    public func renderStarts(into buffer: UnsafeMutablePointer<Float>, frames: Int, timestamp: RenderTimestamp) -> Bool {
        guard isRealTime else { return false }
        var added = false, due = false
        slots.forEachActive { slot in
            guard slot.rewindPending.exchange(0, ordering: .acquiringAndReleasing) != 0 else { return }
            let result = slot.mixStarting(into: buffer, frames: frames, timestamp: timestamp)
            if result.added { added = true }
            if result.due { due = true }
        }
        // What the device mixed before went through the limiter already: samples at or below
        // the threshold pass again untouched, those it bent are bent a little further.
        if added { limit(buffer, frames: frames) }
        if due { pump.wake() }
        return added
    }

    /// Render thread: the device will not rewind for the starts waiting on it; they go ahead
    /// in the next render, behind the buffer (`RewindingRenderer.declineStarts`).
    public func declineStarts() {
        slots.forEachActive { slot in slot.rewindPending.store(0, ordering: .releasing) }
    }

    private func renderSlots(into buffer: UnsafeMutablePointer<Float>, frames: Int, timestamp: RenderTimestamp) -> Bool {
        buffer.update(repeating: 0, count: frames * device.format.channelCount)
        var due = false
        slots.forEachActive { slot in
            if slot.mix(into: buffer, frames: frames, timestamp: timestamp) { due = true }
        }
        return due
    }
}

/// Hands render calls to an engine without keeping it alive. The engine stops the device in
/// its `deinit`; the reference is weak all the same (a lock-free load, no allocation), so a
/// render call that races the engine's release renders silence instead of touching freed
/// memory: a test run once crashed on the null device's render thread retaining a freed engine.
private final class UnownedRenderer: RewindingRenderer, @unchecked Sendable {
    // Sendable: the reference never changes but to nil; the engine is Sendable.
    weak let engine: QueueEngine?
    let channelCount: Int

    init(_ engine: QueueEngine) {
        self.engine = engine
        channelCount = engine.device.format.channelCount
    }

    func render(into buffer: UnsafeMutablePointer<Float>, frames: Int, timestamp: RenderTimestamp) {
        guard let engine else {
            buffer.update(repeating: 0, count: frames * channelCount)
            return
        }
        engine.render(into: buffer, frames: frames, timestamp: timestamp)
    }

    func renderStarts(into buffer: UnsafeMutablePointer<Float>, frames: Int, timestamp: RenderTimestamp) -> Bool {
        engine?.renderStarts(into: buffer, frames: frames, timestamp: timestamp) ?? false
    }

    func declineStarts() { engine?.declineStarts() }
}

/// The engine's fixed table of queue slots. Claiming and releasing happen on control
/// threads under a lock; the render thread only reads the table, through atomics.
final class SlotTable: @unchecked Sendable {
    // Sendable: `entries` is written only under `lock`, and a slot is published to the
    // render thread by the release store of its `active` flag after it is written.
    private let entries: UnsafeMutablePointer<Unmanaged<QueueSlot>?>
    /// One flag per entry, side by side: the render thread reads them all every period, and
    /// flags held in objects (an array of classes) would cost a retain and a release each.
    private let active: UnsafeMutablePointer<Atomic<Bool>>
    private let lock: Locked<Claims>
    /// Render passes begun and ended (`forEachActive`): a released entry may be replaced
    /// once every pass that could have seen it active has ended.
    private let passesBegun = Atomic<Int>(0)
    private let passesEnded = Atomic<Int>(0)
    let capacity: Int

    struct Claims {
        var used: Set<Int> = []
        /// For each entry, the passes begun when it was released.
        var releasedAt: [Int]
    }

    init(capacity: Int) {
        self.capacity = capacity
        entries = .allocate(capacity: capacity)
        entries.initialize(repeating: nil, count: capacity)
        active = .allocate(capacity: capacity)
        for i in 0..<capacity { (active + i).initialize(to: Atomic(false)) }
        lock = Locked(Claims(releasedAt: [Int](repeating: 0, count: capacity)))
    }

    deinit {
        for i in 0..<capacity { entries[i]?.release() }
        entries.deallocate()
        active.deinitialize(count: capacity)
        active.deallocate()
    }

    func claim(_ slot: QueueSlot) throws -> Int {
        // A free entry whose old slot no render pass can still be reading; the render thread
        // ends its pass within a period, so waiting is rare and short.
        let deadline = HostTime.now() + HostTime.nanoseconds(1)
        while true {
            let claimed = try lock.withLock { claims -> Int? in
                let free = (0..<capacity).filter { !claims.used.contains($0) }
                guard !free.isEmpty else {
                    throw AudioError(.invalidState, "the engine already mixes \(capacity) queues")
                }
                let ended = passesEnded.load(ordering: .acquiring)
                guard let index = free.first(where: { claims.releasedAt[$0] <= ended }) else { return nil }
                claims.used.insert(index)
                entries[index]?.release()
                entries[index] = Unmanaged.passRetained(slot)
                active[index].store(true, ordering: .releasing)
                return index
            }
            if let claimed { return claimed }
            guard HostTime.now() < deadline else {
                throw AudioError(.invalidState, "the engine's render thread has not finished a period for a second")
            }
            usleep(200)
        }
    }

    /// Stops rendering the slot. Its memory stays until the index is claimed again (or the
    /// table goes), and the index is claimed again only once every render pass that may have
    /// read the entry has ended.
    func release(_ index: Int) {
        lock.withLock { claims in
            // Sequentially consistent, with the pass's count and reads below: either a pass
            // counted here sees the entry inactive, or it is counted.
            active[index].store(false, ordering: .sequentiallyConsistent)
            claims.used.remove(index)
            claims.releasedAt[index] = passesBegun.load(ordering: .sequentiallyConsistent)
        }
    }

    /// Render side: visits each active slot without retaining or releasing it.
    func forEachActive(_ body: (QueueSlot) -> Void) {
        passesBegun.add(1, ordering: .sequentiallyConsistent)
        for i in 0..<capacity where active[i].load(ordering: .sequentiallyConsistent) {
            // The table keeps the slot alive past this pass (see `release`), which lets the
            // call skip the retain and release that `takeUnretainedValue()` would cost.
            entries[i]?._withUnsafeGuaranteedRef(body)
        }
        passesEnded.add(1, ordering: .releasing)
    }
}

/// The thread that runs queue callbacks for a real-time engine: the render thread wakes it
/// with a semaphore signal (no lock, no allocation) when buffers finish.
final class CallbackPump: @unchecked Sendable {
    // Sendable: `engine` is set once before the thread starts; the rest is a semaphore and atomics.
    weak var engine: QueueEngine?
    private let semaphore = DispatchSemaphore(value: 0)
    private let running = Atomic<Bool>(true)
    private let pending = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    init() {
        let thread = Thread { [self] in loop() }
        thread.name = "spool.queue-callbacks"
        thread.start()
    }

    func wake() {
        // One signal per burst: the pump drains everything each time it wakes.
        if !pending.exchange(true, ordering: .acquiringAndReleasing) { semaphore.signal() }
    }

    func shutdown() {
        running.store(false, ordering: .releasing)
        semaphore.signal()
    }

    private func loop() {
        while running.load(ordering: .acquiring) {
            semaphore.wait()
            pending.store(false, ordering: .releasing)
            guard running.load(ordering: .acquiring) else { break }
            engine?.deliverCallbacks()
        }
    }
}
