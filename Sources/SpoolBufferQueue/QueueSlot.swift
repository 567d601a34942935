import SpoolCore
import SpoolResampling
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
    /// Stop at once, no fade, and hand back everything: the queue is being disposed.
    case dispose
}

/// Why a started queue stopped, as the render side reports it through the completed ring
/// (negative values, so that they never clash with a buffer's identity).
enum QueueStopEvent: Int32 {
    case playedOut = -1, stopped = -2, disposed = -3
}

/// A queue's state as the render thread sees it.
enum QueueRunState: Int {
    case stopped = 0, running, pausing, paused, stopping, draining
}

/// One queue's half that lives with the engine: the rings and descriptors that cross to
/// the render thread, and the render thread's own state for the queue (position, ramps,
/// rate conversion, scratch memory). Everything is allocated when the slot is made; `mix`
/// allocates nothing.
final class QueueSlot: @unchecked Sendable {
    // Sendable: fields under "render side" are touched only by whichever thread renders
    // (the device's render thread, or a caller holding the engine's offline gate); fields
    // that cross threads are atomics, rings, or descriptors handed over through a ring.

    static let maximumBuffers = 512

    let format: AudioFormat
    let deviceFormat: AudioFormat
    let maximumFrames: Int

    // MARK: Crossing threads

    let descriptors: UnsafeMutablePointer<BufferDescriptor>
    /// Enqueued buffer identities, control → render.
    let incoming = SPSCRing(capacity: QueueSlot.maximumBuffers)
    /// Finished buffer identities and stop events (`QueueStopEvent`), in order, render →
    /// callback delivery.
    let completed = SPSCRing(capacity: QueueSlot.maximumBuffers + 64)
    /// For each stop event in `completed`, the number of commands carried out before it:
    /// what tells the control side whether the event belongs to the latest start.
    let eventStamps = SPSCRing(capacity: 64)
    /// Buffers enqueued before the latest `stopImmediately` (control writes it before the
    /// command): that stop hands back those, not the ones enqueued after it.
    let returnBoundary = Atomic<Int>(Int.max)
    /// Commands, control → render.
    let commands = SPSCRing(capacity: 64)
    /// Commands the render side has carried out.
    let commandsDone = Atomic<Int>(0)
    /// The `HostTime` of a start that asked the device to rewind, 0 when none; the render
    /// thread's rewind pass (`mixStarting`) clears it. Until then, for at most
    /// `rewindWaitNanoseconds`, regular renders leave the start to the rewind pass.
    let rewindPending = Atomic<UInt64>(0)
    /// How long a start waits for the device's rewind before it is carried out the usual way,
    /// behind the buffer: a period and 2 ms, the most a device takes to get to the request.
    let rewindWaitNanoseconds: UInt64
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
    /// The device `sampleTime` just after the last frame of the latest play that played out;
    /// −1 from a fresh start until it does.
    let playedOutSampleTime = Atomic<Int64>(-1)
    /// The `framesPlayed` a position observer waits for (`Int.max` for none): once reached,
    /// every period is due for delivery until the control side moves it on.
    let positionFrame = Atomic<Int>(Int.max)
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
    /// Buffers taken from `incoming` so far; `current` was the `currentSequence`-th (from 0).
    private var taken = 0
    private var currentSequence = 0
    /// `stop(immediately: false)` arrived while paused or stopped: the next start plays out.
    private var endMarked = false
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
    /// A pause's fade-out, read and converted when the pause is carried out, so that
    /// `framesPlayed` holds the frame the pause ends on from then on (offline, from the
    /// `pause()` call); the next mixes play these frames before any others.
    private let preparedFade: UnsafeMutablePointer<Float>
    private var preparedFrames = 0
    private var preparedRead = 0
    /// The queue sample times sounding in the first prepared frame and after the last.
    private var preparedHeardTimes: (first: Double, end: Double) = (0, 0)
    /// Reading for `preparedFade`: the frames are heard at the next mix, not now.
    private var preparing = false
    /// The first frame after a start is among the prepared ones: its host time is the next mix's.
    private var firstFramePending = false
    private var pendingStart: UInt64 = 0
    /// Rate conversion and varispeed; a pass-through while the rates match at a playback rate of 1.
    private let resampler: VoiceResampler
    /// The host time, queue sample time and playback rate of this period's first frame: what
    /// puts a frame read ahead of the output on the device's clock.
    private var periodHostTime: UInt64 = 0
    private var periodHeardTime: Double = 0
    private var periodPlaybackRate: Double = 1
    private let scratch: UnsafeMutablePointer<Float>
    private let matrix: UnsafeMutablePointer<Float>
    private let declickFrames: Int

