import Foundation
import SpoolBufferQueue
import SpoolCore
@testable import SpoolOutput
import SpoolOpenAL
import Synchronization
import Testing
import SpoolTestSupport

/// Handlers: several observers, each called once, in order, never on a render thread, free
/// to call the voice back; and the real-time devices' side of it.
@Suite("Seam conformance: handlers")
struct SeamHandlerTests {
    @Test(arguments: Backend.allCases)
    func everyObserverHearsEveryEventOnceAndARemovedOneNoMore(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(stereo48)
        let order = Locked<[String]>([])
        let first = voice.addBufferConsumedHandler { _ in order.withLock { $0.append("consumed 1") } }
        voice.addBufferConsumedHandler { _ in order.withLock { $0.append("consumed 2") } }
        voice.addFinishedHandler { finish in order.withLock { $0.append("finished 1 \(finish)") } }
        let second = voice.addFinishedHandler { finish in order.withLock { $0.append("finished 2 \(finish)") } }
        try voice.enqueue(try constant(0.5, frames: 300))
        try voice.enqueue(try constant(0.5, frames: 300))
        try voice.start()
        try voice.stop(immediately: false)
        _ = try rig.render(1024)
        #expect(order.withLock { $0 } == ["consumed 1", "consumed 2", "consumed 1", "consumed 2",
                                          "finished 1 played out", "finished 2 played out"])
        voice.removeHandler(first)
        voice.removeHandler(second)
        order.withLock { $0 = [] }
        try voice.enqueue(try constant(0.5, frames: 300))
        try voice.start()
        try voice.stop(immediately: false)
        _ = try rig.render(1024)
        #expect(order.withLock { $0 } == ["consumed 2", "finished 1 played out"])
    }

    /// A position handler runs once, during the render call in which `framesPlayed` reaches
    /// its frame, before a finish at the same frame; one added while stopped waits for the
    /// next start; one its play never reached is dropped with that play.
    @Test(arguments: Backend.allCases)
    func positionHandlersRunInTheRenderCallThatReachesTheirFrame(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(stereo48)
        let told = Locked<[String]>([])
        voice.addFinishedHandler { finish in told.withLock { $0.append("finished \(finish)") } }
        for frame in [1, 1_000, 1_001, 2_000] {
            voice.addPositionHandler(atFramesPlayed: frame) { told.withLock { $0.append("at \(frame)") } }
        }
        try voice.enqueue(try constant(0.5, frames: 2_000))
        try voice.start()
        try voice.stop(immediately: false)
        var calls: [[String]] = []
        for frames in [1, 998, 1, 1, 1_000, 100] {
            _ = try rig.render(frames)
            calls.append(told.withLock { l in defer { l = [] }; return l })
        }
        #expect(calls == [["at 1"], [], ["at 1000"], ["at 1001"], ["at 2000", "finished played out"], []], "\(calls)")

        // Added while stopped: it counts from the next start; a stop drops what it did not reach.
        voice.addPositionHandler(atFramesPlayed: 500) { told.withLock { $0.append("at 500") } }
        voice.addPositionHandler(atFramesPlayed: 1_500) { told.withLock { $0.append("at 1500") } }
        try voice.enqueue(try constant(0.5, frames: 2_000))
        try voice.start()
        _ = try rig.render(600)
        #expect(told.withLock { $0 } == ["at 500"])
        try voice.stop(immediately: true)
        try voice.enqueue(try constant(0.5, frames: 2_000))
        try voice.start()
        _ = try rig.render(2_048)
        #expect(told.withLock { $0 }.filter { $0.hasPrefix("at") } == ["at 500"], "the stopped play's 1500 never comes")
    }

    @Test(arguments: Backend.allCases)
    func aHandlerMayCallTheVoiceBack(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(stereo48)
        let restarts = Atomic<Int>(0)
        let refill = try constant(0.25, frames: 500)
        voice.addFinishedHandler { [weak voice] _ in
            // Play once more, from inside the handler: no lock of the voice is held here.
            guard restarts.add(1, ordering: .relaxed).newValue == 1, let voice else { return }
            try? voice.enqueue(refill)
            try? voice.start()
            try? voice.stop(immediately: false)
        }
        try voice.enqueue(try constant(0.5, frames: 500))
        try voice.start()
        try voice.stop(immediately: false)
        let out = channel(try rig.render(2048), 0)
        #expect(restarts.load(ordering: .relaxed) == 2)
        #expect(out[0..<500].allSatisfy { $0 == 0.5 })
        #expect(out.filter { $0 == 0.25 }.count == 500, "the handler's buffer played whole")
    }

    // MARK: Real-time devices

    /// A back-end on the clock-paced null device, rendering on a thread of its own.
    static func realTimeBackend(_ kind: Backend) throws -> any PlaybackBackend {
        let configuration = OutputConfiguration(sampleRate: 48_000, periodFrames: 256, periodCount: 2)
        switch kind {
        case .queue: return try BufferQueueBackend(device: NullDevice(configuration: configuration))
        case .openAL: return try OpenALBackend(.null(configuration))
        }
    }

    /// The render thread of the null device both back-ends share, by the name it gives itself.
    static let renderThreadNames: Set<String> = ["spool-null"]

    @Test(arguments: Backend.allCases)
    func handlersNeverRunOnTheRenderThread(_ kind: Backend) throws {
        let backend = try Self.realTimeBackend(kind)
        let voice = try backend.makeVoice(format: stereo48)
        let log = Recorder(voice)
        let done = DispatchSemaphore(value: 0)
        voice.addFinishedHandler { _ in done.signal() }
        for _ in 0..<4 { try voice.enqueue(try constant(0.1, frames: 1200)) }
        try voice.start()
        try voice.stop(immediately: false)
        #expect(done.wait(timeout: .now() + 3) == .success, "the drained stop finished")
        #expect(log.consumed.count == 4)
        #expect(log.finishes == ["playedOut"])
        #expect(log.threadNames.isDisjoint(with: Self.renderThreadNames), "handlers ran on \(log.threadNames)")
        voice.dispose()
    }

    @Test(arguments: Backend.allCases)
    func aDrainedStopRightAfterStartFinishesOnARealTimeDevice(_ kind: Backend) throws {
        let backend = try Self.realTimeBackend(kind)
        for attempt in 0..<6 {
            let voice = try backend.makeVoice(format: stereo48)
            let done = DispatchSemaphore(value: 0)
            voice.addFinishedHandler { _ in done.signal() }
            try voice.enqueue(try constant(0.1, frames: 2400))
            try voice.start()
            try voice.stop(immediately: false)
            #expect(done.wait(timeout: .now() + 2) == .success, "attempt \(attempt): no finish")
            #expect(voice.state == .stopped)
            voice.dispose()
        }
    }

    @Test(arguments: Backend.allCases)
    func stopImmediatelyOnARealTimeDeviceHasHandedEverythingBackWhenItReturns(_ kind: Backend) throws {
        let backend = try Self.realTimeBackend(kind)
        let voice = try backend.makeVoice(format: stereo48)
        let log = Recorder(voice)
        for _ in 0..<3 { try voice.enqueue(try constant(0.1, frames: 4800)) }
        try voice.start()
        Thread.sleep(forTimeInterval: 0.03)
        try voice.stop(immediately: true)
        #expect(voice.state == .stopped)
        #expect(log.consumed.count == 3)
        #expect(log.finishes == ["stopped"])
        voice.dispose()
    }
}
