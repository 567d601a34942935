import Foundation
import SpoolBufferQueue
import SpoolCore
import SpoolOpenAL
import Synchronization
import Testing
import SpoolTestSupport

/// Lets a fixed number of threads go at once: each waits at `arrive()` until all have come, so
/// on two cores they really run side by side rather than one after another.
final class StartGate: Sendable {
    let parties: Int
    private let arrived = Atomic<Int>(0)

    init(parties: Int) { self.parties = parties }

    func arrive() {
        arrived.add(1, ordering: .acquiringAndReleasing)
        while arrived.load(ordering: .acquiring) < parties { sched_yield() }
    }
}

/// Threads started together behind a `StartGate`, each running its body; `join` waits for all
/// of them with a timeout, the sign of a deadlock when it passes.
final class ThreadCrew: Sendable {
    private let group = DispatchGroup()
    private let gate: StartGate
    private let bodies: [@Sendable () -> Void]

    init(_ bodies: [@Sendable () -> Void]) {
        self.bodies = bodies
        gate = StartGate(parties: bodies.count)
    }

    func start() {
        for body in bodies {
            group.enter()
            Thread { [gate, group] in
                gate.arrive()
                body()
                group.leave()
            }.start()
        }
    }

    /// Whether every thread finished within `seconds`.
    func join(seconds: Double) -> Bool { group.wait(timeout: .now() + seconds) == .success }
}

