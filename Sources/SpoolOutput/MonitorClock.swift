internal import CPulseSimple
import Foundation
import SpoolCore

/// Records a sound server source (a sink's monitor) in process, and keeps with each block the
/// host time its last frame was captured, from the server's own latency figure: a frame's
/// position in the recording maps to the host time it was heard.
///
/// After each `pa_simple_read`, `pa_simple_get_latency` gives how long ago the next frame to
/// be read was captured (the source's latency plus what waits in the stream's buffer), so the
/// frames read so far end at `now − latency`. Each block gives one estimate of the host time of
/// frame 0; the median over many blocks smooths the reader's wake-up jitter.
package final class MonitorClock: @unchecked Sendable {
    // Sendable: `stream` is used only by the reading thread until `stop()` has joined it;
    // everything else is behind `state`.
    package let sampleRate = 48_000
    package let channels = 2
    private let pulse: PulseSimpleLibrary
    private let stream: OpaquePointer
    private let state = Locked(State())
    private let finished = DispatchSemaphore(value: 0)

    private struct State {
        var samples: [Float] = []
        /// Host time (ns) of frame 0, one estimate per block read.
        var originEstimates: [Double] = []
        var running = true
        var failure: String?
    }

    /// Starts recording `source` (a source name, or `@DEFAULT_MONITOR@`).
    /// - Throws: `.deviceUnavailable` when libpulse-simple cannot be loaded or the server
    ///   refuses the stream.
    package init(source: String = "@DEFAULT_MONITOR@") throws {
        let pulse = try PulseSimpleLibrary.shared.get()
        var spec = pa_sample_spec(format: PA_SAMPLE_FLOAT32LE, rate: 48_000, channels: 2)
        // 5 ms fragments: each read returns soon after the server captured its block.
        let fragment = UInt32(48_000 / 200 * 2 * MemoryLayout<Float>.size)
        var attributes = pa_buffer_attr(maxlength: UInt32.max, tlength: UInt32.max, prebuf: UInt32.max,
                                        minreq: UInt32.max, fragsize: fragment)
        var error: Int32 = 0
        guard let stream = pulse.new(nil, "spool", PA_STREAM_RECORD, source, "acoustic check", &spec, nil,
                                     &attributes, &error) else {
            throw AudioError(.deviceUnavailable, "cannot record \(source) from the sound server: \(pulse.text(error))")
        }
        self.pulse = pulse
        self.stream = stream
        let thread = Thread { [self] in readLoop() }
        thread.name = "spool-monitor"
        thread.start()
    }

    deinit { pulse.free(stream) }

    private func readLoop() {
        let frames = 240
        var block = [Float](repeating: 0, count: frames * channels)
        var error: Int32 = 0
        var total = 0
        while state.withLock({ $0.running }) {
            let status = block.withUnsafeMutableBytes { pulse.read(stream, $0.baseAddress, $0.count, &error) }
            let now = Double(HostTime.now())
            guard status == 0 else {
                state.withLock { $0.failure = pulse.text(error) }
                break
            }
            let latency = pulse.latency(stream, &error)
            total += frames
            let origin = now - Double(latency) * 1_000 - Double(total) / Double(sampleRate) * 1e9
            state.withLock { s in
                s.samples += block
                if latency != UInt64.max { s.originEstimates.append(origin) }
            }
        }
        finished.signal()
    }

    /// Stops recording.
    /// - Returns: The interleaved stereo frames, and the host time (ns) of frame 0.
    /// - Throws: `.deviceUnavailable` when reading failed or no timing came.
    package func stop() throws -> (samples: [Float], originHostTime: Double) {
        state.withLock { $0.running = false }
        finished.wait()
        let (samples, estimates, failure) = state.withLock { ($0.samples, $0.originEstimates, $0.failure) }
        if let failure { throw AudioError(.deviceUnavailable, "recording the sound server's monitor failed: \(failure)") }
        guard !estimates.isEmpty else { throw AudioError(.deviceUnavailable, "the sound server gave no recording latency") }
        // The first second is left out: a new record stream's latency settles first.
        let settled = estimates.count > 400 ? Array(estimates.dropFirst(200)) : estimates
        return (samples, settled.sorted()[settled.count / 2])
    }
}
