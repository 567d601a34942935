import Foundation
import Spool

/// What `spool bench latency` measures for one back-end at one device configuration.
struct LatencyRow: Codable {
    var backend: String
    var output: String
    /// `measured` rows, or `reference` rows at a back-end's usual defaults.
    var kind: String
    var note: String
    var sampleRate: Double
    var requestedPeriodFrames: Int
    var requestedPeriods: Int
    var periodFrames: Int
    var periods: Int
    /// Milliseconds: new audio starts between (P−1)·F and P·F frames after the call.
    var floorMinMs: Double
    var floorMedianMs: Double
    var floorMaxMs: Double
    var starts: Int
    /// Starts whose first frame was not seen within 2 s: left out of the percentiles, counted here.
    var startTimeouts: Int
    /// `observed` when the start and output figures come from a real device's or sound
    /// server's own timing (ALSA's delay, PulseAudio's latency through OpenAL Soft);
    /// `modelled` when they come from Spool's clock model of the null device.
    var timing: String
    /// `on` when starts re-mixed the frames the device held, `off` when they waited behind
    /// them, `cannot` when the device does not rewind.
    var rewind: String
    var startP50Ms: Double
    var startP99Ms: Double
    var startMaxMs: Double
    /// Audio the back-end and device hold ahead of the speaker in steady playback (median):
    /// the voice's own queued buffers and the device's latency.
    var outputLatencyMs: Double
    /// The device's part of it alone (median): what the sound server, ALSA or OpenAL Soft
    /// reports between a frame mixed and that frame heard.
    var deviceLatencyMs: Double?
    /// What the device granted, where it says more than F × P: a PulseAudio stream's
    /// `tlength/minreq/prebuf` in frames.
    var granted: String?
    /// Wall time from a buffer being consumed to its refill callback (queue only); `nil` where
    /// the back-end gives no such moment to time from (OpenAL reports a buffer processed only
    /// when its pump polls, so there is no consumption time to measure against).
    var refillP50Ms: Double?
    var refillP99Ms: Double?
    var steadySeconds: Double
    var load: Bool
    var underruns: Int
    var xruns: Int
}

/// A back-end as the latency bench drives it: open at a configuration, start a sound many
/// times, then play steadily.
protocol LatencyProbe: AnyObject {
    var negotiated: (periodFrames: Int, periods: Int, rate: Double) { get }
    /// `observed` or `modelled` (see `LatencyRow.timing`).
    var timing: String { get }
    /// What `LatencyRow.rewind` says.
    var rewind: String { get }
    /// What the device granted beyond F × P (`LatencyRow.granted`), or nil.
    var granted: String? { get }
    /// Start latencies in seconds, from the start call to the first frame leaving the device,
    /// and the number of starts that timed out.
    func measureStarts(count: Int) throws -> (latencies: [Double], timedOut: Int)
    /// Steady playback for `seconds`: output latency samples (s), the device's part of each
    /// (s), refill turnarounds (s; `nil` when not measurable), underruns, xruns.
    func measureSteady(seconds: Double) throws -> SteadyPlayback
    func close()
}

/// What `LatencyProbe.measureSteady(seconds:)` found.
struct SteadyPlayback {
    var latencies: [Double] = []
    var deviceLatencies: [Double] = []
    var turnarounds: [Double]?
    var underruns = 0
    var xruns = 0
}

/// The buffer-queue back-end: a `BufferQueue` with `bufferCount` buffers of `bufferFrames`
/// refilled from its callback, on an ALSA or null device of F × P frames.
final class QueueLatencyProbe: LatencyProbe {
    let device: any OutputDevice
    let engine: QueueEngine
    let queue: BufferQueue
    let buffers: [AudioQueueBuffer]
    private let refill: Locked<Bool>
    private let turnarounds: Locked<[Double]>

