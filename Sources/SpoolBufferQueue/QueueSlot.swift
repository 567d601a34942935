import SpoolCore
import Synchronization

/// Where one enqueued buffer's frames are, as the render thread needs them.
struct BufferDescriptor {
    var address: UnsafePointer<Float>?
    /// Frames to play, after trimming.
    var frames = 0
    /// Frames trimmed from the start.
    var firstFrame = 0
    /// Timeline sample time of the first frame to play, or −1 to play right after the
    /// previous buffer.
    var scheduledStart: Double = -1
}

/// Control requests, carried to the render thread in order through a ring.
enum QueueCommand: Int32 {
    case start = 1, pause, stopImmediately, stopWhenDrained, reset
}

/// A queue's state as the render thread sees it.
enum QueueRunState: Int {
    case stopped = 0, running, pausing, paused, stopping, draining
}

/// One queue's half that lives with the engine: the rings and descriptors that cross to
/// the render thread, and the render thread's own state for the queue (position, ramps,
/// rate converter, scratch memory). Everything is allocated when the slot is made; `mix`
/// allocates nothing.
final class QueueSlot: @unchecked Sendable {
    // Sendable: fields under "render side" are touched only by whichever thread renders
    // (the device's render thread, or a caller holding the engine's offline gate); fields
    // that cross threads are atomics, rings, or descriptors handed over through a ring.

    static let maximumBuffers = 512
    /// 5 ms: long enough that a fade or a parameter change does not click, short enough
    /// that pause and stop feel immediate.
    static let declickSeconds = 0.005

    let format: AudioFormat
    let deviceFormat: AudioFormat
    let maximumFrames: Int

    // MARK: Crossing threads

    let descriptors: UnsafeMutablePointer<BufferDescriptor>
    /// Enqueued buffer identities, control → render.
    let incoming = SPSCRing(capacity: QueueSlot.maximumBuffers)
    /// Finished buffer identities, render → callback delivery.
    let completed = SPSCRing(capacity: QueueSlot.maximumBuffers)
    /// Commands, control → render.
    let commands = SPSCRing(capacity: 64)
    /// Commands the render side has carried out.
    let commandsDone = Atomic<Int>(0)
    let startHostTime = Atomic<UInt64>(0)
    let volumeBits = Atomic<UInt32>(Float(1).bitPattern)
    let volumeRampFrames = Atomic<Int>(0)
    let panBits = Atomic<UInt32>(Float(0).bitPattern)
    let rateBits = Atomic<UInt32>(Float(1).bitPattern)
    let meteringEnabled = Atomic<Bool>(false)

    let published = PublishedTime()
    let runState = Atomic<Int>(QueueRunState.stopped.rawValue)
    let underruns = Atomic<Int>(0)
    let discontinuity = Atomic<Bool>(false)
    let framesPlayed = Atomic<Int>(0)
    let queuedFrames = Atomic<Int>(0)
    /// The timeline at the end of the last rendered period (Double bits).
    let renderedTimeline = Atomic<UInt64>(0)
    /// `HostTime` at which the first frame of audio after the latest fresh start is heard; 0
    /// until it has been rendered. What a start-latency measurement reads.
    let firstFrameHostTime = Atomic<UInt64>(0)
    /// `HostTime` at which the render thread finished reading each buffer, by identity.
    let completedAt: UnsafeMutablePointer<UInt64>
    let peakBits: [AtomicCell]
    let averageBits: [AtomicCell]

    // MARK: Render side

    private var current: Int32 = -1
    private var positionInBuffer = 0
    private var timeline: Double = 0
    private var playedSinceStart = false
    private var inUnderrun = false
    private var gain: Float = 1
    private var gainStep: Float = 0
    private var gainStepsLeft = 0
    private var lastVolume: Float = 1
    private var panLeft: Float = 1, panRight: Float = 1
    private var lastPan: Float = .nan
    /// The pan position glides (and the gains follow the pan law frame by frame), so a
    /// mono source keeps constant power all through a move.
    private var panPosition: Float = 0, panStep: Float = 0, panStepsLeft = 0
    /// Fade gain for pause, resume and immediate stop, stepped by a frame counter so it
    /// ends on an exact frame.
    private var fade: Float = 1
    private var fadeDirection = 0
    private var fadeFramesLeft = 0
    private var pendingStart: UInt64 = 0
    private var converter: (any RateConverter)?
    private var converterInput: UnsafeMutablePointer<Float>
    private var converterInputFrames = 0
    private var converterInputOffset = 0
    private var converterEnded = false
    private var requestedRatio: Double = 0
    private var periodHostTime: UInt64 = 0
    private let converterChunk = 256
    private let scratch: UnsafeMutablePointer<Float>
    private let matrix: UnsafeMutablePointer<Float>
    private let declickFrames: Int

