import Foundation
import Spool

/// `spool bench latency --acoustic`: both back-ends start a click at one host time on the
/// sound server; its monitor, recorded from ~2 s before, shows how far apart they really
/// sounded, which is checked against the offset the back-ends' own reports predict.
enum AcousticCheck {
    /// One back-end's click: started at once, heard when the monitor recorded it.
    struct Absolute: Encodable {
        let backend: String
        /// Start call → first frame heard, from the recording mapped to host time (observed).
        let observedMs: Double
        /// The same interval as the back-end reports it.
        let reportedMs: Double
        let differenceMs: Double
    }

    struct Result: Encodable {
        let queueDevice: String
        let openALDevice: String
        let absolute: [Absolute]
        let measuredOffsetMs: Double
        let predictedOffsetMs: Double
        let differenceMs: Double
        let toleranceMs: Double
        let agrees: Bool
    }

    /// Runs the check at the device configuration asked, the queue on `queueOutput` (a target
    /// that reaches the sound server: `default`, `pulse[:SINK]` or `alsa:NAME`).
    static func run(rate: Double, queueOutput: OutputTarget = .default, periodFrames: Int = 512, periods: Int = 3) throws
        -> Result {
        guard serverAnswers() else {
            throw AudioError(.deviceUnavailable, "the acoustic check needs a PulseAudio or PipeWire server (pactl info failed)")
        }
        let recorder = try MonitorClock()

        // Queue: the engine on the output asked; OpenAL: its default device, both at F × P asked.
        let configuration = OutputConfiguration(sampleRate: rate, channelCount: 2, periodFrames: periodFrames,
                                                periodCount: periods)
        let (device, notice) = try OutputDeviceFactory.open(queueOutput, configuration: configuration)
        guard notice == nil, !(device is NullDevice) else {
            throw AudioError(.deviceUnavailable, "the acoustic check's queue output reaches no sound server (\(notice ?? "null"))")
        }
        let engine = QueueEngine(device: device)
        try engine.start()
        let openAL = try OpenALBackend(.systemDefault, configuration: configuration)
        let format = try AudioFormat(sampleRate: rate, channelCount: 2)
        let alFormat = try AudioFormat(sampleRate: openAL.device.format.sampleRate, channelCount: 2)

        // Keep both streams busy with silence: a sound server may not pull a new stream for a
        // second or more, and the monitor drops leading silence after idling.
        let silence = try PCMBuffer(format: format, samples: [Float](repeating: 0, count: 4096 * 2))
        let alSilence = try PCMBuffer(format: alFormat, samples: [Float](repeating: 0, count: 4096 * 2))
        let queueBed = try BufferQueue(format: format, engine: engine) { q, _ in try? q.enqueue(silence) }
        for _ in 0..<3 { try queueBed.enqueue(silence) }
        try queueBed.start()
        let alBed = try openAL.makeVoice(format: alFormat, priority: 1)
        alBed.setBufferConsumedHandler { [weak alBed] _ in try? alBed?.enqueue(alSilence) }
        for _ in 0..<3 { try alBed.enqueue(alSilence) }
        try alBed.start()
        Thread.sleep(forTimeInterval: 3)
        // Until the server's timing has arrived, OpenAL reports no latency at all.
        let timing = HostTime.now() + HostTime.nanoseconds(5)
        while openAL.device.deviceLatency == 0 && HostTime.now() < timing { Thread.sleep(forTimeInterval: 0.05) }

        // The clicks: 10 ms of full-scale 2 kHz, left channel from the queue, right from OpenAL.
        let queueClick = try PCMBuffer(format: format, samples: click(rate: rate, channel: 0))
        let alClick = try PCMBuffer(format: alFormat, samples: click(rate: alFormat.sampleRate, channel: 1))

        // 1. Each back-end alone, started at once, five times: the absolute start latency.
        // Each report is quantised to a period (an update on OpenAL) and the monitor's timing
        // to the server's blocks, so the median of five is compared. The queue starts below the
        // floor first, where its output rewinds, then behind what the output holds.
        let starts = 5
        let rewinds = engine.rewindSupport == .available ? [true, false] : [false]
        var queueStarts: [[(call: UInt64, reported: Double?)]] = []
        var alStarts: [(call: UInt64, reported: Double?)] = []
        var alone: [AnyObject] = []
        for rewind in rewinds {
            engine.startsBelowFloor = rewind
            var calls: [(call: UInt64, reported: Double?)] = []
            for _ in 0..<starts {
                let voice = try BufferQueue(format: format, engine: engine) { _, _ in }
                try voice.enqueue(queueClick)
                let call = HostTime.now()
                try voice.start()
                Thread.sleep(forTimeInterval: 0.3)
                calls.append((call, voice.firstFrameHostTime.map { Double(Int64(bitPattern: $0 &- call)) / 1e6 }))
                alone.append(voice)
            }
            queueStarts.append(calls)
        }
        for _ in 0..<starts {
            let voice = try openAL.makeVoice(format: alFormat, priority: 1)
            try voice.enqueue(alClick)
            let call = HostTime.now()
            try voice.start()
            alStarts.append((call, openALHeard(voice, since: call, rate: alFormat.sampleRate).map { $0 / 1e6 }))
            Thread.sleep(forTimeInterval: 0.3)
            alone.append(voice)
        }

        // 2. Both at one host time: how far apart they really sounded.
        let queueVoice = try BufferQueue(format: format, engine: engine) { _, _ in }
        try queueVoice.enqueue(queueClick)
        let alVoice = try openAL.makeVoice(format: alFormat, priority: 1)
        try alVoice.enqueue(alClick)
        let target = HostTime.now() + HostTime.nanoseconds(0.5)
        try queueVoice.start(atHostTime: target)
        try alVoice.start(atHostTime: target)
        let alHeard = openALHeard(alVoice, since: target, rate: alFormat.sampleRate)
        Thread.sleep(forTimeInterval: 1.5)
        let (samples, origin) = try recorder.stop()
        let queueHeard = queueVoice.firstFrameHostTime.map { Double(Int64(bitPattern: $0 &- target)) }
        for voice in [queueVoice, queueBed] + alone.compactMap({ $0 as? BufferQueue }) { voice.dispose() }
        for voice in [alVoice, alBed] + alone.compactMap({ $0 as? OpenALStreamingSource }) { voice.dispose() }
        engine.stop()
        openAL.device.close()

        guard let queueHeard, let alHeard, !queueStarts.joined().contains(where: { $0.reported == nil }),
              !alStarts.contains(where: { $0.reported == nil }) else {
            throw AudioError(.deviceUnavailable, "a back-end never reported its click as started")
        }
        /// The host time (ns) of the first click on `channel` heard after `from`.
        func heard(channel: Int, after from: UInt64) throws -> Double {
            let first = max(0, Int((Double(from) - origin) / 1e9 * 48_000))
            guard let frame = onset(samples, channel: channel, from: first) else {
                throw AudioError(.corruptData, "the recording of the sound server's monitor holds no click on channel \(channel) "
                                 + "after frame \(first) (\(samples.count / 2) frames)")
            }
            return origin + Double(frame) / 48_000 * 1e9
        }
        /// The median over the starts of heard and reported, and of their difference.
        func absolute(_ name: String, channel: Int, _ starts: [(call: UInt64, reported: Double?)]) throws -> Absolute {
            let pairs = try starts.map { start -> (Double, Double) in
                ((try heard(channel: channel, after: start.call) - Double(start.call)) / 1e6, start.reported ?? 0)
            }
            func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
            return Absolute(backend: name, observedMs: median(pairs.map(\.0)), reportedMs: median(pairs.map(\.1)),
                            differenceMs: median(pairs.map { $0.0 - $0.1 }))
        }
        let measured = (try heard(channel: 1, after: target) - heard(channel: 0, after: target)) / 1e6
        let predicted = (alHeard - queueHeard) / 1e6
        let period = max(Double(device.periodFrames) / rate, Double(openAL.device.updateFrames) / alFormat.sampleRate) * 1000
        let tolerance = period + 2
        var heardAlone: [Absolute] = []
        for (rewind, starts) in zip(rewinds, queueStarts) {
            let name = rewinds.count > 1 ? "queue (rewind \(rewind ? "on" : "off"))" : "queue"
            heardAlone.append(try absolute(name, channel: 0, starts))
        }
        heardAlone.append(try absolute("openal", channel: 1, alStarts))
        let agrees = abs(measured - predicted) <= tolerance && heardAlone.allSatisfy { abs($0.differenceMs) <= tolerance }
        return Result(queueDevice: "\(device.name) \(device.periodFrames)×\(device.periodCount)",
                      openALDevice: "openal:\(openAL.device.name) \(openAL.device.updateFrames)\(openAL.device.periodCount.map { "×\($0)" } ?? "-frame updates")",
                      absolute: heardAlone, measuredOffsetMs: measured, predictedOffsetMs: predicted,
                      differenceMs: measured - predicted, toleranceMs: tolerance, agrees: agrees)
    }

