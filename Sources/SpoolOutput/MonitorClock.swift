internal import CPulseSimple
import Foundation
import SpoolCore

/// Records a sound server source (a sink's monitor) in process, and keeps with the recording
/// two ways of telling when each frame was captured: what the acoustic check of
/// `spool bench latency` and the tests that play to a real sound server read what came out of
/// the server with.
///
/// - From the server's latency figure: after each `pa_simple_read`, `pa_simple_get_latency`
///   gives how long ago the next frame to be read was captured (the source's latency plus what
///   waits in the stream's buffer), so the frames read so far end at `now − latency`. Each
///   block gives one estimate of the host time of frame 0; their median smooths the reader's
///   wake-up jitter.
/// - From the reads alone: a frame counted by a read that returned at host time t was captured
///   no later than t, so t − (frames counted)/rate bounds the host time of frame 0 from above,
///   and the smallest of those bounds (a read that returned just as a fragment arrived) is
///   within a few milliseconds of it, late by at most the server's hand-over, never early.
///
/// The fragment size is the record stream's `fragsize`, which the server passes on to the
/// monitored sink as a latency request: the tests keep 20 ms, what `parec` asks for, so that
/// recording does not change how the sink runs the streams under test.
package final class MonitorClock: @unchecked Sendable {
    // Sendable: `stream` is used only by the reading thread until `stop()` has joined it;
    // everything else is behind `state`.
    package let sampleRate = 48_000
    package let channels: Int
    private let blockFrames: Int
    private let pulse: PulseSimpleLibrary
    private let stream: OpaquePointer
    private let state = Locked(State())
    private let finished = DispatchSemaphore(value: 0)

    private struct State {
        var samples: [Float] = []
        /// Host time (ns) of frame 0, one estimate per block read, from the server's latency.
        var originEstimates: [Double] = []
        /// The smallest upper bound so far on the host time (ns) of frame 0, from the reads.
        var originBound = Double.infinity
        var running = true
        var failure: String?
    }

    /// What a stopped recording holds.
    package struct Recording: Sendable {
        /// The frames, interleaved.
        package var samples: [Float]
        /// Host time (ns) of frame 0 by the server's latency figure (the median estimate).
        package var originHostTime: Double
        /// Host time (ns) of frame 0 by the reads alone: an upper bound, never early.
        package var originBoundHostTime: Double
    }

    /// Starts recording `source` (a source name, or `@DEFAULT_MONITOR@`).
    /// - Parameters:
    ///   - source: The source to record.
    ///   - channels: 1 or 2 (a monitor of a stereo sink recorded as mono is the channels' mix).
    ///   - fragmentMilliseconds: The record stream's fragment, 1…100 ms.
    ///   - server: The server to record from (`pa_simple_new`'s server argument); `nil` for the default.
    /// - Throws: `.invalidParameter` for a channel count or fragment out of range;
    ///   `.deviceUnavailable` when libpulse-simple cannot be loaded or the server refuses the stream.
    package init(source: String = "@DEFAULT_MONITOR@", channels: Int = 2, fragmentMilliseconds: Int = 5,
                 server: String? = nil) throws {
        guard (1...2).contains(channels), (1...100).contains(fragmentMilliseconds) else {
            throw AudioError(.invalidParameter, "a monitor recording takes 1 or 2 channels and a 1...100 ms fragment, "
                             + "not \(channels) and \(fragmentMilliseconds) ms")
        }
        let pulse = try PulseSimpleLibrary.shared.get()
        var spec = pa_sample_spec(format: PA_SAMPLE_FLOAT32LE, rate: UInt32(sampleRate), channels: UInt8(channels))
        let fragment = UInt32(sampleRate / 1000 * fragmentMilliseconds * channels * MemoryLayout<Float>.size)
        var attributes = pa_buffer_attr(maxlength: UInt32.max, tlength: UInt32.max, prebuf: UInt32.max,
                                        minreq: UInt32.max, fragsize: fragment)
        var error: Int32 = 0
        guard let stream = pulse.new(server, "spool", PA_STREAM_RECORD, source, "monitor recording", &spec, nil,
                                     &attributes, &error) else {
            throw AudioError(.deviceUnavailable, "cannot record \(source) from the sound server: \(pulse.text(error))")
        }
        self.channels = channels
        // 5 ms blocks: each read returns soon after the server delivered what it holds.
        blockFrames = sampleRate / 200
        self.pulse = pulse
        self.stream = stream
        let thread = Thread { [self] in readLoop() }
        thread.name = "spool-monitor"
        thread.start()
    }

    deinit {
        state.withLock { $0.running = false }
        pulse.free(stream)
    }

    private func readLoop() {
        var block = [Float](repeating: 0, count: blockFrames * channels)
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
            total += blockFrames
            let elapsed = Double(total) / Double(sampleRate) * 1e9
            let origin = now - Double(latency) * 1_000 - elapsed
            state.withLock { s in
                s.samples += block
                s.originBound = min(s.originBound, now - elapsed)
                if latency != UInt64.max { s.originEstimates.append(origin) }
            }
        }
        finished.signal()
    }

    /// Stops recording.
    /// - Returns: The recording.
    /// - Throws: `.deviceUnavailable` when reading failed or no timing came.
    package func stopRecording() throws -> Recording {
        state.withLock { $0.running = false }
        finished.wait()
        let (samples, estimates, bound, failure) = state.withLock { ($0.samples, $0.originEstimates, $0.originBound, $0.failure) }
        if let failure { throw AudioError(.deviceUnavailable, "recording the sound server's monitor failed: \(failure)") }
        guard !estimates.isEmpty, bound.isFinite else {
            throw AudioError(.deviceUnavailable, "the sound server gave no recording latency")
        }
        // The first second is left out: a new record stream's latency settles first.
        let settled = estimates.count > 400 ? Array(estimates.dropFirst(200)) : estimates
        return Recording(samples: samples, originHostTime: settled.sorted()[settled.count / 2], originBoundHostTime: bound)
    }

    /// Stops recording.
    /// - Returns: The interleaved frames, and the host time (ns) of frame 0 by the server's latency.
    /// - Throws: As `stopRecording()`.
    package func stop() throws -> (samples: [Float], originHostTime: Double) {
        let recording = try stopRecording()
        return (recording.samples, recording.originHostTime)
    }
}
