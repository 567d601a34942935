#if canImport(Glibc)
import Glibc
#endif
internal import CALSA
import SpoolCore

/// The ALSA device's render loop. Everything it touches is made before its thread starts; per
/// period it calls libasound, the renderer and atomics only.
final class ALSARenderLoop: Sendable {
    let pcm: ALSAPCM
    let format: AudioFormat
    let periodFrames: Int
    let bufferFrames: Int
    let sampleType: PCMBuffer.SampleType
    let renderer: any AudioRenderer
    let rewinder: (any RewindingRenderer)?
    let clock: VirtualClock
    let events: RenderThread.EventRelay
    let rewind: RewindRequest
    /// What was written and may be written again: the device buffer and a period more.
    let history: RewindHistory
    /// Frames of what `snd_pcm_rewindable` allows that a rewind leaves as they are: the time
    /// the re-mix takes (1 ms).
    let rewindMargin: Int
    /// How long to wait for room before checking the stop flag again: two periods, at least
    /// 10 ms, so `stop()` returns promptly even when the device stalls.
    let waitMilliseconds: Int32

    init(pcm: ALSAPCM, format: AudioFormat, periodFrames: Int, bufferFrames: Int, sampleType: PCMBuffer.SampleType,
         renderer: any AudioRenderer, clock: VirtualClock, events: RenderThread.EventRelay, rewind: RewindRequest,
         rewinds: Bool) {
        self.pcm = pcm
        self.format = format
        self.periodFrames = periodFrames
        self.bufferFrames = bufferFrames
        self.sampleType = sampleType
        self.renderer = renderer
        rewinder = rewinds ? renderer as? any RewindingRenderer : nil
        self.clock = clock
        self.events = events
        self.rewind = rewind
        history = RewindHistory(capacity: rewinder == nil ? 1 : bufferFrames + periodFrames, channelCount: format.channelCount)
        rewindMargin = max(1, Int((format.sampleRate * 0.001).rounded(.up)))
        waitMilliseconds = Int32(max(10, (2 * format.seconds(forFrames: periodFrames) * 1000).rounded(.up)))
    }