    /// Nanoseconds after `since` at which OpenAL says the voice's frame 0 was heard, from its
    /// source latency once frames have played; nil if none played within 3 s.
    static func openALHeard(_ voice: OpenALStreamingSource, since: UInt64, rate: Double) -> Double? {
        firstFrameHeard(since: since, rate: rate, timeout: 3, played: { voice.framesPlayed },
                        latency: { voice.outputLatency }).map { $0 * 1e9 }
    }

    static func click(rate: Double, channel: Int) -> [Float] {
        let frames = Int(rate * 0.01)
        var samples = [Float](repeating: 0, count: frames * 2)
        for i in 0..<frames { samples[i * 2 + channel] = Float(sin(2 * .pi * 2000 * Double(i) / rate)) * 0.9 }
        return samples
    }

    /// First frame from `from` whose sample on `channel` rises above a quarter of full scale.
    static func onset(_ samples: [Float], channel: Int, from: Int = 0) -> Int? {
        stride(from: from * 2 + channel, to: samples.count, by: 2).first { abs(samples[$0]) > 0.25 }.map { $0 / 2 }
    }

    static func serverAnswers() -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["pactl", "info"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }

    static func report(_ r: Result) -> String {
        let verdict = r.agrees ? "agree" : "DISAGREE: the back-ends' latency reports do not match what was heard"
        let absolute = r.absolute.map {
            String(format: "  %@ started at once, median of 5: heard after %.2f ms (observed), reported %.2f ms, difference %.2f ms",
                   $0.backend as NSString, $0.observedMs, $0.reportedMs, $0.differenceMs)
        }.joined(separator: "\n")
        return String(format: """
            acoustic check (sound server monitor mapped to host time, queue click left, OpenAL click right):
              queue on %@, OpenAL on %@
            %@
              both at one host time: OpenAL − queue offset measured %.2f ms, predicted by their reports %.2f ms,
              difference %.2f ms
              tolerance one period + 2 ms = %.2f ms: %@
            """, r.queueDevice, r.openALDevice, absolute, r.measuredOffsetMs, r.predictedOffsetMs, r.differenceMs,
            r.toleranceMs, verdict)
    }
}