    /// - Parameter periodFrames: The device's period, which bounds how long a start waits for
    ///   the device's rewind.
    init(format: AudioFormat, deviceFormat: AudioFormat, maximumFrames: Int, periodFrames: Int,
         quality: ResamplingQuality = .default) throws {
        self.format = format
        self.deviceFormat = deviceFormat
        self.maximumFrames = maximumFrames
        rewindWaitNanoseconds = HostTime.nanoseconds(Double(periodFrames) / deviceFormat.sampleRate + 0.002)
        descriptors = .allocate(capacity: Self.maximumBuffers)
        descriptors.initialize(repeating: BufferDescriptor(), count: Self.maximumBuffers)
        completedAt = .allocate(capacity: Self.maximumBuffers)
        completedAt.initialize(repeating: 0, count: Self.maximumBuffers)
        let q = format.channelCount, c = deviceFormat.channelCount
        scratch = .allocate(capacity: maximumFrames * q)
        matrix = .allocate(capacity: q * c)
        matrix.initialize(repeating: 0, count: q * c)
        ChannelMatrix.fill(matrix, from: q, to: c)
        declickFrames = VoiceParameters.declickFrames(atRate: deviceFormat.sampleRate)
        preparedFade = .allocate(capacity: declickFrames * q)
        peakBits = (0..<q).map { _ in AtomicCell(Float(-120).bitPattern) }
        averageBits = (0..<q).map { _ in AtomicCell(Float(-120).bitPattern) }
        _ = Self.mixingLoopsReady
        // Converters are made (and libsoxr warmed up) here, or taken from a voice that is gone.
        resampler = try VoiceResamplerPool.shared.take(
            channelCount: q, sourceRate: format.sampleRate, ratio: deviceFormat.sampleRate / format.sampleRate,
            maximumFrames: maximumFrames, declickFrames: declickFrames, quality: quality)
    }

    /// The level it converts at (the one asked for last).
    var quality: ResamplingQuality { resampler.quality }

    /// Moves its conversion to `quality` (an atomic store the render thread takes up).
    func setQuality(_ quality: ResamplingQuality) { resampler.setQuality(quality) }

    deinit {
        // The slot table frees a slot off the render thread, once no render pass can reach it.
        VoiceResamplerPool.shared.give(resampler)
        descriptors.deallocate()
        completedAt.deallocate()
        scratch.deallocate()
        matrix.deallocate()
        preparedFade.deallocate()
    }

    var state: QueueRunState { QueueRunState(rawValue: runState.load(ordering: .acquiring)) ?? .stopped }

    private var playbackRate: Float { Float(bitPattern: rateBits.load(ordering: .relaxed)) }

    // MARK: Commands (render side)

