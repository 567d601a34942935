#if canImport(Glibc)
import Glibc
#endif
internal import CPulse
import SpoolCore

extension PulseAudioStream {
    /// Main loop thread (the stream's write callback, and once at start): renders whole
    /// periods into the server's own buffer while it has room for one.
    ///
    /// Each period is rendered in place into memory `pa_stream_begin_write` lends from
    /// libpulse's shared-memory pool and handed back with `pa_stream_write` (no copy, no
    /// free callback), so the render path calls libpulse, the renderer and atomics only: no
    /// lock but the main loop's own, which libpulse holds around the callback, and no
    /// allocation. `pa_stream_write` from a buffer of Spool's own copies it into a block from
    /// the same pool instead: measured allocation-free too (libpulse keeps its block and
    /// queue-item structs on free lists), but one copy more.
    func fill() {
        guard running.load(ordering: .acquiring), let renderer, let stream else { return }
        let periodBytes = periodFrames * frameBytes
        // pa_stream_writable_size answers (size_t)-1, which is -1 here, on failure.
        var room = pulse.streamWritableSize(stream)
        while room >= periodBytes {
            var data: UnsafeMutableRawPointer?
            var bytes = periodBytes
            guard pulse.streamBeginWrite(stream, &data, &bytes) == 0, let data, bytes >= frameBytes else { return }
            // The pool's blocks are 64 KiB: a period of more (8 channels, 2048 frames) comes in parts.
            let frames = min(periodFrames, bytes / frameBytes)
            // When a frame written now is heard: the latency from the last timing update, or
            // before there is one what the stream's buffer holds (the sink's latency unknown).
            let heard: UInt64
            if let latency = latencyNanoseconds() {
                heard = HostTime.now() &+ latency
            } else {
                let buffered = max(0, Int(granted.tlength) - room) / frameBytes
                heard = HostTime.now() &+ UInt64((Double(buffered) * 1e9 / format.sampleRate).rounded())
            }
            let samples = data.assumingMemoryBound(to: Float.self)
            renderer.render(into: samples, frames: frames, timestamp: RenderTimestamp(sampleTime: sampleTime, hostTime: heard))
            history?.append(samples, frames: frames)
            guard pulse.streamWrite(stream, data, frames * frameBytes, nil, 0, PA_SEEK_RELATIVE) == 0 else {
                _ = pulse.streamCancelWrite(stream)
                return
            }
            sampleTime += Int64(frames)
            room -= frames * frameBytes
        }
    }

