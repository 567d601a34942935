import Dispatch
import Synchronization
import SpoolCore

extension RenderThread {
    /// Carries a device's events from its render thread to the program's handler, which runs on
    /// a serial `DispatchQueue` of the relay's own and never on the render thread.
    ///
    /// The render thread only touches atomics and merges a bit into a `DispatchSource`
    /// (`dispatch_source_merge_data`): no lock, no allocation, no user code. The error message
    /// for a lost device is built on the queue, where allocating is fine. Route changes, which
    /// never come from the render path, are queued to the same queue whole.
    final class EventRelay: Sendable {
        private static let xrunBit: UInt = 1
        private static let lostBit: UInt = 2
        private static let corkBit: UInt = 4

        private let handler = Locked<(@Sendable (OutputDeviceEvent) -> Void)?>(nil)
        private let xruns = Atomic<Int>(0)
        private let lostStatus = Atomic<Int32>(0)
        /// The latest cork request: whether the server asked the stream to pause.
        private let corkRequested = Atomic<Bool>(false)
        private let queue: DispatchQueue
        private let source: SourceBox

        /// Underruns (or overruns) reported so far.
        var xrunCount: Int { xruns.load(ordering: .relaxed) }

        /// Makes a relay.
        /// - Parameters:
        ///   - label: Names the event queue, e.g. `spool.alsa.default.events`.
        ///   - describeLoss: Turns the status the render thread reported into the error the
        ///     handler receives; runs on the event queue.
        init(label: String, describeLoss: @escaping @Sendable (Int32) -> AudioError) {
            queue = DispatchQueue(label: label)
            let source = DispatchSource.makeUserDataOrSource(queue: queue)
            self.source = SourceBox(source)
            source.setEventHandler { [weak self] in
                guard let self else { return }
                let bits = self.source.value.data
                guard let handler = self.handler.withLock({ $0 }) else { return }
                if bits & Self.xrunBit != 0 { handler(.xrun(count: self.xrunCount)) }
                if bits & Self.corkBit != 0 { handler(.corkRequested(self.corkRequested.load(ordering: .acquiring))) }
                if bits & Self.lostBit != 0 { handler(.deviceLost(describeLoss(self.lostStatus.load(ordering: .acquiring)))) }
            }
            source.activate()
        }

        deinit { source.value.cancel() }

        /// Sets (or clears) the handler. Any thread.
        func setHandler(_ handler: (@Sendable (OutputDeviceEvent) -> Void)?) {
            self.handler.withLock { $0 = handler }
        }

        /// Render thread: counts one xrun and tells the handler.
        func reportXrun() {
            xruns.add(1, ordering: .relaxed)
            source.value.or(data: Self.xrunBit)
        }

        /// Render thread: tells the handler the device went away with `status`.
        func reportLoss(status: Int32) {
            lostStatus.store(status, ordering: .releasing)
            source.value.or(data: Self.lostBit)
        }

        /// Render thread: tells the handler the server asked the stream to pause (`true`) or
        /// said it may resume. Requests the queue has not delivered yet merge into the latest.
        func reportCorkRequest(_ corked: Bool) {
            corkRequested.store(corked, ordering: .releasing)
            source.value.or(data: Self.corkBit)
        }

        /// Any thread but the render thread (it allocates): tells the handler about `change`,
        /// after the route changes reported before it.
        func report(_ change: OutputRouteChange) {
            queue.async { [weak self] in self?.handler.withLock({ $0 })?(.routeChanged(change)) }
        }
    }

    /// Holds the dispatch source; a box because `DispatchSourceUserDataOr` is not declared
    /// `Sendable` in corelibs-libdispatch.
    final class SourceBox: @unchecked Sendable {
        // Sendable: dispatch sources are thread-safe; `or(data:)`, `data` and `cancel()` may be
        // called from any thread (libdispatch guards them itself).
        let value: any DispatchSourceUserDataOr
        init(_ value: any DispatchSourceUserDataOr) { self.value = value }
    }
}