    /// Carries out queued commands. Returns true when buffers were returned (the caller
    /// then wakes callback delivery).
    @discardableResult
    func processCommands() -> Bool {
        var returned = false
        while let raw = commands.pop(), let command = QueueCommand(rawValue: raw) {
            switch command {
            case .start:
                if state == .stopping { returned = finishStop(event: .stopped) || returned }
                switch state {
                case .stopped:
                    firstFrameHostTime.store(0, ordering: .relaxed)
                    timeline = 0
                    renderedTimeline.store(0, ordering: .releasing)
                    playedSinceStart = false
                    inUnderrun = false
                    framesPlayed.store(0, ordering: .relaxed)
                    playedOutSampleTime.store(-1, ordering: .relaxed)
                    dropPreparedFade()
                    resampler.restart(timeline: 0, playbackRate: playbackRate)
                    // A fresh start plays its first frame as is, at the volume and pan set before it.
                    fade = 1
                    fadeDirection = 0
                    snapParameters()
                case .paused, .pausing:
                    // Resuming mid-waveform fades in, from wherever a pause's fade had got to.
                    fadeDirection = 1
                    fadeFramesLeft = max(1, Int((Float(declickFrames) * (1 - (state == .paused ? 0 : fade))).rounded()))
                    if state == .paused { fade = 0 }
                    snapParameters()
                case .running, .draining, .stopping:
                    commandsDone.add(1, ordering: .releasing)
                    continue
                }
                pendingStart = startHostTime.load(ordering: .acquiring)
                setState(endMarked ? .draining : .running)
                endMarked = false
            case .pause:
                if state == .running || state == .draining {
                    endMarked = state == .draining
                    if pendingStart != 0 {
                        // Not yet heard: nothing to fade, and the scheduled start is cancelled.
                        pendingStart = 0
                        setState(.paused)
                    } else {
                        beginFade(to: .pausing)
                        prepareFade(due: &returned)
                    }
                }
            case .stopImmediately:
                endMarked = false
                switch state {
                case .running, .draining, .pausing:
                    if pendingStart != 0 || state == .pausing && fade == 0 {
                        returned = finishStop(event: .stopped) || returned
                    } else {
                        beginFade(to: .stopping)
                    }
                case .paused:
                    returned = finishStop(event: .stopped) || returned
                case .stopped:
                    returned = returnBuffers(upTo: returnBoundary.load(ordering: .acquiring)) || returned
                case .stopping:
                    break
                }
            case .stopWhenDrained:
                if state == .running { setState(.draining) } else if state != .draining { endMarked = true }
            case .reset:
                returned = returnBuffers(upTo: .max) || returned
                dropPreparedFade()
                // What the converters hold goes too: the next buffer starts afresh, now.
                resampler.restart(timeline: timeline, playbackRate: playbackRate)
            case .dispose:
                let started = state != .stopped
                returned = returnBuffers(upTo: .max) || returned
                dropPreparedFade()
                setState(.stopped)
                endMarked = false
                pendingStart = 0
                if started { report(.disposed) }
                returned = true
            }
            commandsDone.add(1, ordering: .releasing)
        }
        return returned
    }

    /// Fade out towards `next`, from the gain a fade in progress had reached.
    private func beginFade(to next: QueueRunState) {
        let from = fadeDirection == 0 ? 1 : fade
        fadeDirection = -1
        fadeFramesLeft = max(1, Int((Float(declickFrames) * from).rounded()))
        setState(next)
    }

    /// Reads and converts what is left of the fade-out just begun (`fadeFramesLeft` frames,
    /// after any prepared ones still unplayed), so the position where it ends is known now.
    private func prepareFade(due: inout Bool) {
        let q = format.channelCount
        let unplayed = preparedFrames - preparedRead
        let first = nextHeardTime
        if unplayed > 0, preparedRead > 0 {
            preparedFade.update(from: preparedFade + preparedRead * q, count: unplayed * q)
        }
        preparedRead = 0
        preparedFrames = unplayed
        preparedHeardTimes = (first, unplayed > 0 ? preparedHeardTimes.end : first)
        let wanted = fadeFramesLeft - unplayed
        guard wanted > 0 else { return }
        let firstUnheard = !playedSinceStart
        preparing = true
        preparedFrames += resampler.render(into: preparedFade + unplayed * q, frames: wanted, playbackRate: playbackRate) {
            destination, frames in readSource(into: destination, frames: frames, due: &due)
        }
        preparing = false
        preparedHeardTimes.end = resampler.heardTime
        if firstUnheard && playedSinceStart { firstFramePending = true }
    }

    private func dropPreparedFade() {
        preparedFrames = 0
        preparedRead = 0
        firstFramePending = false
    }

    /// The queue sample time sounding in the next frame mixed: within the prepared fade while
    /// some of it is left (the converters are past it), else the converters' own.
    private var nextHeardTime: Double {
        guard preparedRead < preparedFrames else { return resampler.heardTime }
        let (first, end) = preparedHeardTimes
        return first + (end - first) * Double(preparedRead) / Double(preparedFrames)
    }

    private func setState(_ next: QueueRunState) {
        runState.store(next.rawValue, ordering: .releasing)
    }