    /// Caller's thread, main loop lock: hands `renderer` the stream, fills the server's buffer
    /// on the main loop's thread (`pa_mainloop_api_once`), then uncorks.
    func start(renderer: any AudioRenderer) throws {
        if lost.load(ordering: .acquiring) { throw AudioError(.deviceLost, "\(name): the stream has failed") }
        guard !running.load(ordering: .acquiring) else { throw AudioError(.invalidState, "\(name): already running") }
        guard let api = pulse.mainloopAPI(mainloop) else { throw AudioError(.deviceLost, "\(name): no main loop API") }
        self.renderer = renderer
        rewinder = renderer as? any RewindingRenderer
        history?.reset()
        sampleTime = 0
        running.store(true, ordering: .releasing)
        pulse.apiOnce(api, { _, userdata in
            guard let userdata else { return }
            let stream = Unmanaged<PulseAudioStream>.fromOpaque(userdata).takeUnretainedValue()
            guard stream.running.load(ordering: .acquiring) else { return }  // stopped before it ran
            _ = RenderPriority.requestRealTime()
            stream.fill()
            stream.cork(false)
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Caller's thread, main loop lock: the renderer is never called again once the lock is
    /// released; corks the stream and drops what the server still holds.
    func stop() {
        running.store(false, ordering: .releasing)
        renderer = nil
        rewinder = nil
        guard let stream, !lost.load(ordering: .acquiring) else { return }
        cork(true)
        if let operation = pulse.streamFlush(stream, nil, nil) { pulse.operationUnref(operation) }
    }

    // MARK: Rewind

    /// Frames past the server's read position that a rewind leaves as they are: what the sink
    /// may take from the stream while the rewrite travels (2 ms).
    var rewindMargin: Int { max(1, Int((format.sampleRate * 0.002).rounded(.up))) }

    /// Any thread but the main loop's: asks the server for the stream's timing now
    /// (`pa_stream_update_timing_info`), and rewinds on the main loop's thread when it comes
    /// (a round trip to the server): where the server reads must be known to the frame, and
    /// the timing updated every 100 ms is up to 100 ms old. The request's allocation is made
    /// here, on the caller's thread.
    func requestRewind() {
        withMainloopLock {
            guard running.load(ordering: .acquiring), !lost.load(ordering: .acquiring), let stream else { return }
            rewind.request()
            let operation = pulse.streamUpdateTimingInfo(stream, { _, success, userdata in
                guard let userdata else { return }
                Unmanaged<PulseAudioStream>.fromOpaque(userdata).takeUnretainedValue().rewindNow(timingArrived: success != 0)
            }, Unmanaged.passUnretained(self).toOpaque())
            if let operation { pulse.operationUnref(operation) }
        }
    }

    /// Main loop thread, with the timing just updated: re-mixes what the stream holds on the
    /// server past its read position and the margin, and writes it again over itself
    /// (`pa_stream_write` with a negative `PA_SEEK_RELATIVE` offset). Only the stream's own
    /// buffer is rewritten, never what the sink has taken from it (that is the hardware's):
    /// the new sound is heard the sink's latency and the margin after the call. Nothing is
    /// written when the renderer added nothing.
    func rewindNow(timingArrived: Bool) {
        guard rewind.take() else { return }
        guard timingArrived, running.load(ordering: .acquiring), let stream, let rewinder, let history,
              let info = pulse.streamGetTimingInfo(stream)?.pointee, info.write_index_corrupt == 0,
              info.read_index_corrupt == 0 else { return rewind.decline(self.rewinder) }
        var wall = timeval()
        gettimeofday(&wall, nil)
        let now = HostTime.now()
        let nanosecondsPerFrame = 1e9 / format.sampleRate
        let elapsed = max(0, Double(wall.tv_sec - info.timestamp.tv_sec) * 1e9 + Double(wall.tv_usec - info.timestamp.tv_usec) * 1e3)
        // libpulse counts this client's writes into write_index as they are made: what the
        // stream holds is write_index − read_index, less what the sink read since the server
        // measured (it reads on while playing).
        let held = Double(info.write_index - info.read_index) / Double(frameBytes) - elapsed / nanosecondsPerFrame
        let read = sampleTime - Int64(max(0, held).rounded(.down))
        let sinkLatency = Double(info.sink_usec) * 1e3
        guard let mixed = history.remix(from: read + Int64(rewindMargin), renderer: rewinder, hostTime: { frame in
            // Saturating: the sink's latency is the server's figure, whatever it says.
            now &+ HostTime.nanoseconds((sinkLatency + Double(max(0, frame - read)) * nanosecondsPerFrame) * 1e-9)
        }) else { return rewind.decline(rewinder) }
        let back = Int64(sampleTime - mixed.first) * Int64(frameBytes)
        let written = pulse.streamWrite(stream, mixed.frames, mixed.count * frameBytes, nil, -back, PA_SEEK_RELATIVE)
        rewind.record(rewound: written == 0)
    }

    /// Main loop lock: corks or uncorks the stream (`pa_stream_cork`), not waiting for the reply.
    func cork(_ corked: Bool) {
        guard let stream else { return }
        if let operation = pulse.streamCork(stream, corked ? 1 : 0, nil, nil) { pulse.operationUnref(operation) }
    }

    /// Main loop lock: how long until a frame written now is heard, in nanoseconds, from the
    /// last timing update (`pa_stream_get_timing_info`); nil before there is one, or while the
    /// write index is unknown (after a flush).
    ///
    /// What the stream holds (write index less read index), plus what the sink holds
    /// (`sink_usec`), less the time since the server measured both (`timestamp`, its wall
    /// clock). libpulse's own interpolation (`PA_STREAM_INTERPOLATE_TIMING`) is not used: on a
    /// sink that has rendered ahead (an idle null sink holds 2 s) its smoothed play time runs
    /// past the write index and `pa_stream_get_latency` answered 0 for seconds.
    func latencyNanoseconds() -> UInt64? {
        guard let stream, let info = pulse.streamGetTimingInfo(stream)?.pointee, info.write_index_corrupt == 0,
              info.read_index_corrupt == 0 else { return nil }
        var now = timeval()
        gettimeofday(&now, nil)
        let elapsed = Double(now.tv_sec - info.timestamp.tv_sec) * 1e9 + Double(now.tv_usec - info.timestamp.tv_usec) * 1e3
        let buffered = Double(info.write_index - info.read_index) / Double(frameBytes) / format.sampleRate * 1e9
        let latency = buffered + Double(info.sink_usec) * 1e3 - elapsed
        // Saturating (HostTime.nanoseconds): the figures are the server's, whatever they say.
        return HostTime.nanoseconds(latency * 1e-9)
    }

    /// Main loop lock: the latency in frames, 0 when stopped or before the first timing update.
    func latencyFrames() -> Int {
        guard running.load(ordering: .acquiring), let latency = latencyNanoseconds() else { return 0 }
        return Int((Double(latency) * 1e-9 * format.sampleRate).rounded())
    }

    /// Any thread but the main loop's: asks the server for the stream's timing
    /// (`pa_stream_update_timing_info`). libpulse allocates for each request (the reply's
    /// time-out event); made here, on the device's timing queue, it keeps that off the
    /// render path, where `PA_STREAM_AUTO_TIMING_UPDATE` would make it.
    func requestTiming() {
        withMainloopLock {
            guard let stream, running.load(ordering: .acquiring), !lost.load(ordering: .acquiring) else { return }
            if let operation = pulse.streamUpdateTimingInfo(stream, nil, nil) { pulse.operationUnref(operation) }
        }
    }
}
