import Foundation
import SpoolCore
import SpoolOutput
import Synchronization
import Testing
@testable import SpoolBufferQueue
import SpoolTestSupport

/// One `BufferQueue` called from many threads at once, the Audio Queue way: eight allocated
/// buffers go round (the callback hands each back, a thread refills and enqueues it) while
/// other threads start, pause, stop, reset and flush, set volume, pan, rate and metering, and
/// read the time, position and levels — on the real-time null device and offline, at the
/// device's rate and converted. The threads start together behind a gate, so on two cores they
/// overlap.
///
/// Afterwards: no thread is stuck, every enqueue came back through the callback exactly once
/// and in order, and the queue is stopped with all eight buffers free.
@Suite("BufferQueue called from many threads at once", .serialized)
struct BufferQueueConcurrencyTests {
    enum Device: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case null, offline
        var testDescription: String { rawValue }
    }

    /// Lets all the threads go at once.
    final class StartGate: Sendable {
        let parties: Int
        private let arrived = Atomic<Int>(0)
        init(parties: Int) { self.parties = parties }
        func arrive() {
            arrived.add(1, ordering: .acquiringAndReleasing)
            while arrived.load(ordering: .acquiring) < parties { sched_yield() }
        }
    }

    /// What the threads share.
    final class Storm: Sendable {
        /// Buffers free to fill, as the callback hands them back.
        let free = Locked<[AudioQueueBuffer]>([])
        /// For each buffer identifier, the number of the enqueue it carries now.
        let carried = Locked<[Int32: Int]>([:])
        /// The enqueue numbers, in the order the callback handed them back.
        let returned = Locked<[Int]>([])
        let faults = Locked<[String]>([])
        private let enqueuing = Atomic<Bool>(true)
        let deadline: UInt64

        init(seconds: Double) { deadline = HostTime.now() + HostTime.nanoseconds(seconds) }

        var isOn: Bool { enqueuing.load(ordering: .acquiring) && HostTime.now() < deadline }
        var isPastDeadline: Bool { HostTime.now() > deadline }
        func enqueuerFinished() { enqueuing.store(false, ordering: .releasing) }
        var enqueuerIsDone: Bool { !enqueuing.load(ordering: .acquiring) }
        func note(_ fault: String) { faults.withLock { if $0.count < 20 { $0.append(fault) } } }

        func callback(_ buffer: AudioQueueBuffer) {
            guard let number = carried.withLock({ $0.removeValue(forKey: buffer.identifier) }) else {
                note("buffer \(buffer.identifier) came back without having been enqueued")
                return
            }
            returned.withLock { $0.append(number) }
            free.withLock { $0.append(buffer) }
        }
    }

    static let enqueues = 1_000
    static let bufferFrames = 240
    /// How long the threads run at most. A sanitizer slows every call several times over (under
    /// ThreadSanitizer the offline case did 982 of its 1 000 enqueues in 8 s), so it gets longer.
    static let stormSeconds: Double =
        TestEnvironment.underSanitizer ? 30 : 8

    @Test(arguments: Device.allCases, [48_000.0, 44_100])
    func oneQueueCalledFromManyThreadsAtOnceHandsEveryBufferBackOnce(_ device: Device, sourceRate: Double) throws {
        let configuration = OutputConfiguration(sampleRate: 48_000, channelCount: 2, periodFrames: 256, periodCount: 2)
        let offline: OfflineDevice? = device == .offline ? try OfflineDevice(configuration: configuration) : nil
        let engine = QueueEngine(device: try offline ?? NullDevice(configuration: configuration))
        try engine.start()
        defer { engine.stop() }
        let storm = Storm(seconds: Self.stormSeconds)
        let queue = try BufferQueue(format: try AudioFormat(sampleRate: sourceRate, channelCount: 2), engine: engine) { _, buffer in
            storm.callback(buffer)
        }
        defer { queue.dispose() }
        let buffers = try (0..<8).map { _ in try queue.allocateBuffer(frameCapacity: Self.bufferFrames) }
        storm.free.withLock { $0 = buffers }

        var bodies: [@Sendable () -> Void] = []
        // Refills whatever buffer is free and enqueues it, numbering the enqueues.
        bodies.append {
            var number = 0
            while number < Self.enqueues, !storm.isPastDeadline {
                guard let buffer = storm.free.withLock({ $0.popLast() }) else {
                    usleep(100)
                    continue
                }
                _ = buffer.data.update(fromContentsOf: repeatElement(Float(0.1), count: Self.bufferFrames * 2))
                buffer.frameCount = Self.bufferFrames
                storm.carried.withLock { $0[buffer.identifier] = number }
                do {
                    try queue.enqueue(buffer)
                    number += 1
                } catch let error as AudioError where error.code == .invalidState {
                    // A reset or a drained stop under way: documented, try again.
                    storm.carried.withLock { _ = $0.removeValue(forKey: buffer.identifier) }
                    storm.free.withLock { $0.append(buffer) }
                    usleep(200)
                } catch {
                    storm.note("enqueue threw \(error)")
                }
            }
            storm.enqueuerFinished()
        }
        // Transport: start, pause, stop, reset and, now and then, a drained stop (flush).
        bodies.append {
            var generator = SystemRandomNumberGenerator()
            while storm.isOn {
                do {
                    switch Int.random(in: 0..<12, using: &generator) {
                    case 0..<5: try queue.start()
                    case 5, 6: try queue.pause()
                    case 7, 8, 9: try queue.stop(immediately: true)
                    case 10: try queue.reset()
                    default: try queue.flush()
                    }
                } catch {
                    storm.note("transport threw \(error)")
                }
                usleep(UInt32.random(in: 200...3_000, using: &generator))
            }
        }
        // Parameters.
        bodies.append {
            var generator = SystemRandomNumberGenerator()
            while storm.isOn {
                do {
                    try queue.setVolume(Float.random(in: 0...1, using: &generator), rampSeconds: Bool.random(using: &generator) ? 0 : 0.01)
                    try queue.setPan(Float.random(in: -1...1, using: &generator))
                    try queue.setPlaybackRate(Float.random(in: 0.5...2, using: &generator))
                    queue.isMeteringEnabled.toggle()
                } catch {
                    storm.note("a parameter call threw \(error)")
                }
                usleep(UInt32.random(in: 100...1_000, using: &generator))
            }
        }
        // Readings, each in range.
        bodies.append {
            while storm.isOn {
                let time = queue.currentTime, played = queue.framesPlayed, queued = queue.queuedFrames
                _ = (queue.isRunning, queue.underrunCount, queue.firstFrameHostTime, queue.volume, queue.pan)
                let levels = queue.levels
                if !(time.sampleTime >= 0 && time.sampleTime.isFinite) { storm.note("currentTime \(time)") }
                if played < 0 || played > Self.enqueues * Self.bufferFrames { storm.note("framesPlayed \(played)") }
                if queued < 0 || queued > 8 * Self.bufferFrames { storm.note("queuedFrames \(queued)") }
                if levels.count != 2 || levels.contains(where: { !($0.peakPower <= 0.01) }) { storm.note("levels \(levels)") }
                do { _ = try queue.prime() } catch { storm.note("prime threw \(error)") }
                usleep(200)
            }
        }
        if let offline {
            bodies.append {
                while storm.isOn {
                    do { _ = try offline.render(frames: 256) } catch { storm.note("render threw \(error)") }
                    usleep(100)  // other tests share the machine: render fast, not flat out
                }
            }
        }

        let gate = StartGate(parties: bodies.count)
        let group = DispatchGroup()
        for body in bodies {
            group.enter()
            Thread {
                gate.arrive()
                body()
                group.leave()
            }.start()
        }
        let label = "\(device) at \(Int(sourceRate)) Hz"
        let limit = Self.stormSeconds + 10
        guard group.wait(timeout: .now() + limit) == .success else {
            Issue.record("\(label): the threads did not all finish within \(limit) s: a deadlock")
            return
        }
        try queue.stop(immediately: true)
        // An offline stop hands back at the next render; the callbacks then arrive on the
        // queue's callback thread, which a loaded machine may run late: wait for them (3 s).
        let waitStart = HostTime.now()
        repeat {
            if let offline { _ = try offline.render(frames: 256) }
            if storm.returned.withLock({ $0.count }) >= Self.enqueues { break }
            usleep(10_000)
        } while HostTime.seconds(from: waitStart, to: HostTime.now()) < 3

        #expect(storm.faults.withLock { $0 }.isEmpty, "\(label): \(storm.faults.withLock { $0 })")
        #expect(storm.enqueuerIsDone, "\(label): the enqueues did not all happen in time")
        let returned = storm.returned.withLock { $0 }
        let place = zip(returned, 0...).first { $0 != $1 }.map { "the first out of place at \($0.1)" } ?? "in order"
        #expect(returned == Array(0..<Self.enqueues),
                "\(label): \(returned.count) of \(Self.enqueues) enqueues came back, \(Set(returned).count) distinct, \(place)")
        #expect(storm.free.withLock { $0.count } == 8, "\(label): \(storm.free.withLock { $0.count }) of 8 buffers free")
        #expect(queue.queuedFrames == 0 && !queue.isRunning, "\(label): \(queue.queuedFrames) frames queued, running \(queue.isRunning)")
        for buffer in buffers { #expect(throws: Never.self) { try queue.freeBuffer(buffer) } }
    }
}