    /// Ends an immediate stop: hands back what was enqueued before it and reports the stop.
    private func finishStop(event: QueueStopEvent) -> Bool {
        _ = returnBuffers(upTo: returnBoundary.load(ordering: .acquiring))
        dropPreparedFade()
        setState(.stopped)
        fade = 1
        fadeDirection = 0
        pendingStart = 0
        report(event)
        return true
    }

    /// Tells the control side that the queue stopped, after the buffers handed back so far.
    private func report(_ event: QueueStopEvent) {
        eventStamps.push(Int32(truncatingIfNeeded: commandsDone.load(ordering: .relaxed)))
        completed.push(event.rawValue)
    }

    /// Takes the next enqueued buffer; during a stop's fade, none enqueued after the stop.
    private func takeIncoming() -> Int32? {
        if state == .stopping, taken >= returnBoundary.load(ordering: .acquiring) { return nil }
        guard let id = incoming.pop() else { return nil }
        currentSequence = taken
        taken += 1
        return id
    }

    /// Hands back the buffer being played and those queued, up to (not including) the
    /// `boundary`-th enqueued. Render side.
    private func returnBuffers(upTo boundary: Int) -> Bool {
        var any = false
        if current >= 0 {
            queuedFrames.subtract(max(0, descriptors[Int(current)].frames - positionInBuffer), ordering: .relaxed)
            completed.push(current)
            current = -1
            any = true
        }
        while taken < boundary, let id = incoming.pop() {
            taken += 1
            queuedFrames.subtract(descriptors[Int(id)].frames, ordering: .relaxed)
            completed.push(id)
            any = true
        }
        positionInBuffer = 0
        return any
    }

    /// Takes the volume and pan as they are now, with no ramp or glide.
    private func snapParameters() {
        let volume = Float(bitPattern: volumeBits.load(ordering: .relaxed))
        gain = volume
        lastVolume = volume
        gainStepsLeft = 0
        let pan = Float(bitPattern: panBits.load(ordering: .relaxed))
        panPosition = pan
        lastPan = pan
        panStepsLeft = 0
        (panLeft, panRight) = panGains(pan)
    }

    // MARK: Mixing (render side)

    /// Adds this queue's next `frames` device frames into `output`. Returns true when a
    /// buffer finished or the queue stopped, so callbacks are due.
    func mix(into output: UnsafeMutablePointer<Float>, frames: Int, timestamp: RenderTimestamp) -> Bool {
        let rewindMark = rewindPending.load(ordering: .acquiring)
        if rewindMark != 0, state == .stopped || state == .paused {
            // A start waiting for the device's rewind pass: left to it, unless it is late.
            guard HostTime.now() >= rewindMark &+ rewindWaitNanoseconds else { return false }
            rewindPending.store(0, ordering: .relaxed)
        }
        return mixRunning(into: output, frames: frames, timestamp: timestamp)
    }

    /// `mix`, once any start waiting for a rewind is done with.
    private func mixRunning(into output: UnsafeMutablePointer<Float>, frames: Int, timestamp: RenderTimestamp) -> Bool {
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
        let playbackRate = self.playbackRate
        periodHostTime = hostAtFirst
        periodHeardTime = nextHeardTime
        periodPlaybackRate = Double(playbackRate)
        published.publish(sampleTime: periodHeardTime, hostTime: hostAtFirst)

        let target = output + offset * deviceFormat.channelCount
        let metering = meteringEnabled.load(ordering: .relaxed)
        var produced = 0
        if !metering && preparedRead == preparedFrames && resampler.canReadInPlace(playbackRate: playbackRate) {
            updateParameters()
            produced = mixInPlace(into: target, frames: count, due: &due)
        } else {
            let q = format.channelCount
            if preparedRead < preparedFrames, count > 0 {
                // A pause's fade, read when the pause was carried out, plays first.
                produced = min(count, preparedFrames - preparedRead)
                scratch.update(from: preparedFade + preparedRead * q, count: produced * q)
                preparedRead += produced
                if firstFramePending {
                    firstFrameHostTime.store(hostAtFirst, ordering: .releasing)
                    firstFramePending = false
                }
            }
            if produced < count {
                produced += resampler.render(into: scratch + produced * q, frames: count - produced,
                                             playbackRate: playbackRate) { destination, frames in
                    readSource(into: destination, frames: frames, due: &due)
                }
            }
            updateParameters()
            if metering { meter(frames: produced) }
            accumulate(from: scratch, into: target, frames: produced)
        }
        // Fewer frames only when a draining queue has played its last: what remains of the
        // period is silence and the queue stops.
        let finished = produced < count && s == .draining

        let fadeState = state
        if fadeDirection == 0, fadeState == .pausing || fadeState == .stopping {
            if fadeState == .stopping {
                due = finishStop(event: .stopped) || due
            } else {
                setState(.paused)
            }
        }
        if finished {
            playedOutSampleTime.store(timestamp.sampleTime + Int64(offset + produced), ordering: .relaxed)
            setState(.stopped)
            report(.playedOut)
            due = true
        }
        renderedTimeline.store(nextHeardTime.bitPattern, ordering: .releasing)
        return due
    }