    init(output: OutputTarget, rate: Double, periodFrames: Int, periods: Int, bufferFrames: Int, bufferCount: Int,
         rewind: Bool) throws {
        let refill = Locked(false), turnarounds = Locked<[Double]>([])
        self.refill = refill
        self.turnarounds = turnarounds
        let configuration = OutputConfiguration(sampleRate: rate, channelCount: 2, periodFrames: periodFrames, periodCount: periods)
        let (device, notice) = try OutputDeviceFactory.open(output, configuration: configuration)
        if let notice { printError("spool: \(notice)") }
        self.device = device
        engine = QueueEngine(device: device)
        engine.startsBelowFloor = rewind
        try engine.start()
        let format = try AudioFormat(sampleRate: rate, channelCount: 2)
        queue = try BufferQueue(format: format, engine: engine) { queue, buffer in
            guard refill.withLock({ $0 }) else { return }
            if buffer.consumedHostTime > 0 {
                let now = HostTime.now()
                turnarounds.withLock { $0.append(HostTime.seconds(from: buffer.consumedHostTime, to: now)) }
            }
            try? queue.enqueue(buffer)
        }
        let tone = MixBench.toneSamples(frames: bufferFrames, rate: rate, frequency: 440)
        let queue = self.queue
        buffers = try (0..<bufferCount).map { _ in
            let buffer = try queue.allocateBuffer(frameCapacity: bufferFrames)
            _ = buffer.data.update(from: tone)
            buffer.frameCount = bufferFrames
            return buffer
        }
    }

    var negotiated: (periodFrames: Int, periods: Int, rate: Double) {
        (device.periodFrames, device.periodCount, device.format.sampleRate)
    }

    /// The null device's period timestamps are its own clock's schedule, not a hardware's.
    var timing: String { device is NullDevice ? "modelled" : "observed" }

    var granted: String? {
        guard let pulse = device as? PulseAudioDevice else { return nil }
        let b = pulse.bufferAttributes
        return "\(b.targetLength)/\(b.minimumRequest)/\(b.prebuffer)"
    }

    var rewind: String {
        guard engine.startsBelowFloor else { return "off" }
        if case .unavailable = engine.rewindSupport { return "cannot" }
        return "on"
    }

    func measureStarts(count: Int) throws -> (latencies: [Double], timedOut: Int) {
        refill.withLock { $0 = false }
        var random = SplitMix(seed: 7)
        var latencies: [Double] = []
        var timedOut = 0
        let period = Double(device.periodFrames) / device.format.sampleRate
        // Let the device settle: a sound server's idle null sink may not pull from a new
        // stream for a second or more, and reports no timing until it does.
        Thread.sleep(forTimeInterval: device is NullDevice ? 0.2 : 3)
        for _ in 0..<count {
            for buffer in buffers { try queue.enqueue(buffer) }
            // A random phase against the device's period, as a program's start call would land.
            Thread.sleep(forTimeInterval: period * random.nextUnit())
            let t0 = HostTime.now()
            try queue.start()
            let deadline = t0 + HostTime.nanoseconds(2)
            while queue.firstFrameHostTime == nil && HostTime.now() < deadline { usleep(100) }
            if let first = queue.firstFrameHostTime {
                latencies.append(HostTime.seconds(from: t0, to: first))
            } else {
                timedOut += 1
            }
            try queue.stop(immediately: true)
        }
        return (latencies, timedOut)
    }

    func measureSteady(seconds: Double) throws -> SteadyPlayback {
        turnarounds.withLock { $0 = [] }
        refill.withLock { $0 = true }
        for buffer in buffers { try queue.enqueue(buffer) }
        try queue.start()
        Thread.sleep(forTimeInterval: 0.3)
        let underruns0 = queue.underrunCount, xruns0 = device.xrunCount
        turnarounds.withLock { $0 = [] }
        var result = SteadyPlayback()
        let end = HostTime.now() + HostTime.nanoseconds(seconds)
        while HostTime.now() < end {
            Thread.sleep(forTimeInterval: 0.01)
            let held = device.queuedFrames
            result.deviceLatencies.append(Double(held) / device.format.sampleRate)
            result.latencies.append(Double(held + queue.queuedFrames) / device.format.sampleRate)
        }
        result.turnarounds = turnarounds.withLock { $0 }
        result.underruns = queue.underrunCount - underruns0
        result.xruns = device.xrunCount - xruns0
        refill.withLock { $0 = false }
        try queue.stop(immediately: true)
        return result
    }

    func close() {
        queue.dispose()
        engine.stop()
    }
}


/// Keeps every other core busy while alive (`--load`).
final class CPULoad {
    private let running = Locked(true)
    init(threads: Int) {
        for _ in 0..<threads {
            let running = self.running
            let thread = Thread {
                var x = 1.0
                while running.withLock({ $0 }) { for _ in 0..<100_000 { x = x * 1.000001 + 1e-9 } }
                if x == 0 { print(x) }
            }
            thread.start()
        }
    }
    func stop() { running.withLock { $0 = false } }
}

/// Percentile of `values` (nearest rank), in the same unit.
func percentile(_ values: [Double], _ p: Double) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    let rank = min(sorted.count - 1, max(0, Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1))
    return sorted[rank]
}