    func run(on thread: RenderThread) {
        let channels = format.channelCount
        let samples = periodFrames * channels
        let floats = UnsafeMutablePointer<Float>.allocate(capacity: samples)
        floats.initialize(repeating: 0, count: samples)
        // Room for a rewind's rewrite as 16-bit integers too.
        let int16s = UnsafeMutablePointer<Int16>.allocate(capacity: sampleType == .int16 ? history.capacity * channels : 1)
        defer {
            floats.deallocate()
            int16s.deallocate()
        }
        let frameBytes = channels * sampleType.byteWidthForALSA
        let nanosecondsPerFrame = 1e9 / format.sampleRate
        let handle = pcm.handle
        var sampleTime: Int64 = 0

        /// Writes `frames` Float32 frames whole (converted first when the device takes
        /// integers). Returns false when the device is lost or the thread is told to stop.
        func write(_ source: UnsafePointer<Float>, frames: Int) -> Bool {
            let output: UnsafeRawPointer
            if sampleType == .int16 {
                Self.convert(source, to: int16s, count: frames * channels)
                output = UnsafeRawPointer(int16s)
            } else {
                output = UnsafeRawPointer(source)
            }
            var written = 0
            while written < frames {
                let result = snd_pcm_writei(handle, output + written * frameBytes, snd_pcm_uframes_t(frames - written))
                if result >= 0 {
                    written += result
                } else {
                    guard recover(ALSAStatus(Int32(truncatingIfNeeded: result)), thread: thread) else { return false }
                    if thread.shouldStop { return false }
                }
            }
            return true
        }

        /// Moves the device's write position back over what it allows (`snd_pcm_rewindable`,
        /// less the margin), has the renderer add what just started into those frames, and
        /// writes them again; what the hardware has taken is never touched.
        func rewindNow() -> Bool {
            guard let rewinder else {
                rewind.record(rewound: false)
                return true
            }
            let rewindable = Int(snd_pcm_rewindable(handle)) - rewindMargin
            let wanted = min(rewindable, Int(history.end - history.start))
            guard wanted > 0 else {
                rewind.decline(rewinder)
                return true
            }
            let back = Int(snd_pcm_rewind(handle, snd_pcm_uframes_t(wanted)))
            guard back > 0 else {
                rewind.decline(rewinder)
                return true
            }
            let from = sampleTime - Int64(back)
            var delay: snd_pcm_sframes_t = 0
            if snd_pcm_delay(handle, &delay) < 0 { delay = 0 }
            let now = HostTime.now()
            let mixed = history.remix(from: from, renderer: rewinder) { frame in
                now &+ UInt64((Double(max(0, delay) + Int(frame - from)) * nanosecondsPerFrame).rounded())
            }
            if mixed == nil { rewind.decline(rewinder) } else { rewind.record(rewound: true) }
            // The position moved back: the frames are written again either way.
            if let mixed { return write(mixed.frames, frames: mixed.count) }
            var fine = true
            history.forEachPart(from: from) { part, frames, _ in
                if fine { fine = write(part, frames: frames) }
            }
            return fine
        }

        while !thread.shouldStop {
            if rewind.take(), !rewindNow() { return }
            // Wait until the device has room for a period, so the period is rendered as late as possible.
            let available = snd_pcm_avail_update(handle)
            if available < 0 {
                guard recover(ALSAStatus(Int32(truncatingIfNeeded: available)), thread: thread) else { return }
                continue
            }
            if available < periodFrames {
                let ready = snd_pcm_wait(handle, waitMilliseconds)
                if ready < 0 {
                    guard recover(ALSAStatus(ready), thread: thread) else { return }
                    continue
                }
                if ready == 0 { continue }  // timed out: look at the stop flag, then wait again
            }

            // Frames already queued ahead of this period decide when it will be heard.
            var delay: snd_pcm_sframes_t = 0
            let delayStatus = ALSAStatus(snd_pcm_delay(handle, &delay))
            if delayStatus == .xrun || delayStatus == .suspended {
                guard recover(delayStatus, thread: thread) else { return }
                continue
            }
            if delayStatus.rawValue < 0 {
                // The pulse plugin answers -EIO until its stream has timing data (before the
                // first write): fall back to what the buffer holds. A device that is really
                // gone fails the write below.
                delay = bufferFrames - min(bufferFrames, max(periodFrames, available))
            }
            let heard = HostTime.now() &+ UInt64((Double(max(0, delay)) * nanosecondsPerFrame).rounded())
            renderer.render(into: floats, frames: periodFrames, timestamp: RenderTimestamp(sampleTime: sampleTime, hostTime: heard))
            guard write(floats, frames: periodFrames) else { return }
            if rewinder != nil { history.append(floats, frames: periodFrames) }
            sampleTime += Int64(periodFrames)
            clock.publish(drainTime: heard &+ UInt64((Double(periodFrames) * nanosecondsPerFrame).rounded()))
        }
    }

    /// Recovers from `status` the way `snd_pcm_recover` would, counting underruns; on anything
    /// it cannot recover from, reports the device lost.
    /// - Returns: Whether the loop may go on.
    private func recover(_ status: ALSAStatus, thread: RenderThread) -> Bool {
        var failure = status
        switch status {
        case .tryAgain, .interrupted:
            return true
        case .xrun:
            events.reportXrun()
            let prepared = snd_pcm_prepare(pcm.handle)
            if prepared >= 0 { return true }
            failure = ALSAStatus(prepared)
        case .suspended:
            var resumed = snd_pcm_resume(pcm.handle)
            while resumed == ALSAStatus.tryAgain.rawValue, !thread.shouldStop {
                HostTime.sleep(until: HostTime.now() + 10_000_000)  // the driver is still waking up
                resumed = snd_pcm_resume(pcm.handle)
            }
            if resumed >= 0 { return true }
            resumed = snd_pcm_prepare(pcm.handle)  // devices that cannot resume restart from prepared
            if resumed >= 0 { return true }
            failure = ALSAStatus(resumed)
        default:
            break
        }
        clock.reset()
        events.reportLoss(status: failure.rawValue)
        return false
    }

    /// Float32 to signed 16-bit with clipping; NaN becomes silence.
    private static func convert(_ source: UnsafePointer<Float>, to target: UnsafeMutablePointer<Int16>, count: Int) {
        for i in 0..<count {
            let x = source[i]
            let clipped: Float = x > 1 ? 1 : (x < -1 ? -1 : (x == x ? x : 0))
            target[i] = Int16((clipped * 32767).rounded())
        }
    }
}

extension PCMBuffer.SampleType {
    /// Bytes per sample as written to ALSA.
    var byteWidthForALSA: Int { self == .int16 ? 2 : 4 }
}