    /// Rewind pass: when the queue has not been playing and its commands start it, adds its
    /// first `frames` frames into `output` (frames mixed before, not yet heard), fade-in and
    /// scheduled start included; it carries on from there in the next `mix`. A queue already
    /// playing is left alone: its start was carried out by a render before the rewind.
    /// Returns whether anything was added, and whether callbacks are due.
    func mixStarting(into output: UnsafeMutablePointer<Float>, frames: Int, timestamp: RenderTimestamp)
        -> (added: Bool, due: Bool) {
        switch state {
        case .running, .draining, .pausing, .stopping: return (false, false)
        case .stopped, .paused: break
        }
        // In parts of at most `maximumFrames`, what the converters' scratch holds: the device
        // may rewrite more than a period.
        var done = 0, due = false, added = false
        let channels = deviceFormat.channelCount
        while done < frames {
            let n = min(frames - done, maximumFrames)
            let part = RenderTimestamp(sampleTime: timestamp.sampleTime + Int64(done),
                                       hostTime: timestamp.hostTime &+ UInt64((Double(done) / deviceFormat.sampleRate * 1e9).rounded()))
            if mixRunning(into: output + done * channels, frames: n, timestamp: part) { due = true }
            done += n
            let now = state
            guard now == .running || now == .draining else { break }
            added = true
        }
        return (added, due)
    }

    /// Adds `frames` source frames into `output` straight from the queued buffers, with no
    /// copy: the path of a queue at the device's rate and a playback rate of 1. Returns fewer
    /// only when draining and the queue is empty.
    private func mixInPlace(into output: UnsafeMutablePointer<Float>, frames: Int, due: inout Bool) -> Int {
        let c = deviceFormat.channelCount
        var written = 0
        return readSource(frames: frames, due: &due) { segment, n in
            accumulate(from: segment, into: output + written * c, frames: n)
            resampler.recordHistory(segment, frames: n)
            written += n
        }
    }

    /// Copies the next `frames` source frames to `destination`, as `readSource(frames:due:visit:)`
    /// reads them.
    private func readSource(into destination: UnsafeMutablePointer<Float>, frames: Int, due: inout Bool) -> Int {
        let q = format.channelCount
        var done = 0
        return readSource(frames: frames, due: &due) { segment, n in
            let target = destination + done * q
            if let segment { target.update(from: segment, count: n * q) } else { target.update(repeating: 0, count: n * q) }
            done += n
        }
    }

