import Foundation
import SpoolCore
@testable import SpoolOutput
import Testing

/// A render thread that stops its own slot while another thread is stopping it (the last
/// reference to what it renders went on it, mid-stop) is not waited for by itself: the stop
/// that joins it ends it. Found as a hang at process exit: the exit's stop held the slot's lock
/// and joined the null device's render thread, which was freeing an OpenAL device whose deinit
/// stopped the same null device and waited for that lock.
@Suite("Render thread slot")
struct RenderThreadSlotTests {
    @Test func aRenderThreadStoppingItsOwnSlotMidStopDoesNotDeadlock() throws {
        let slot = RenderThread.Slot(device: "test")
        let selfStopReturned = Locked(false)
        try slot.start(name: "slot-test") {
            { [slot] thread in
                while !thread.shouldStop { usleep(200) }
                // The other thread's stop now holds the lock and joins this thread.
                usleep(20_000)
                slot.stop()
                selfStopReturned.withLock { $0 = true }
            }
        }
        let stopped = DispatchSemaphore(value: 0)
        Thread {
            slot.stop()
            stopped.signal()
        }.start()
        let outcome = stopped.wait(timeout: .now() + 10)
        #expect(outcome == .success, "the slot's stop did not return within 10 s: a deadlock")
        #expect(selfStopReturned.withLock { $0 })
        #expect(!slot.isRunning)
    }

    @Test func aRenderThreadStoppingItsOwnSlotAloneStopsIt() throws {
        let slot = RenderThread.Slot(device: "test")
        let done = DispatchSemaphore(value: 0)
        try slot.start(name: "slot-test") {
            { [slot] _ in
                slot.stop()  // the last reference went on the render thread, with nobody stopping it
                done.signal()
            }
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        usleep(50_000)
        #expect(!slot.isRunning)
        slot.stop()  // nothing left to stop: returns at once
    }
}
