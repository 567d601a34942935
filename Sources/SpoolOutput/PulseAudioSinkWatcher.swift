#if canImport(Glibc)
import Glibc
#endif
internal import CPulse
import Dispatch
import Synchronization
import SpoolCore

/// Follows a PulseAudio server's sinks and its default sink through a context
/// (`pa_context_subscribe` with `PA_SUBSCRIPTION_MASK_SINK | PA_SUBSCRIPTION_MASK_SERVER`)
/// and reports each change as an `OutputRouteChange`: what a `PulseAudioDevice` and a
/// `SoundServerMonitor` share.
///
/// The subscription callback runs on the main loop's thread, a device's render thread: it only
/// pushes the event into a lock-free ring and wakes the watcher's own queue (no lock, no
/// allocation). The queue asks the server, with the main loop lock, for a new sink's name
/// (`pa_context_get_sink_info_by_index`) and the default sink (`pa_context_get_server_info`),
/// the replies copied into memory it allocated, and keeps the sinks it knows by index: the
/// server names a removed sink by its index alone. libpulse itself still allocates on the main
/// loop's thread when it parses a new sink's description (its proplist).
///
/// Callbacks reach the watcher through an unretained pointer: its owner keeps it alive, and
/// clears the callback (`detach`) before it frees the context.
final class PulseAudioSinkWatcher: @unchecked Sendable {
    // Sendable: `context` and `generation` are guarded by the main loop lock; `known` by its
    // own lock; the ring has one producer (the main loop's thread) and one consumer (the queue).
    private let pulse: PulseAudioLibrary
    private let mainloop: OpaquePointer
    private let report: @Sendable (OutputRouteChange) -> Void
    private let queue: DispatchQueue
    private let wake: RenderThread.SourceBox
    /// Sink and server events waiting for the queue: `index << 8 | event type`.
    private let pending = SPSCRing(capacity: 256)
    /// The `Sync` the queue is to make before it looks at the events (`Sync.none` for none).
    private let pendingSync = Atomic<Int>(Sync.none.rawValue)
    private let stopped = Atomic<Bool>(false)
    private let known = Locked(Sinks())
    /// Main loop lock: the context followed, nil when detached.
    private var context: OpaquePointer?
    /// Main loop lock: changes at each attach and detach, so that a reply to an earlier
    /// context is not taken for one of the current.
    private var generation = 0

    /// Sink and server events the server has sent so far.
    let eventCount = Atomic<Int>(0)

    private struct Sinks {
        var names: [UInt32: String] = [:]
        var defaultSink: String?
    }

    /// What the queue does when it (re)reads the whole list of sinks.
    enum Sync: Int {
        case none = 0
        /// Reports what changed since the sinks last known: after the ring overflowed.
        case reportDifferences
        /// Reports nothing: the first list, at connection.
        case baseline
        /// Reports one `.serverReturned`: the first list after the server was lost.
        case serverReturned
    }

    /// Makes a watcher for contexts on `mainloop`; `report` is called on the watcher's queue.
    init(pulse: PulseAudioLibrary, mainloop: OpaquePointer, label: String,
         report: @escaping @Sendable (OutputRouteChange) -> Void) {
        self.pulse = pulse
        self.mainloop = mainloop
        self.report = report
        queue = DispatchQueue(label: label)
        let wake = DispatchSource.makeUserDataOrSource(queue: queue)
        self.wake = RenderThread.SourceBox(wake)
        wake.setEventHandler { [weak self] in self?.drain() }
        wake.activate()
    }

    deinit { wake.value.cancel() }

    /// The sinks the server has, by name, in the order it numbered them.
    var sinks: [String] { known.withLock { known in known.names.sorted { $0.key < $1.key }.map(\.value) } }

    /// The server's default sink, when known.
    var defaultSink: String? { known.withLock { $0.defaultSink } }

    /// Main loop lock, a ready context: subscribes it to sink and server events and has the
    /// queue read the sinks and the default sink, `sync` saying what to report of them.
    func attach(_ context: OpaquePointer, sync: Sync) {
        self.context = context
        generation += 1
        pulse.contextSetSubscribeCallback(context, { _, event, index, userdata in
            guard let userdata else { return }
            Unmanaged<PulseAudioSinkWatcher>.fromOpaque(userdata).takeUnretainedValue().received(event.rawValue, index: index)
        }, Unmanaged.passUnretained(self).toOpaque())
        let mask = PA_SUBSCRIPTION_MASK_SINK.rawValue | PA_SUBSCRIPTION_MASK_SERVER.rawValue
        if let operation = pulse.contextSubscribe(context, pa_subscription_mask_t(rawValue: mask), nil, nil) {
            pulse.operationUnref(operation)
        }
        pendingSync.store(sync.rawValue, ordering: .releasing)
        wake.value.or(data: 1)
    }