    /// Reads the next `frames` source frames and hands them to `visit` in order, as runs of
    /// queued audio (read in place) or of silence (`nil`): silence where a buffer is scheduled
    /// later, and silence (and an underrun) when the queue ran dry while playing. Returns fewer
    /// only when draining and the queue is empty.
    private func readSource(frames: Int, due: inout Bool, visit: (UnsafePointer<Float>?, Int) -> Void) -> Int {
        let q = format.channelCount
        var done = 0
        while done < frames {
            if current < 0 {
                guard let next = takeIncoming() else {
                    if state == .draining { return done }
                    if playedSinceStart && !inUnderrun && state == .running {
                        inUnderrun = true
                        underruns.add(1, ordering: .relaxed)
                        discontinuity.store(true, ordering: .relaxed)
                    }
                    visit(nil, frames - done)
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
                visit(nil, gap)
                done += gap
                timeline += Double(gap)
                continue
            }
            let n = min(d.frames - positionInBuffer, frames - done)
            if n > 0 {
                if let address = d.address {
                    if !playedSinceStart && !preparing {
                        firstFrameHostTime.store(hostTime(ofSourceTime: timeline), ordering: .releasing)
                    }
                    visit(address + (d.firstFrame + positionInBuffer) * q, n)
                } else {
                    visit(nil, n)
                }
            }
            positionInBuffer += n
            done += n
            timeline += Double(n)
            playedSinceStart = true
            if framesPlayed.add(n, ordering: .relaxed).newValue >= positionFrame.load(ordering: .relaxed) { due = true }
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

    /// When the source frame at queue sample time `time` is heard: exact without conversion,
    /// to the frame with it (the converters read ahead of what they play).
    private func hostTime(ofSourceTime time: Double) -> UInt64 {
        let seconds = max(0, time - periodHeardTime) / format.sampleRate / periodPlaybackRate
        return periodHostTime &+ UInt64(seconds * 1e9)
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

    /// Applies gain, fade and pan, maps channels, and adds `frames` frames of `source` into
    /// the device buffer; `nil` is silence (only the ramps move on).
    private func accumulate(from source: UnsafePointer<Float>?, into output: UnsafeMutablePointer<Float>, frames: Int) {
        let q = format.channelCount, c = deviceFormat.channelCount
        let steady = gainStepsLeft == 0 && panStepsLeft == 0 && fadeDirection == 0
        if steady {
            guard let source else { return }
            if q == 2 && c == 2 {
                let l = gain * fade * panLeft, r = gain * fade * panRight
                if l == 1 && r == 1 {
                    for i in 0..<(frames * 2) { output[i] += source[i] }
                } else {
                    Self.addStereo(source, into: output, frames: frames, left: l, right: r)
                }
                return
            }
            if q == 1 && c == 2 {
                let l = gain * fade * panLeft * matrix[0], r = gain * fade * panRight * matrix[1]
                for i in 0..<frames {
                    output[2 * i] += l * source[i]
                    output[2 * i + 1] += r * source[i]
                }
                return
            }
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
            guard let source else { continue }
            let g = gain * fade
            let frame = source + i * q
            let target = output + i * c
            for oc in 0..<c {
                var sum: Float = 0
                for ic in 0..<q { sum += matrix[oc * q + ic] * frame[ic] }
                let side: Float = oc == 0 ? panLeft : oc == 1 ? panRight : 1
                target[oc] += g * side * sum
            }
        }
    }

    /// Adds `left ×` and `right ×` the channels of `frames` stereo frames into `output`, four
    /// frames at a time with the gains interleaved as the samples are: no shuffles, and the
    /// same products and sums as one sample at a time.
    private static func addStereo(
        _ source: UnsafePointer<Float>, into output: UnsafeMutablePointer<Float>, frames: Int, left: Float, right: Float
    ) {
        let gains = SIMD8<Float>(left, right, left, right, left, right, left, right)
        let from = UnsafeRawPointer(source), to = UnsafeMutableRawPointer(output)
        let stride = MemoryLayout<SIMD8<Float>>.size
        for block in 0..<(frames / 4) {
            let offset = block * stride
            let sum = to.loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self)
                + gains * from.loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self)
            to.storeBytes(of: sum, toByteOffset: offset, as: SIMD8<Float>.self)
        }
        for i in (frames / 4 * 4)..<frames {
            output[2 * i] += left * source[2 * i]
            output[2 * i + 1] += right * source[2 * i + 1]
        }
    }

    /// Runs the mixing loops once on silence, so that what the Swift runtime sets up on first
    /// use (generic metadata for `SIMD8<Float>`, in unoptimised builds) is not left for the
    /// render thread.
    private static let mixingLoopsReady: Bool = {
        let samples = UnsafeMutablePointer<Float>.allocate(capacity: 16)
        samples.initialize(repeating: 0, count: 16)
        addStereo(samples, into: samples + 8, frames: 4, left: 0.5, right: 0.5)
        samples.deallocate()
        return true
    }()

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