/// Calls from many threads at once on one voice, the way the architecture allows ("control
/// calls come from any thread"): one thread enqueues a numbered series of buffers, one starts,
/// pauses and stops, one pauses, one sets volume, pan and rate, one reads the state and the
/// position, and offline one more renders. On each back-end, on its real-time null device and
/// offline, at the device's rate and converted from 44.1 kHz.
///
/// Afterwards: no thread is stuck, every buffer came back exactly once and in the order it
/// was enqueued, each start → stop was reported finished once (`.stopped`), the voice is
/// stopped with nothing queued, and it still plays a buffer out to the last frame.
@Suite("Seam conformance: calls from many threads at once", .serialized)
struct ConcurrentCallTests {
    enum Device: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case null, offline
        var testDescription: String { rawValue }
    }

    /// Records consumed buffers and finishes as they arrive.
    final class Ledger: Sendable {
        private let consumed = Locked<[ObjectIdentifier]>([])
        private let finishes = Locked<[String]>([])

        init(_ voice: any PlaybackVoice) {
            voice.addBufferConsumedHandler { [weak self] buffer in
                self?.consumed.withLock { $0.append(buffer.storageIdentifier) }
            }
            voice.addFinishedHandler { [weak self] finish in
                self?.finishes.withLock { $0.append(Recorder.name(finish)) }
            }
        }

        var buffers: [ObjectIdentifier] { consumed.withLock { $0 } }
        var finished: [String] { finishes.withLock { $0 } }
    }

    /// What the threads saw go wrong: a call that threw, a reading out of range.
    final class Faults: Sendable {
        private let list = Locked<[String]>([])
        func note(_ fault: String) { list.withLock { if $0.count < 20 { $0.append(fault) } } }
        var all: [String] { list.withLock { $0 } }
    }

    /// What the threads share: the buffers enqueued so far, the start → stop cycles made, and
    /// when to give up.
    final class Storm: Sendable {
        let enqueued = Locked<[ObjectIdentifier]>([])
        let cycles = Atomic<Int>(0)
        private let enqueuing = Atomic<Bool>(true)
        let deadline: UInt64

        init(seconds: Double) { deadline = HostTime.now() + HostTime.nanoseconds(seconds) }

        /// Whether the enqueuer is still at work and there is time left: the others call while it is.
        var isOn: Bool { enqueuing.load(ordering: .acquiring) && HostTime.now() < deadline }
        var isPastDeadline: Bool { HostTime.now() > deadline }
        func enqueuerFinished() { enqueuing.store(false, ordering: .releasing) }
        var enqueuerIsDone: Bool { !enqueuing.load(ordering: .acquiring) }
    }

    static let bufferCount = 1_000
    static let bufferFrames = 240
    /// How long the enqueuer may take (about 1 s on the null devices, 0.3 s offline) before
    /// every thread gives up. A sanitizer slows every call several times over (under
    /// ThreadSanitizer, with the whole suite running on two cores, the OpenAL null-device case
    /// once passed 8 s with 52 buffers still to enqueue), so it gets longer.
    static let giveUpSeconds = TestEnvironment.underSanitizer ? 30.0 : 8.0

    @Test(arguments: Backend.allCases, Device.allCases)
    func oneVoiceCalledFromManyThreadsAtOnceStaysConsistent(_ kind: Backend, _ device: Device) throws {
        for rate in [48_000.0, 44_100] { try storm(kind, device, sourceRate: rate) }
    }

    func storm(_ kind: Backend, _ device: Device, sourceRate: Double) throws {
        let format = try AudioFormat(sampleRate: sourceRate, channelCount: 2)
        let rig: Rig? = device == .offline ? try Rig(kind) : nil
        let backend = try rig?.backend ?? SeamHandlerTests.realTimeBackend(kind)
        let voice = try backend.makeVoice(format: format)
        let ledger = Ledger(voice)
        let faults = Faults()
        // Distinct buffers (each its own storage), numbered by their place in the series.
        let buffers = try (0..<Self.bufferCount).map { _ in try constant(0.1, frames: Self.bufferFrames, format: format) }
        let storm = Storm(seconds: Self.giveUpSeconds)

        var bodies: [@Sendable () -> Void] = []
        // Enqueues the series, keeping at most 8 buffers queued.
        bodies.append {
            var generator = SystemRandomNumberGenerator()
            for buffer in buffers {
                while voice.queuedBufferCount >= 8, !storm.isPastDeadline { usleep(100) }
                do {
                    try voice.enqueue(buffer)
                    storm.enqueued.withLock { $0.append(buffer.storageIdentifier) }
                } catch {
                    faults.note("enqueue threw \(error)")
                }
                if Int.random(in: 0..<4, using: &generator) == 0 { usleep(UInt32.random(in: 0...300, using: &generator)) }
            }
            storm.enqueuerFinished()
        }
        // Starts, pauses and stops; counts the start → stop cycles it made.
        bodies.append {
            var generator = SystemRandomNumberGenerator()
            var startedSinceStop = false
            while storm.isOn {
                do {
                    switch Int.random(in: 0..<6, using: &generator) {
                    case 0, 1, 2:
                        try voice.start()
                        startedSinceStop = true
                    case 3:
                        try voice.pause()
                    default:
                        try voice.stop(immediately: true)
                        if startedSinceStop { storm.cycles.add(1, ordering: .relaxed) }
                        startedSinceStop = false
                    }
                } catch {
                    faults.note("transport threw \(error)")
                }
                usleep(UInt32.random(in: 200...3_000, using: &generator))
            }
            do {
                try voice.stop(immediately: true)
                if startedSinceStop { storm.cycles.add(1, ordering: .relaxed) }
            } catch {
                faults.note("the last stop threw \(error)")
            }
        }
        // Pauses now and then from a thread of its own (a pause never begins a cycle).
        bodies.append {
            while storm.isOn {
                do { try voice.pause() } catch { faults.note("pause threw \(error)") }
                usleep(UInt32.random(in: 1_000...7_000))
            }
        }
        // Volume (with and without a ramp), pan and playback rate.
        bodies.append {
            var generator = SystemRandomNumberGenerator()
            while storm.isOn {
                do {
                    try voice.setVolume(Float.random(in: 0...1, using: &generator),
                                        rampSeconds: Bool.random(using: &generator) ? 0 : 0.01)
                    try voice.setPan(Float.random(in: -1...1, using: &generator))
                    if Int.random(in: 0..<4, using: &generator) == 0 {
                        try voice.setPlaybackRate(Float.random(in: 0.5...2, using: &generator))
                    }
                } catch {
                    faults.note("a parameter call threw \(error)")
                }
                usleep(UInt32.random(in: 100...1_000, using: &generator))
            }
        }
        // Reads what any thread may read, and checks it is in range.
        bodies.append {
            while storm.isOn {
                let played = voice.framesPlayed, queued = voice.queuedBufferCount, latency = voice.outputLatency
                _ = (voice.state, voice.isPlaying, voice.isDraining, voice.underrunCount)
                if played < 0 || played > Self.bufferCount * Self.bufferFrames { faults.note("framesPlayed \(played)") }
                if queued < 0 || queued > Self.bufferCount { faults.note("queuedBufferCount \(queued)") }
                if !(latency >= 0 && latency < 1) { faults.note("outputLatency \(latency)") }
                usleep(200)
            }
        }
        // Offline, a thread renders (and with it runs the handlers), as a program's would.
        if let rig {
            bodies.append {
                while storm.isOn {
                    do { _ = try rig.render(256) } catch { faults.note("render threw \(error)") }
                    usleep(100)  // other tests share the machine: render fast, not flat out
                }
            }
        }
        let crew = ThreadCrew(bodies)
        let label = "\(kind) \(device) at \(Int(sourceRate)) Hz"
        let started = HostTime.now()
        crew.start()
        guard crew.join(seconds: Self.giveUpSeconds + 10) else {
            Issue.record("\(label): the threads did not all finish within \(Self.giveUpSeconds + 10) s: a deadlock")
            return
        }
        // An offline stop hands back during the next render.
        if let rig { _ = try rig.render(256) }

        #expect(faults.all.isEmpty, "\(label): \(faults.all)")
        #expect(storm.enqueuerIsDone, "\(label): the series was not all enqueued in time")
        let sent = storm.enqueued.withLock { $0 }
        #expect(sent.count == Self.bufferCount, "\(label): \(sent.count) buffers enqueued")
        let back = ledger.buffers
        let firstOutOfPlace = zip(back, sent).enumerated().first { $0.element.0 != $0.element.1 }?.offset
        let place = firstOutOfPlace.map { "the first out of place at \($0)" } ?? "in order"
        #expect(back.count == sent.count && firstOutOfPlace == nil,
                "\(label): \(back.count) buffers came back of \(sent.count), \(Set(back).count) distinct, \(place)")
        let finished = ledger.finished
        let cycles = storm.cycles.load(ordering: .relaxed)
        print("\(label): \(sent.count) buffers through \(cycles) start → stop cycles in \(String(format: "%.2f", HostTime.seconds(from: started, to: HostTime.now()))) s")
        #expect(finished.count == cycles, "\(label): \(finished.count) finishes for \(cycles) start → stop cycles")
        #expect(finished.allSatisfy { $0 == "stopped" }, "\(label): finishes \(Set(finished))")
        #expect(voice.state == .stopped && !voice.isPlaying && !voice.isDraining, "\(label): ends \(voice.state)")
        #expect(voice.queuedBufferCount == 0, "\(label): \(voice.queuedBufferCount) buffers still queued")

        // Still a working voice: a buffer plays out to its last frame.
        try voice.setPlaybackRate(1)
        let last = try constant(0.1, frames: 2_000, format: format)
        try voice.enqueue(last)
        try voice.start()
        try voice.stop(immediately: false)
        let waitUntil = HostTime.now() + HostTime.nanoseconds(5)
        while ledger.finished.count == finished.count, HostTime.now() < waitUntil {
            if let rig { _ = try rig.render(256) } else { usleep(1_000) }
        }
        #expect(ledger.finished.last == "playedOut", "\(label): the last buffer did not play out")
        #expect(voice.framesPlayed == 2_000, "\(label): it played \(voice.framesPlayed) of 2000 frames")
        #expect(ledger.buffers.last == last.storageIdentifier)
        voice.dispose()
    }
}