    init(format: AudioFormat, deviceFormat: AudioFormat, maximumFrames: Int) throws {
        self.format = format
        self.deviceFormat = deviceFormat
        self.maximumFrames = maximumFrames
        descriptors = .allocate(capacity: Self.maximumBuffers)
        descriptors.initialize(repeating: BufferDescriptor(), count: Self.maximumBuffers)
        completedAt = .allocate(capacity: Self.maximumBuffers)
        completedAt.initialize(repeating: 0, count: Self.maximumBuffers)
        let q = format.channelCount, c = deviceFormat.channelCount
        scratch = .allocate(capacity: maximumFrames * q)
        converterInput = .allocate(capacity: converterChunk * q)
        matrix = .allocate(capacity: q * c)
        matrix.initialize(repeating: 0, count: q * c)
        ChannelMatrix.fill(matrix, from: q, to: c)
        declickFrames = max(1, Int(deviceFormat.sampleRate * Self.declickSeconds))
        peakBits = (0..<q).map { _ in AtomicCell(Float(-120).bitPattern) }
        averageBits = (0..<q).map { _ in AtomicCell(Float(-120).bitPattern) }
        // Converters are made once, here; a playback rate of 1 at equal rates bypasses them.
        requestedRatio = deviceFormat.sampleRate / format.sampleRate
        converter = try makeRateConverter(channelCount: q, ratio: requestedRatio)
    }

    deinit {
        descriptors.deallocate()
        completedAt.deallocate()
        scratch.deallocate()
        converterInput.deallocate()
        matrix.deallocate()
    }

    var state: QueueRunState { QueueRunState(rawValue: runState.load(ordering: .acquiring)) ?? .stopped }

    // MARK: Commands (render side)

    /// Carries out queued commands. Returns true when buffers were returned (the caller
    /// then wakes callback delivery).
    @discardableResult
    func processCommands() -> Bool {
        var returned = false
        while let raw = commands.pop(), let command = QueueCommand(rawValue: raw) {
            switch command {
            case .start:
                let wasPaused = state == .paused || state == .pausing
                if state == .stopped {
                    firstFrameHostTime.store(0, ordering: .relaxed)
                    timeline = 0
                    renderedTimeline.store(0, ordering: .releasing)
                    playedSinceStart = false
                    inUnderrun = false
                    framesPlayed.store(0, ordering: .relaxed)
                }
                pendingStart = startHostTime.load(ordering: .acquiring)
                // Resuming mid-waveform fades in; a fresh start plays its first frame as is.
                if wasPaused {
                    fade = 0
                    fadeDirection = 1
                    fadeFramesLeft = declickFrames
                } else {
                    fade = 1
                    fadeDirection = 0
                }
                setState(.running)
            case .pause:
                if state == .running || state == .draining { beginFade(to: .pausing) }
            case .stopImmediately:
                if state == .running || state == .draining || state == .pausing {
                    beginFade(to: .stopping)
                } else {
                    returned = returnAllBuffers() || returned
                    setState(.stopped)
                }
            case .stopWhenDrained:
                if state == .running { setState(.draining) } else if state != .draining {
                    returned = returnAllBuffers() || returned
                    setState(.stopped)
                }
            case .reset:
                returned = returnAllBuffers() || returned
                converter?.reset()
                converterInputFrames = 0
                converterEnded = false
            }
            commandsDone.add(1, ordering: .releasing)
        }
        return returned
    }

    private func beginFade(to next: QueueRunState) {
        fadeDirection = -1
        fadeFramesLeft = declickFrames
        setState(next)
    }

    private func setState(_ next: QueueRunState) {
        runState.store(next.rawValue, ordering: .releasing)
    }

    /// Hands every queued buffer back. Render side.
    private func returnAllBuffers() -> Bool {
        var any = false
        if current >= 0 {
            completed.push(current)
            current = -1
            any = true
        }
        while let id = incoming.pop() {
            completed.push(id)
            any = true
        }
        queuedFrames.store(0, ordering: .relaxed)
        positionInBuffer = 0
        return any
    }

    // MARK: Mixing (render side)

