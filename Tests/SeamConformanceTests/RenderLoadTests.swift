import Foundation
import SpoolBufferQueue
import SpoolCore
import SpoolOutput
import Synchronization
import Testing
@testable import SpoolOpenAL
import SpoolTestSupport

/// Both null devices (the queue engine's and the OpenAL back-end's clock) time each period's
/// render on their thread's CPU clock and tell a late period that the render caused (after an
/// overrun: more CPU time than the period lasts) from one the machine caused (a stall: every
/// render fitted in its period, the thread was not run in time). The capacity benchmark holds
/// only the first against a mixer.
@Suite("Null devices: render load, overruns and stalls")
struct RenderLoadTests {
    static let configuration = OutputConfiguration(sampleRate: 48_000, periodFrames: 256, periodCount: 3)
    /// Six periods of 256 frames at 48 kHz: past the two periods of slack the device holds.
    static let hold = 0.032

    /// What a render does on the periods the test picks.
    enum Disturbance: Sendable {
        /// Sleeps: the period takes wall time but no CPU time, as when the thread is not run.
        case sleep
        /// Spins on the thread's CPU clock: the render itself takes too long.
        case spin
    }

    /// Disturbs the 60th period's render (after the device has settled), once.
    final class Disturber: Sendable {
        let disturbance: Disturbance
        private let periods = Atomic<Int>(0)
        init(_ disturbance: Disturbance) { self.disturbance = disturbance }

        func period() {
            guard periods.add(1, ordering: .relaxed).newValue == 60 else { return }
            switch disturbance {
            case .sleep:
                Thread.sleep(forTimeInterval: RenderLoadTests.hold)
            case .spin:
                let end = HostTime.threadCPUNanoseconds() + Int(RenderLoadTests.hold * 1e9)
                while HostTime.threadCPUNanoseconds() < end {}
            }
        }

        var count: Int { periods.load(ordering: .relaxed) }
    }

    final class SilentRenderer: AudioRenderer {
        let disturber: Disturber
        init(_ disturber: Disturber) { self.disturber = disturber }
        func render(into buffer: UnsafeMutablePointer<Float>, frames: Int, timestamp: RenderTimestamp) {
            buffer.update(repeating: 0, count: frames * 2)
            disturber.period()
        }
    }

    /// Runs a null device of `kind` for 100 periods with `disturbance` at the 60th.
    static func run(_ kind: Backend, _ disturbance: Disturbance) throws -> (late: Int, load: RenderLoad.Snapshot) {
        let disturber = Disturber(disturbance)
        let wait = { (count: () -> Int) in
            let deadline = Date().addingTimeInterval(5)
            while count() < 100, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        }
        switch kind {
        case .queue:
            let device = try NullDevice(configuration: configuration)
            try device.start(renderer: SilentRenderer(disturber))
            wait { disturber.count }
            device.stop()
            return (device.xrunCount, device.renderLoad.snapshot)
        case .openAL:
            let device = try OpenALDevice(.null(configuration))
            defer { device.close() }
            device.renderTap.withLock { $0 = { _, _ in disturber.period() } }
            wait { disturber.count }
            return (device.xrunCount, try #require(device.renderLoad).snapshot)
        }
    }

    @Test(arguments: Backend.allCases)
    func aRenderThatSpinsPastItsPeriodIsAnOverrunAndTheLatePeriodIsTheMixers(_ kind: Backend) throws {
        let (late, load) = try Self.run(kind, .spin)
        #expect(load.periods >= 100)
        #expect(load.overruns >= 1, "a render of \(Self.hold * 1_000) ms of CPU in a 5.3 ms period overran")
        #expect(load.peakLoad >= 5, "the peak load is the spin's: \(load.peakLoad) periods")
        let run = RealTimeRun(dry: 0, late: late, load: load)
        #expect(run.lateFromOverruns >= 1 && !run.keptUp, "late \(late), stalls \(load.stalls)")
    }

    @Test(arguments: Backend.allCases)
    func aRenderThatSleepsPastItsPeriodIsAStallNotTheMixers(_ kind: Backend) throws {
        let (late, load) = try Self.run(kind, .sleep)
        #expect(late >= 1, "six periods asleep empty a three-period buffer")
        #expect(load.overruns == 0 && load.stalls == late, "every late period is a stall: late \(late), \(load)")
        #expect(load.peakLoad < 1, "sleeping takes no CPU time: peak \(load.peakLoad)")
        #expect(load.meanLoad < 0.5, "a silent render costs little: \(load.meanLoad)")
        #expect(RealTimeRun(dry: 0, late: late, load: load).keptUp)
    }
}
