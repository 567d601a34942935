import Foundation
import Spool

/// `spool bench latency --acoustic`: both back-ends start a click at one host time on the
/// sound server; its monitor, recorded from ~2 s before, shows how far apart they really
/// sounded, which is checked against the offset the back-ends' own reports predict.
enum AcousticCheck {
    struct Result: Encodable {
        let queueDevice: String
        let openALDevice: String
        let measuredOffsetMs: Double
        let predictedOffsetMs: Double
        let differenceMs: Double
        let toleranceMs: Double
        let agrees: Bool
    }

    static func run(rate: Double) throws -> Result {
        guard serverAnswers() else {
            throw AudioError(.deviceUnavailable, "the acoustic check needs a PulseAudio or PipeWire server (pactl info failed)")
        }
        let recording = FileManager.default.temporaryDirectory.appendingPathComponent("spool-acoustic-\(getpid()).f32")
        let recorder = Process()
        recorder.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        recorder.arguments = ["parec", "-d", "@DEFAULT_MONITOR@", "--format=float32le", "--rate=48000", "--channels=2",
                              "--raw", "--latency-msec=10", recording.path]
        try recorder.run()
        defer { try? FileManager.default.removeItem(at: recording) }

        // Queue: the engine on ALSA `default`; OpenAL: its default device, at OpenAL Soft's settings.
        let queueConfiguration = OutputConfiguration(sampleRate: rate, channelCount: 2, periodFrames: 512, periodCount: 3)
        let alsa = try ALSADevice(name: "default", configuration: queueConfiguration)
        let engine = QueueEngine(device: alsa)
        try engine.start()
        // OpenAL Soft at the same device buffer, on the sound server (not its null driver).
        let openAL = try OpenALBackend(.systemDefault, configuration: queueConfiguration)
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
        let queueVoice = try BufferQueue(format: format, engine: engine) { _, _ in }
        try queueVoice.enqueue(queueClick)
        let alVoice = try openAL.makeVoice(format: alFormat, priority: 1)
        try alVoice.enqueue(alClick)
        let target = HostTime.now() + HostTime.nanoseconds(0.5)
        try queueVoice.start(atHostTime: target)
        try alVoice.start(atHostTime: target)
        // What each back-end reports: when its click's first frame leaves the device.
        var alHeard: Double?  // ns after `target`
        let deadline = HostTime.now() + HostTime.nanoseconds(3)
        while alHeard == nil && HostTime.now() < deadline {
            let played = alVoice.framesPlayed
            if played > 0 {
                // Nanoseconds after the target at which OpenAL says frame 0 was heard.
                let sinceTarget = Double(Int64(bitPattern: HostTime.now() &- target))
                alHeard = sinceTarget + (alVoice.outputLatency - Double(played) / alFormat.sampleRate) * 1e9
            }
            usleep(100)
        }
        Thread.sleep(forTimeInterval: 1.5)
        recorder.terminate()
        kill(recorder.processIdentifier, SIGKILL)
        recorder.waitUntilExit()
        let queueHeard = queueVoice.firstFrameHostTime.map { Double(Int64(bitPattern: $0 &- target)) }
        queueVoice.dispose()
        queueBed.dispose()
        alVoice.dispose()
        alBed.dispose()
        engine.stop()
        openAL.device.close()

        guard let queueHeard, let alHeard else {
            throw AudioError(.deviceUnavailable, "a back-end never reported its click as started")
        }
        let samples = try Data(contentsOf: recording).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        guard let left = onset(samples, channel: 0), let right = onset(samples, channel: 1) else {
            throw AudioError(.corruptData, "the recording of the sound server's monitor holds no click (\(samples.count / 2) frames)")
        }
        let measured = Double(right - left) / 48_000 * 1000
        let predicted = (alHeard - queueHeard) / 1e6
        let period = max(Double(alsa.periodFrames) / rate, Double(openAL.device.updateFrames) / alFormat.sampleRate) * 1000
        let tolerance = period + 2
        return Result(queueDevice: "\(alsa.name) \(alsa.periodFrames)×\(alsa.periodCount)",
                      openALDevice: "openal:\(openAL.device.name) \(openAL.device.updateFrames)\(openAL.device.periodCount.map { "×\($0)" } ?? "-frame updates")",
                      measuredOffsetMs: measured, predictedOffsetMs: predicted,
                      differenceMs: measured - predicted, toleranceMs: tolerance, agrees: abs(measured - predicted) <= tolerance)
    }

    static func click(rate: Double, channel: Int) -> [Float] {
        let frames = Int(rate * 0.01)
        var samples = [Float](repeating: 0, count: frames * 2)
        for i in 0..<frames { samples[i * 2 + channel] = Float(sin(2 * .pi * 2000 * Double(i) / rate)) * 0.9 }
        return samples
    }

    /// First frame whose sample on `channel` rises above a quarter of full scale.
    static func onset(_ samples: [Float], channel: Int) -> Int? {
        stride(from: channel, to: samples.count, by: 2).first { abs(samples[$0]) > 0.25 }.map { $0 / 2 }
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
        return String(format: """
            acoustic check (sound server monitor, queue click left, OpenAL click right):
              queue on %@, OpenAL on %@
              measured OpenAL − queue offset  %.2f ms
              predicted by their own reports  %.2f ms
              difference                      %.2f ms (tolerance one period + 2 ms = %.2f ms): %@
            """, r.queueDevice, r.openALDevice, r.measuredOffsetMs, r.predictedOffsetMs, r.differenceMs, r.toleranceMs, verdict)
    }
}