    /// Adds this queue's next `frames` device frames into `output`. Returns true when a
    /// buffer finished or the queue stopped, so callbacks are due.
    func mix(into output: UnsafeMutablePointer<Float>, frames: Int, timestamp: RenderTimestamp) -> Bool {
        var due = processCommands()
        let s = state
        guard s == .running || s == .draining || s == .pausing || s == .stopping else { return due }
        var offset = 0
        let rate = deviceFormat.sampleRate
        if pendingStart != 0 {
            let periodEnd = timestamp.hostTime &+ UInt64(Double(frames) / rate * 1e9)
            if pendingStart >= periodEnd { return due }
            if pendingStart > timestamp.hostTime {
                offset = min(frames, Int((Double(pendingStart - timestamp.hostTime) * 1e-9 * rate).rounded()))
            }
            pendingStart = 0
        }
        var count = frames - offset
        if s == .pausing || s == .stopping {
            // Only the fade's frames are taken from the source: the position stops where it ends.
            count = fadeDirection < 0 ? min(count, fadeFramesLeft) : 0
        }
        let hostAtFirst = timestamp.hostTime &+ UInt64(Double(offset) / rate * 1e9)
        periodHostTime = hostAtFirst
        published.publish(sampleTime: timeline, hostTime: hostAtFirst)

        let playbackRate = Float(bitPattern: rateBits.load(ordering: .relaxed))
        let produced: Int
        var finished = false
        if format.sampleRate == rate && playbackRate == 1 && converterInputFrames == 0 {
            produced = readSource(into: scratch, frames: count, due: &due)
        } else {
            produced = convert(into: scratch, frames: count, playbackRate: Double(playbackRate), due: &due)
        }
        if produced < count {
            // Drained: what remains of the period is silence and the queue stops.
            finished = s == .draining
        }
        updateParameters()
        if meteringEnabled.load(ordering: .relaxed) { meter(frames: produced) }
        accumulate(into: output + offset * deviceFormat.channelCount, frames: produced)

        let fadeState = state
        if fadeDirection == 0, fadeState == .pausing || fadeState == .stopping {
            if fadeState == .stopping {
                due = returnAllBuffers() || due
                setState(.stopped)
                due = true
            } else {
                setState(.paused)
            }
        }
        if finished {
            setState(.stopped)
            due = true
        }
        renderedTimeline.store(timeline.bitPattern, ordering: .releasing)
        return due
    }

    /// Reads `frames` source frames into `destination`: queued audio, silence where a buffer is
    /// scheduled later, silence (and an underrun) when the queue ran dry while playing.
    /// Returns fewer only when draining and the queue is empty.
    private func readSource(into destination: UnsafeMutablePointer<Float>, frames: Int, due: inout Bool) -> Int {
        let q = format.channelCount
        var done = 0
        while done < frames {
            if current < 0 {
                guard let next = incoming.pop() else {
                    if state == .draining { return done }
                    if playedSinceStart && !inUnderrun {
                        inUnderrun = true
                        underruns.add(1, ordering: .relaxed)
                        discontinuity.store(true, ordering: .relaxed)
                    }
                    (destination + done * q).update(repeating: 0, count: (frames - done) * q)
                    timeline += Double(frames - done)
                    return frames
                }
                current = next
                positionInBuffer = 0
                inUnderrun = false
            }
            let d = descriptors[Int(current)]
            if positionInBuffer == 0, d.scheduledStart > timeline {
                let gap = min(frames - done, Int((d.scheduledStart - timeline).rounded(.up)))
                (destination + done * q).update(repeating: 0, count: gap * q)
                done += gap
                timeline += Double(gap)
                continue
            }
            let n = min(d.frames - positionInBuffer, frames - done)
            if n > 0, let address = d.address {
                (destination + done * q).update(from: address + (d.firstFrame + positionInBuffer) * q, count: n * q)
                if !playedSinceStart {
                    // Source frames to device time: exact without conversion, to the frame with it.
                    let seconds = Double(done) / format.sampleRate
                    firstFrameHostTime.store(periodHostTime &+ UInt64(seconds * 1e9), ordering: .releasing)
                }
            }
            positionInBuffer += n
            done += n
            timeline += Double(n)
            playedSinceStart = true
            framesPlayed.add(n, ordering: .relaxed)
            queuedFrames.subtract(n, ordering: .relaxed)
            if positionInBuffer >= d.frames {
                completedAt[Int(current)] = HostTime.now()
                completed.push(current)
                current = -1
                due = true
            }
        }
        return done
    }

    /// Produces `frames` device-rate frames through the rate converter.
    private func convert(into destination: UnsafeMutablePointer<Float>, frames: Int, playbackRate: Double, due: inout Bool) -> Int {
        guard let converter else { return readSource(into: destination, frames: frames, due: &due) }
        let q = format.channelCount
        let ratio = deviceFormat.sampleRate / format.sampleRate / playbackRate
        if ratio != requestedRatio {
            requestedRatio = ratio
            converter.setRatio(ratio)
        }
        var written = 0
        var stalls = 0
        while written < frames {
            if converterInputFrames == 0, !converterEnded {
                let got = readSource(into: converterInput, frames: converterChunk, due: &due)
                converterInputFrames = got
                converterInputOffset = 0
                if got < converterChunk { converterEnded = state == .draining }
            }
            let result = converter.process(
                input: converterEnded && converterInputFrames == 0 ? nil : UnsafePointer(converterInput + converterInputOffset * q),
                inputFrames: converterInputFrames,
                output: destination + written * q, outputCapacity: frames - written)
            converterInputOffset += result.inputUsed
            converterInputFrames -= result.inputUsed
            written += result.outputWritten
            if result.outputWritten == 0 && result.inputUsed == 0 {
                stalls += 1
                if converterEnded || stalls > 2 { break }
            }
        }
        if written < frames && converterEnded {
            converterEnded = false
            converter.reset()
            return written
        }
        if written < frames { (destination + written * q).update(repeating: 0, count: (frames - written) * q) }
        return frames
    }

