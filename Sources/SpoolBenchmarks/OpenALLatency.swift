import Foundation
import Spool

/// The OpenAL back-end in the latency bench: a streaming source with buffers of one period,
/// refilled from its consumed-buffer handler (the pump's unqueue).
enum OpenALLatency {
    static func makeProbe(output: OutputTarget, rate: Double, periodFrames: Int, periods: Int,
                          reference: Bool) throws -> (any LatencyProbe, String) {
        let configuration = OutputConfiguration(sampleRate: rate, channelCount: 2, periodFrames: periodFrames, periodCount: periods)
        let backend: OpenALBackend
        switch output {
        case .null, .offline:
            backend = try OpenALBackend(.null(configuration))
        case .default:
            // The reference row leaves OpenAL Soft at its own settings.
            backend = try OpenALBackend(.systemDefault, configuration: reference ? nil : configuration)
        case .alsa(let name):
            backend = try OpenALBackend(.named(name), configuration: reference ? nil : configuration)
        case .pulse:
            // OpenAL Soft plays to PulseAudio through a driver of its own, which `default` picks.
            throw UsageError("--output pulse is the queue back-end's; the OpenAL back-end reaches PulseAudio through "
                             + "OpenAL Soft's own driver with --output default")
        }
        let bufferFrames = reference ? 4096 : periodFrames
        let probe = try OpenALLatencyProbe(backend: backend, bufferFrames: bufferFrames, bufferCount: 3,
                                           periods: reference ? 3 : periods)
        let note = reference ? "OpenAL Soft's own device settings, 3 source buffers of 4096 frames"
            : "3 source buffers of one period (ALSOFT_CONF period_size/periods)"
        return (probe, note)
    }
}

final class OpenALLatencyProbe: LatencyProbe {
    let backend: OpenALBackend
    let voice: OpenALStreamingSource
    let buffer: PCMBuffer
    let bufferCount: Int
    let periods: Int
    private let refill = Locked(false)
    private let ledger = Locked(Ledger())

    struct Ledger {
        var enqueued = 0
    }

    init(backend: OpenALBackend, bufferFrames: Int, bufferCount: Int, periods: Int) throws {
        self.backend = backend
        self.bufferCount = bufferCount
        self.periods = periods
        let rate = backend.device.format.sampleRate
        voice = try backend.makeVoice(format: AudioFormat(sampleRate: rate, channelCount: 2), priority: 0)
        buffer = try PCMBuffer(format: AudioFormat(sampleRate: rate, channelCount: 2),
                               samples: MixBench.toneSamples(frames: bufferFrames, rate: rate, frequency: 440))
        let refill = self.refill, ledger = self.ledger, voice = self.voice, buffer = self.buffer
        voice.setBufferConsumedHandler { [weak voice] _ in
            guard let voice, refill.withLock({ $0 }) else { return }
            ledger.withLock { $0.enqueued += buffer.frameCount }
            try? voice.enqueue(buffer)
        }
    }

    /// What the device really runs with. OpenAL Soft tells its update size (`ALC_REFRESH`)
    /// but not how many updates the sound server buffers: that comes from the server's own
    /// latency figure (`ALC_DEVICE_CLOCK_LATENCY_SOFT`), in whole updates, once its timing
    /// has arrived (read after the warm-up); the null device's clock holds what was asked.
    var negotiated: (periodFrames: Int, periods: Int, rate: Double) {
        let device = backend.device
        if let count = device.periodCount { return (device.updateFrames, count, device.format.sampleRate) }
        let update = Double(device.updateFrames) / device.format.sampleRate
        let held = device.deviceLatency
        let count = held > 0 ? max(1, Int((held / update).rounded())) : periods
        return (device.updateFrames, count, device.format.sampleRate)
    }

    /// On the null device OpenAL renders on Spool's clock-paced thread: its latency report is
    /// that clock's model. On a sound server it is the server's own timing.
    var timing: String {
        if case .null = backend.device.kind { return "modelled" }
        return "observed"
    }