    /// Main loop lock (or the main loop stopped): stops following the context and forgets
    /// its sinks; the subscription callback is cleared, so the context may be freed.
    func detach() {
        if let context { pulse.contextSetSubscribeCallback(context, nil, nil) }
        context = nil
        generation += 1
        known.withLock { $0 = Sinks() }
    }

    /// Off the main loop's thread, its lock not held: returns once the queue has done what
    /// is pending, the first list of sinks included.
    func synchronize() {
        queue.sync { drain() }
    }

    /// Stops the queue for good; returns once it is idle, except on the main loop's own
    /// thread, which the queue may be waiting for (it then finds the watcher stopped).
    func stop() {
        stopped.store(true, ordering: .releasing)
        wake.value.cancel()
        if pulse.mainloopInThread(mainloop) == 0 { queue.sync {} }
    }

    /// Main loop thread: a sink came or went, or the server changed (its default sink, among
    /// others). Sink changes (volume, state) are ignored.
    private func received(_ event: UInt32, index: UInt32) {
        let facility = event & PA_SUBSCRIPTION_EVENT_FACILITY_MASK.rawValue
        let type = event & PA_SUBSCRIPTION_EVENT_TYPE_MASK.rawValue
        let change = PA_SUBSCRIPTION_EVENT_CHANGE.rawValue
        switch facility {
        case PA_SUBSCRIPTION_EVENT_SINK.rawValue where type != change: break
        case PA_SUBSCRIPTION_EVENT_SERVER.rawValue where type == change: break
        default: return
        }
        eventCount.add(1, ordering: .relaxed)
        // 23 bits of index: the server numbers sinks from 0 and does not reuse a number; past
        // that, or with the ring full, the queue reads the whole list again.
        let slot = facility == PA_SUBSCRIPTION_EVENT_SERVER.rawValue ? 0 : index
        if slot >= 1 << 23 || !pending.push(Int32(slot) << 8 | Int32(event)) {
            _ = pendingSync.compareExchange(expected: Sync.none.rawValue, desired: Sync.reportDifferences.rawValue,
                                            ordering: .acquiringAndReleasing)
        }
        wake.value.or(data: 1)
    }

    /// Queue: makes the pending list read, then handles the pending events, with the main
    /// loop lock; reports the changes once the lock is released.
    private func drain() {
        guard !stopped.load(ordering: .acquiring) else { return }
        var changes: [OutputRouteChange] = []
        pulse.mainloopLock(mainloop)
        if !stopped.load(ordering: .acquiring), let context, pulse.contextGetState(context) == PA_CONTEXT_READY {
            let generation = generation
            let sync = Sync(rawValue: pendingSync.exchange(Sync.none.rawValue, ordering: .acquiringAndReleasing)) ?? .none
            if sync != .none {
                // The list read now covers the events queued before it.
                while pending.pop() != nil {}
                changes += readSinks(on: context, generation: generation, sync: sync)
            }
            while self.generation == generation, let code = pending.pop() {
                changes += handle(UInt32(truncatingIfNeeded: code & 0xFF), index: UInt32(code >> 8), on: context,
                                  generation: generation)
            }
        }
        pulse.mainloopUnlock(mainloop)
        for change in changes { report(change) }
    }

    /// Queue, main loop lock: one sink or server event.
    private func handle(_ event: UInt32, index: UInt32, on context: OpaquePointer, generation: Int) -> [OutputRouteChange] {
        let facility = event & PA_SUBSCRIPTION_EVENT_FACILITY_MASK.rawValue
        let type = event & PA_SUBSCRIPTION_EVENT_TYPE_MASK.rawValue
        if facility == PA_SUBSCRIPTION_EVENT_SERVER.rawValue {
            guard let current = serverDefaultSink(on: context, generation: generation) else { return [] }
            let changed = known.withLock { known in
                defer { known.defaultSink = current }
                return known.defaultSink != current
            }
            return changed ? [OutputRouteChange(reason: .defaultDeviceChanged, device: current, defaultDevice: current)] : []
        }
        if type == PA_SUBSCRIPTION_EVENT_NEW.rawValue {
            guard known.withLock({ $0.names[index] == nil }),
                  let name = sinkName(at: index, on: context, generation: generation) else { return [] }
            known.withLock { $0.names[index] = name }
            return [OutputRouteChange(reason: .newDeviceAvailable, device: name,
                                      defaultDevice: serverDefaultSink(on: context, generation: generation) ?? nil)]
        }
        guard let name = known.withLock({ $0.names.removeValue(forKey: index) }) else { return [] }
        // The server has chosen the new default by now; the `.defaultDeviceChanged` comes with
        // its own event.
        return [OutputRouteChange(reason: .oldDeviceUnavailable, device: name,
                                  defaultDevice: serverDefaultSink(on: context, generation: generation) ?? nil)]
    }