    /// Picks up volume and pan changes and turns them into ramps.
    private func updateParameters() {
        let volume = Float(bitPattern: volumeBits.load(ordering: .relaxed))
        if volume != lastVolume {
            lastVolume = volume
            let ramp = max(declickFrames, volumeRampFrames.load(ordering: .relaxed))
            gainStep = (volume - gain) / Float(ramp)
            gainStepsLeft = ramp
        }
        let pan = Float(bitPattern: panBits.load(ordering: .relaxed))
        if pan != lastPan {
            if lastPan.isNaN {
                panPosition = pan
                (panLeft, panRight) = panGains(pan)
            } else {
                panStep = (pan - panPosition) / Float(declickFrames)
                panStepsLeft = declickFrames
            }
            lastPan = pan
        }
    }

    /// Applies gain, fade and pan, maps channels, and adds into the device buffer.
    private func accumulate(into output: UnsafeMutablePointer<Float>, frames: Int) {
        let q = format.channelCount, c = deviceFormat.channelCount
        let steady = gainStepsLeft == 0 && panStepsLeft == 0 && fadeDirection == 0
        if steady && q == 2 && c == 2 {
            let l = gain * fade * panLeft, r = gain * fade * panRight
            if l == 1 && r == 1 {
                for i in 0..<(frames * 2) { output[i] += scratch[i] }
            } else {
                for i in 0..<frames {
                    output[2 * i] += l * scratch[2 * i]
                    output[2 * i + 1] += r * scratch[2 * i + 1]
                }
            }
            return
        }
        for i in 0..<frames {
            if gainStepsLeft > 0 {
                gain += gainStep
                gainStepsLeft -= 1
                if gainStepsLeft == 0 { gain = lastVolume }
            }
            if panStepsLeft > 0 {
                panStepsLeft -= 1
                panPosition = panStepsLeft == 0 ? lastPan : panPosition + panStep
                (panLeft, panRight) = panGains(panPosition)
            }
            if fadeDirection != 0 {
                fadeFramesLeft -= 1
                let done = Float(declickFrames - fadeFramesLeft) / Float(declickFrames)
                fade = fadeDirection > 0 ? done : 1 - done
                if fadeFramesLeft == 0 { fadeDirection = 0 }
            }
            let g = gain * fade
            let source = scratch + i * q
            let target = output + i * c
            for oc in 0..<c {
                var sum: Float = 0
                for ic in 0..<q { sum += matrix[oc * q + ic] * source[ic] }
                let side: Float = oc == 0 ? panLeft : oc == 1 ? panRight : 1
                target[oc] += g * side * sum
            }
        }
    }

    private func panGains(_ pan: Float) -> (left: Float, right: Float) {
        guard deviceFormat.channelCount == 2 else { return (1, 1) }
        return switch format.channelCount {
        case 1: PanLaw.mono(pan)
        case 2: PanLaw.stereo(pan)
        default: (1, 1)
        }
    }

    /// Peak and RMS power of this period per queue channel, in dB full scale.
    private func meter(frames: Int) {
        let q = format.channelCount
        guard frames > 0 else { return }
        for ch in 0..<q {
            var peak: Float = 0, sum: Float = 0
            for i in 0..<frames {
                let v = scratch[i * q + ch] * gain
                peak = max(peak, abs(v))
                sum += v * v
            }
            let average = (sum / Float(frames)).squareRoot()
            peakBits[ch].value.store(Self.decibels(peak).bitPattern, ordering: .relaxed)
            averageBits[ch].value.store(Self.decibels(average).bitPattern, ordering: .relaxed)
        }
    }

    static func decibels(_ amplitude: Float) -> Float {
        amplitude <= 1e-6 ? -120 : 20 * log10(amplitude)
    }
}

#if canImport(Glibc)
import Glibc
#endif

/// One atomic 32-bit value in a class, so that a Swift array can hold several.
final class AtomicCell: Sendable {
    let value: Atomic<UInt32>
    init(_ initial: UInt32) { value = Atomic(initial) }
}

/// One atomic flag in a class, so that a Swift array can hold several.
final class AtomicFlag: Sendable {
    let value = Atomic<Bool>(false)
}