    /// OpenAL Soft mixes its periods ahead and has no way to write them again.
    var rewind: String { "cannot" }

    /// OpenAL Soft says its update size only (the F×P columns).
    var granted: String? { nil }

    func measureStarts(count: Int) throws -> (latencies: [Double], timedOut: Int) {
        refill.withLock { $0 = false }
        var random = SplitMix(seed: 7)  // the same start phases as the queue probe
        var latencies: [Double] = []
        var timedOut = 0
        let rate = backend.device.format.sampleRate
        let period = Double(backend.device.updateFrames) / rate
        // A sound server reports no latency until its timing arrives (about 2 s after an idle
        // null sink sees a new stream): play silence through that before measuring.
        if case .null = backend.device.kind { Thread.sleep(forTimeInterval: 0.2) } else { try warmUp(seconds: 3) }
        for _ in 0..<count {
            for _ in 0..<bufferCount { try voice.enqueue(buffer) }
            Thread.sleep(forTimeInterval: period * random.nextUnit())
            let t0 = HostTime.now()
            try voice.start()
            let deadline = t0 + HostTime.nanoseconds(2)
            var seen = false
            while HostTime.now() < deadline {
                let played = voice.framesPlayed
                if played > 0 {
                    // OpenAL's own account (AL_SOFT_source_latency): the sample at the source's
                    // offset is heard `outputLatency` from now, so frame 0 was due that much earlier.
                    let heard = Double(HostTime.now()) + (voice.outputLatency - Double(played) / rate) * 1e9
                    latencies.append((heard - Double(t0)) * 1e-9)
                    seen = true
                    break
                }
                usleep(100)
            }
            if !seen { timedOut += 1 }
            try voice.stop(immediately: true)
            let quiet = HostTime.now() + HostTime.nanoseconds(0.5)
            while voice.isPlaying && HostTime.now() < quiet { usleep(200) }
        }
        return (latencies, timedOut)
    }

    private func warmUp(seconds: Double) throws {
        let silence = try PCMBuffer(format: buffer.format, samples: [Float](repeating: 0, count: 4096 * 2))
        let bed = try backend.makeVoice(format: buffer.format, priority: 1)
        bed.setBufferConsumedHandler { [weak bed] _ in try? bed?.enqueue(silence) }
        for _ in 0..<3 { try bed.enqueue(silence) }
        try bed.start()
        Thread.sleep(forTimeInterval: seconds)
        // And until the server's timing has arrived (OpenAL then reports a real latency).
        let deadline = HostTime.now() + HostTime.nanoseconds(5)
        while backend.device.deviceLatency == 0 && HostTime.now() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        bed.setBufferConsumedHandler(nil)
        try bed.stop(immediately: true)
        bed.dispose()
    }

    func measureSteady(seconds: Double) throws -> SteadyPlayback {
        let rate = backend.device.format.sampleRate
        ledger.withLock { $0 = Ledger() }
        refill.withLock { $0 = true }
        for _ in 0..<bufferCount {
            ledger.withLock { $0.enqueued += buffer.frameCount }
            try voice.enqueue(buffer)
        }
        try voice.start()
        Thread.sleep(forTimeInterval: 0.3)
        let underruns0 = voice.underrunCount, xruns0 = backend.device.xrunCount
        var result = SteadyPlayback()
        let end = HostTime.now() + HostTime.nanoseconds(seconds)
        while HostTime.now() < end {
            Thread.sleep(forTimeInterval: 0.01)
            let ahead = Double(ledger.withLock { $0.enqueued } - voice.framesPlayed) / rate
            let held = voice.outputLatency
            result.deviceLatencies.append(held)
            result.latencies.append(max(0, ahead) + held)
        }
        result.underruns = voice.underrunCount - underruns0
        result.xruns = backend.device.xrunCount - xruns0
        refill.withLock { $0 = false }
        try voice.stop(immediately: true)
        return result
    }

    func close() {
        voice.setBufferConsumedHandler(nil)
        voice.dispose()
        backend.device.close()
    }
}