    /// Queue, main loop lock: reads every sink and the default sink, and reports as `sync` says.
    private func readSinks(on context: OpaquePointer, generation: Int, sync: Sync) -> [OutputRouteChange] {
        let list = SinkList()
        let listed = finish(pulse.contextGetSinkInfoList(context, { _, info, eol, userdata in
            guard let userdata, eol == 0, let info else { return }
            let list = Unmanaged<SinkList>.fromOpaque(userdata).takeUnretainedValue()
            list.names[info.pointee.index] = info.pointee.name.map { String(cString: $0) } ?? ""
        }, Unmanaged.passUnretained(list).toOpaque()), generation: generation)
        guard listed, let defaultSink = serverDefaultSink(on: context, generation: generation) else { return [] }
        let before = known.withLock { known in
            defer { known = Sinks(names: list.names, defaultSink: defaultSink) }
            return known
        }
        switch sync {
        case .none, .baseline: return []
        case .serverReturned: return [OutputRouteChange(reason: .serverReturned, defaultDevice: defaultSink)]
        case .reportDifferences:
            let gone = before.names.filter { list.names[$0.key] == nil }.sorted { $0.key < $1.key }
            let came = list.names.filter { before.names[$0.key] == nil }.sorted { $0.key < $1.key }
            var changes = gone.map {
                OutputRouteChange(reason: .oldDeviceUnavailable, device: $0.value, defaultDevice: defaultSink)
            }
            changes += came.map { OutputRouteChange(reason: .newDeviceAvailable, device: $0.value, defaultDevice: defaultSink) }
            if before.defaultSink != defaultSink {
                changes.append(OutputRouteChange(reason: .defaultDeviceChanged, device: defaultSink, defaultDevice: defaultSink))
            }
            return changes
        }
    }

    /// Queue, main loop lock: the name of sink `index`, nil when the server has none by then.
    private func sinkName(at index: UInt32, on context: OpaquePointer, generation: Int) -> String? {
        let reply = NameReply()
        let done = finish(pulse.contextGetSinkInfoByIndex(context, index, { _, info, eol, userdata in
            guard let userdata, eol == 0, let info else { return }
            Unmanaged<NameReply>.fromOpaque(userdata).takeUnretainedValue().copy(info.pointee.name)
        }, Unmanaged.passUnretained(reply).toOpaque()), generation: generation)
        return done ? reply.name : nil
    }

    /// Queue, main loop lock: the server's default sink: `.some(nil)` when it has none, nil
    /// when the server did not answer.
    private func serverDefaultSink(on context: OpaquePointer, generation: Int) -> String?? {
        let reply = NameReply()
        let done = finish(pulse.contextGetServerInfo(context, { _, info, userdata in
            guard let userdata, let info else { return }
            Unmanaged<NameReply>.fromOpaque(userdata).takeUnretainedValue().copy(info.pointee.default_sink_name)
        }, Unmanaged.passUnretained(reply).toOpaque()), generation: generation)
        return done ? .some(reply.name) : nil
    }

    /// Queue, main loop lock: waits for `operation` while the main loop runs; cancels it
    /// (so that its callback is never called) after a second, or once the watcher is stopped
    /// or its context replaced.
    /// - Returns: Whether the operation completed for the context it was asked of.
    private func finish(_ operation: OpaquePointer?, generation: Int) -> Bool {
        guard let operation else { return false }
        defer { pulse.operationUnref(operation) }
        func current() -> Bool { !stopped.load(ordering: .acquiring) && self.generation == generation }
        _ = pulse.wait(on: mainloop, timeout: 1) { !current() || pulse.operationGetState(operation) != PA_OPERATION_RUNNING }
        if pulse.operationGetState(operation) == PA_OPERATION_RUNNING { pulse.operationCancel(operation) }
        return pulse.operationGetState(operation) == PA_OPERATION_DONE && current()
    }
}

/// Room for the one name a reply carries, allocated by the thread that asks: the callback,
/// on the main loop's thread, copies it there without allocating. Written and read under the
/// main loop lock.
private final class NameReply: @unchecked Sendable {
    // Sendable: used only under the main loop lock.
    private static let capacity = 1024
    private let bytes = UnsafeMutablePointer<CChar>.allocate(capacity: capacity)
    private var found = false

    deinit { bytes.deallocate() }

    /// Main loop thread: keeps `name` (cut to 1023 bytes).
    func copy(_ name: UnsafePointer<CChar>?) {
        guard let name else { return }
        strncpy(bytes, name, Self.capacity - 1)
        bytes[Self.capacity - 1] = 0
        found = true
    }

    /// The name kept, nil when the reply had none.
    var name: String? { found ? String(cString: bytes) : nil }
}

/// The sinks a list reply names, by index. Written and read under the main loop lock.
private final class SinkList: @unchecked Sendable {
    // Sendable: used only under the main loop lock.
    var names: [UInt32: String] = [:]
}
