internal import COpenAL
import Foundation
import SpoolCore
import SpoolResampling

/// The streaming source's queue work, done in device batches with the voice's lock held:
/// what the pump does at each pass, and what `enqueue` and `start` do at once.
extension OpenALStreamingSource {
    // MARK: SourceOwner

    var scheduledHostTime: UInt64? { locked.withLock { $0.scheduledStart } }

    func service(_ step: ServiceStep, _ deliveries: inout Deliveries) {
        locked.withLock { st in
            guard let source = st.source else { return }
            // Its lead in hand and nothing under way: no need to ask OpenAL anything yet.
            if let rest = st.restUntil, step.clock < rest { return }
            st.restUntil = nil
            if let due = st.scheduledStart, due <= step.heardHostTime {
                st.scheduledStart = nil
            }
            // Before `feed`, which may finish the play: what it reached is told first.
            let played = tellPositions(&st)
            if let fade = st.fade {
                if fade.stopping {
                    if fade.isOver(clock: step.clock) { stopNow(&st, source: source, report: .stopped) }
                } else {
                    finishPauseFade(&st, source: source, force: fade.isOver(clock: step.clock))
                }
            }
            let ahead = try? feed(&st, source: source, mayPad: true)
            if st.parameters.advance(clock: step.clock, lookahead: device.updateNanoseconds) {
                st.parameters.applyGain(to: source)
            }
            st.restUntil = restingUntil(st, clock: step.clock, ahead: ahead ?? nil, played: played)
        }
        if outbox.withLock({ !$0.calls.isEmpty }) { deliveries.add { [self] in drainOutbox(waiting: false) } }
    }

    func relinquish(reason: AudioError, _ deliveries: inout Deliveries) {
        locked.withLock { st in
            guard let source = st.source else { return }
            alSourceStop(source)
            alSourcei(source, AL_BUFFER, 0)
            st.queued = []
            deleteNames(&st)
            end(&st, reason: reason, report: .ended(reason))
        }
        deliveries.add { [self] in drainOutbox(waiting: false) }
    }

    /// On a device that mixes in real time, a voice playing with its whole lead queued and
    /// nothing else under way (no fade, no scheduled start, no volume ramp, no end to play
    /// out) needs nothing until the mixer has taken a chunk of it, or has reached the frame a
    /// position handler waits for (`played` is where it is now): the device clock then.
    private func restingUntil(_ st: State, clock: Int64, ahead: Int?, played: Int?) -> Int64? {
        guard !device.rendersOnDemand, let ahead, ahead >= leadFrames, st.transport == .playing, st.playingInAL,
              st.fade == nil, st.scheduledStart == nil, st.parameters.ramp == nil, !st.draining else { return nil }
        let frames = ahead - (leadFrames - chunkFrames)
        var seconds = Double(frames) / device.format.sampleRate
        if let next = st.handlers.nextPositionFrame(play: st.play), let played {
            seconds = min(seconds, Double(max(0, next - played)) / (format.sampleRate * Double(st.parameters.pitch)))
        }
        return clock + Int64((seconds * 1e9).rounded(.down))
    }

    /// Puts the calls of the position handlers the mixer has reached in the outbox.
    /// - Returns: Where the mixer is (`position`), when a position handler waits.
    private func tellPositions(_ st: inout State) -> Int? {
        guard st.handlers.nextPositionFrame(play: st.play) != nil else { return nil }
        let played = position(st)
        let reached = st.handlers.takePositionHandlers(reached: played, play: st.play)
        if !reached.isEmpty { outbox.withLock { box in box.calls.append { for handler in reached { handler() } } } }
        return played
    }

    // MARK: Queue work

    /// Unqueues what played, converts more of the source into free OpenAL buffers and queues
    /// them, starts the source when it has audio and should play, and finishes a drained voice
    /// that has played everything. `mayPad`: a service pass, which may play a source too short
    /// for the converter's look-ahead followed by silence rather than let OpenAL run dry (a
    /// control call leaves that to the pass, by which time the end may be marked).
    /// - Returns: The frames queued ahead of the mixer once converted, when it converted.
    @discardableResult
    func feed(_ st: inout State, source: UInt32, mayPad: Bool = false) throws -> Int? {
        reclaim(&st, source: source)
        if st.fade?.stopping == true { return nil }  // what is queued now is about to go
        guard st.transport == .playing else { return nil }
        var ahead: Int? = try convert(&st, source: source, mayPad: mayPad)
        if st.scheduledStart == nil, st.fade == nil, !st.queued.isEmpty {
            if !st.playingInAL {
                play(&st, source: source)
            } else if Self.sourceState(source) == AL_STOPPED {
                // It ran dry between `reclaim` and the queueing: unqueue what played, play the
                // rest. What is ahead now is not what `convert` counted: no rest this pass.
                reclaim(&st, source: source)
                if !st.queued.isEmpty { play(&st, source: source) }
                ahead = nil
            }
        }
        if device.rendersOnDemand, st.draining, st.converterEnded, st.playingInAL, st.fade == nil,
           Self.sourceState(source) == AL_PLAYING {
            st.endsOnRenderedFrame = Int64(device.renderedFrames + framesQueuedAhead(st, source: source))
        }
        if st.draining, st.converterEnded, st.queued.isEmpty, !st.playingInAL, st.scheduledStart == nil {
            st.draining = false
            st.transport = .stopped
            st.playedOutOnRenderedFrame = st.endsOnRenderedFrame
            st.endsOnRenderedFrame = nil
            emit(.playedOut, st)
        }
        return ahead
    }

    /// Where the latest play that played out ended on a device rendered on demand.
    package var playedOutRenderedFrame: Int64? { locked.withLock { $0.playedOutOnRenderedFrame } }

    /// Source frames taken since the start at the frame OpenAL's mixer has reached (see
    /// `framesPlayed`); during a pause's fade on a device Spool renders, at the frame the
    /// glide ends on, where the pause will hold.
    func position(_ st: State) -> Int {
        guard let source = st.source else { return st.playedFrames }
        switch Self.sourceState(source) {
        case AL_PLAYING, AL_PAUSED:
            if device.rendersBySpool, let fade = st.fade, !fade.stopping, let end = fade.glideEnd {
                return Self.sourceFrames(atQueuedFrame: end - st.unqueuedFrames, st)
            }
            var offset: Int32 = 0
            alGetSourcei(source, AL_SAMPLE_OFFSET, &offset)
            return Self.sourceFrames(atQueuedFrame: Int(offset), st)
        case AL_STOPPED where st.playingInAL:
            return st.queued.last?.readAfter ?? st.playedFrames
        default:
            return st.playedFrames
        }
    }

    /// The source frames the converter had taken when it made frame `offset` of the chunks
    /// queued now (counted from the first).
    private static func sourceFrames(atQueuedFrame offset: Int, _ st: State) -> Int {
        var left = offset
        for entry in st.queued {
            if left < entry.frames {
                let share = Double(entry.readAfter - entry.readBefore) * Double(left) / Double(entry.frames)
                return entry.readBefore + Int(share.rounded(.down))
            }
            left -= entry.frames
        }
        return st.queued.last?.readAfter ?? st.playedFrames
    }

    /// Frames queued on the OpenAL source that its mixer has not reached yet.
    private func framesQueuedAhead(_ st: State, source: UInt32) -> Int {
        let total = st.queued.reduce(0) { $0 + $1.frames }
        guard st.playingInAL, total > 0 else { return total }
        var offset: Int32 = 0
        alGetSourcei(source, AL_SAMPLE_OFFSET, &offset)
        return max(0, total - Int(offset))
    }

    /// Converts chunks until `leadFrames` are queued ahead of the mixer, the source runs out,
    /// or the OpenAL buffers do. It converts only what the source can supply without running
    /// dry (the converter reads ahead of what it plays), unless the voice is draining (the
    /// end is known) or OpenAL is about to run dry (then what there is plays, followed by
    /// silence: an underrun).
    /// - Returns: The frames queued ahead of the mixer afterwards.
    private func convert(_ st: inout State, source: UInt32, mayPad: Bool) throws -> Int {
        var ahead = framesQueuedAhead(st, source: source)
        let resampler = lane.resampler
        let q = format.channelCount
        while ahead < leadFrames, !st.converterEnded {
            let rate = st.parameters.pitch
            let available = st.pending.reduce(0) { $0 + $1.frameCount } - st.readOffset
            var frames = chunkFrames
            if !st.draining {
                if resampler.copiesSource(playbackRate: rate) {
                    frames = min(frames, available + max(0, Int(resampler.framesReadAhead)))
                    if frames == 0 { return ahead }
                } else if available < resampler.sourceFramesNeeded(forOutput: frames, playbackRate: rate) {
                    // Too little to convert without reading past it: wait for more, unless OpenAL
                    // would run dry first. Then play what there is, or the converter's tail, with
                    // silence after it.
                    let tailUnplayed = st.sourceRead > 0 && resampler.framesReadAhead > Double(st.paddedFrames)
                    guard mayPad, ahead <= dryFrames, available > 0 || tailUnplayed else { return ahead }
                }
            }
            guard let name = takeName(&st) else { return ahead }
            let readBefore = st.sourceRead
            let made = resampler.render(into: lane.output, frames: frames, playbackRate: rate) { destination, count in
                readSource(&st, into: destination, frames: count)
            }
            if made < frames { st.converterEnded = true }
            guard made > 0 else {
                st.freeNames.append(name)
                return ahead
            }
            do {
                try st.upload.upload(UnsafeBufferPointer(start: lane.output, count: made * q), channels: q,
                                     rate: device.format.sampleRate, into: name,
                                     balance: q == 2 ? st.parameters.pan : 0)
            } catch {
                st.freeNames.append(name)
                throw error
            }
            var queuedName = name
            alSourceQueueBuffers(source, 1, &queuedName)
            try OpenALStatus.al().check("alSourceQueueBuffers")
            st.queued.append(Entry(name: name, frames: made, readBefore: readBefore, readAfter: st.sourceRead))
            ahead += made
        }
        return ahead
    }

    /// The converter's source: the pending buffers in order (each handed back once wholly
    /// read), then, unless the voice is draining, silence.
    private func readSource(_ st: inout State, into destination: UnsafeMutablePointer<Float>, frames: Int) -> Int {
        let q = format.channelCount
        var done = 0
        while done < frames, let first = st.pending.first {
            let n = min(frames - done, first.frameCount - st.readOffset)
            first.withUnsafeSamples { samples in
                guard let base = samples.baseAddress else { return }
                (destination + done * q).update(from: base + st.readOffset * q, count: n * q)
            }
            done += n
            st.readOffset += n
            if st.readOffset == first.frameCount {
                st.pending.removeFirst()
                st.readOffset = 0
                handBack(&st, [first])
            }
        }
        if done > 0 {
            st.sourceRead += done
            st.inUnderrun = false
            st.paddedFrames = 0
        }
        guard done < frames, !st.draining else { return done }
        (destination + done * q).update(repeating: 0, count: (frames - done) * q)
        st.paddedFrames += frames - done
        noteDry(&st)
        return frames
    }

    /// Counts an underrun: the voice had played audio and has none now. Not while draining,
    /// and once per dry spell.
    private func noteDry(_ st: inout State) {
        if st.sourceRead > 0, !st.inUnderrun, !st.draining, st.transport == .playing { st.underruns += 1 }
        st.inUnderrun = true
    }

    /// Unqueues the chunks OpenAL has played. A source Spool set playing that is now
    /// `AL_STOPPED` ran out of audio: everything on it played (OpenAL then reports all its
    /// buffers processed).
    func reclaim(_ st: inout State, source: UInt32) {
        let alState = Self.sourceState(source)
        if st.playingInAL, alState == AL_STOPPED {
            unqueue(&st, source: source, count: st.queued.count)
            st.playingInAL = false
            if st.transport == .playing, st.scheduledStart == nil { noteDry(&st) }
        } else if alState == AL_PLAYING || alState == AL_PAUSED, !st.queued.isEmpty {
            var processed: Int32 = 0
            alGetSourcei(source, AL_BUFFERS_PROCESSED, &processed)
            if processed > 0 { unqueue(&st, source: source, count: Int(processed)) }
        }
        // AL_INITIAL, or stopped by Spool: nothing has played since, and a stopped source
        // would report the buffers queued on it as processed.
    }

    /// Takes the first `count` chunks off the source (`alSourceUnqueueBuffers`), oldest first.
    private func unqueue(_ st: inout State, source: UInt32, count: Int) {
        let count = min(count, st.queued.count)
        guard count > 0 else { return }
        var names = [UInt32](repeating: 0, count: count)
        alSourceUnqueueBuffers(source, Int32(count), &names)
        guard OpenALStatus.al().isSuccess else { return }
        for entry in st.queued.prefix(count) {
            st.playedFrames = entry.readAfter
            st.freeNames.append(entry.name)
            st.unqueuedFrames += entry.frames
        }
        st.queued.removeFirst(count)
    }

    /// A free OpenAL buffer of this source, made on demand up to `maximumQueuedALBuffers`.
    private func takeName(_ st: inout State) -> UInt32? {
        if let name = st.freeNames.popLast() { return name }
        guard st.ownedNames.count < Self.maximumQueuedALBuffers else { return nil }
        var name: UInt32 = 0
        alGenBuffers(1, &name)
        guard OpenALStatus.al().isSuccess else { return nil }
        st.ownedNames.append(name)
        return name
    }

    private func play(_ st: inout State, source: UInt32) {
        alSourcePlay(source)
        st.playingInAL = true
    }

    /// Silences the source (OpenAL glides its gain to 0 over the next mix: 5 ms on a device
    /// Spool renders, one update on a sound server) and notes when the pump may pause or stop it.
    func fadeOut(_ st: inout State, source: UInt32, stopping: Bool) {
        st.parameters.muted = true
        let start = device.glidingOverDeclick { () -> (offset: Int, clock: Int64)? in
            st.parameters.applyGain(to: source)
            return stopping ? nil : Self.offsetAndClock(source)
        }
        var fade = Fade(stopping: stopping, until: device.clockNanoseconds() + device.settleNanoseconds,
                        hostDeadline: device.rendersOnDemand ? nil
                            : HostTime.now() + UInt64(2 * device.settleNanoseconds) + HostTime.nanoseconds(0.05))
        if let start {
            // Read after the change: a mix that began before it did not take it, and the read
            // waits that mix out, so the glide is the next mix after this clock. On a device
            // Spool renders no mix begins in between (`glidingOverDeclick`). On a sound server
            // a mix that began between the change and the read took it and is waited out too:
            // then the glide is already over, and the pause loses that one mix, never plays it
            // twice.
            fade.glideClock = start.clock
            fade.glideEnd = st.unqueuedFrames + start.offset + device.glideFrames
        }
        st.fade = fade
    }

    /// Pauses a source whose pause fade has glided to silence (`alSourcePause`), or, with
    /// `force`, whose fade has run its time. Where the mixer went on
    /// past the glide at gain 0 before this pass, the paused source is moved back to the
    /// glide's end (`AL_SAMPLE_OFFSET`), so that the resume loses none of those frames.
    ///
    /// The glide's end is the offset read in this pass once the clock has moved past the
    /// glide: exact when no further mix came in between. On the devices Spool renders itself
    /// (null, loopback) the glide is the mix of `declickFrames` right after the change, so it
    /// ends that many frames past the offset read at the change, which is exact however late
    /// the pass. On a sound server a mix is one update or more, so only the offset read here
    /// is sure not to land inside the glide (which would play its frames twice).
    func finishPauseFade(_ st: inout State, source: UInt32, force: Bool) {
        guard let fade = st.fade, !fade.stopping else { return }
        if st.playingInAL, Self.sourceState(source) == AL_PLAYING {
            let now = Self.offsetAndClock(source)
            let glided = now.flatMap { now in fade.glideClock.map { now.clock > $0 } } ?? false
            guard glided || force else { return }
            alSourcePause(source)
            if glided, let now {
                var end = st.unqueuedFrames + now.offset
                if device.rendersBySpool, let estimate = fade.glideEnd { end = min(end, estimate) }
                rewindPaused(&st, source: source, toQueuedFrame: end)
            }
        }
        st.fade = nil
        if st.playingInAL { reclaim(&st, source: source) }
        st.playingInAL = false
    }

    /// Moves a paused source back to `frame` (counted as `unqueuedFrames` counts) when its
    /// mixer is past it and it is still queued.
    private func rewindPaused(_ st: inout State, source: UInt32, toQueuedFrame frame: Int) {
        var paused: Int32 = 0
        alGetSourcei(source, AL_SAMPLE_OFFSET, &paused)
        guard OpenALStatus.al().isSuccess else { return }
        let target = frame - st.unqueuedFrames
        guard target >= 0, target < Int(paused), let value = Int32(exactly: target) else { return }
        alSourcei(source, AL_SAMPLE_OFFSET, value)
        _ = alGetError()
    }

    /// The source's offset into its queue in frames and the device clock in nanoseconds, read
    /// together (`AL_SAMPLE_OFFSET_CLOCK_SOFT`, which waits out a mix in progress).
    static func offsetAndClock(_ source: UInt32) -> (offset: Int, clock: Int64)? {
        var values: (Int64, Int64) = (0, 0)
        withUnsafeMutableBytes(of: &values) { raw in
            alGetSourcei64vSOFT(source, AL_SAMPLE_OFFSET_CLOCK_SOFT, raw.baseAddress?.assumingMemoryBound(to: Int64.self))
        }
        guard OpenALStatus.al().isSuccess, values.0 >= 0 else { return nil }
        // The offset comes in 32.32 fixed point.
        return (Int(values.0 >> 32), values.1)
    }

    /// Stops the source now (`alSourceStop`) and drops the converted audio on it; the voice
    /// is stopped, and when `report` is given its finished handlers hear it.
    func stopNow(_ st: inout State, source: UInt32, report: VoiceFinish?) {
        if st.playingInAL || Self.sourceState(source) == AL_PAUSED { reclaim(&st, source: source) }
        alSourceStop(source)
        discardChunks(&st, source: source)
        st.fade = nil
        st.transport = .stopped
        st.draining = false
        st.scheduledStart = nil
        if st.parameters.muted {
            st.parameters.muted = false
            st.parameters.applyGain(to: source)
        }
        if let report { emit(report, st) }
    }

    /// Takes every converted chunk off a source that is not playing.
    func discardChunks(_ st: inout State, source: UInt32) {
        if st.playingInAL { alSourceStop(source) }
        let count = st.queued.count
        if count > 0 {
            var names = [UInt32](repeating: 0, count: count)
            alSourceUnqueueBuffers(source, Int32(count), &names)
            if OpenALStatus.al().isSuccess {
                st.freeNames += st.queued.map(\.name)
            } else {
                // Detached instead, which unqueues everything.
                alSourcei(source, AL_BUFFER, 0)
                _ = alGetError()
                st.freeNames += st.queued.map(\.name)
            }
        }
        st.unqueuedFrames += st.queued.reduce(0) { $0 + $1.frames }
        st.queued = []
        st.playingInAL = false
    }

    /// Deletes the source's OpenAL buffers; they must be off the source already.
    func deleteNames(_ st: inout State) {
        if !st.ownedNames.isEmpty {
            st.ownedNames.withUnsafeBufferPointer { alDeleteBuffers(Int32($0.count), $0.baseAddress) }
        }
        st.ownedNames = []
        st.freeNames = []
        _ = alGetError()
    }

    /// Ends the voice: it holds no source from now on. Hands back what it still held and,
    /// with a `report`, tells the finished handlers.
    func end(_ st: inout State, reason: AudioError, report: VoiceFinish?) {
        handBack(&st, st.pending)
        st.pending = []
        st.readOffset = 0
        st.queued = []
        st.source = nil
        st.ended = reason
        st.transport = .stopped
        st.draining = false
        st.playingInAL = false
        st.scheduledStart = nil
        st.fade = nil
        if let report { emit(report, st) }
    }

    // MARK: Handler calls

    /// Puts the consumed handlers' calls for `buffers` in the outbox, in order.
    func handBack(_ st: inout State, _ buffers: [PCMBuffer]) {
        guard !buffers.isEmpty else { return }
        st.undelivered += buffers.count
        let handlers = st.handlers.consumedHandlers
        let count = buffers.count
        outbox.withLock { box in
            // Weakly: the outbox is the voice's own, and a voice dropped before the next pass
            // must go (and give its source back) rather than wait for the pass in a cycle.
            box.calls.append { [weak self] in
                for buffer in buffers { for handler in handlers { handler(buffer) } }
                self?.locked.withLock { $0.undelivered -= count }
            }
        }
    }

    /// Puts the finished handlers' calls for `finish` in the outbox, after what is there.
    func emit(_ finish: VoiceFinish, _ st: State) {
        let handlers = st.handlers.finishedHandlers
        outbox.withLock { box in box.calls.append { for handler in handlers { handler(finish) } } }
    }

    /// Runs the handler calls due, in order, on this thread, one thread at a time. From inside
    /// a handler it returns at once (the outer run goes on); `waiting` makes a control call
    /// wait for another thread's run to end and then run what is left itself.
    func drainOutbox(waiting: Bool) {
        delivery.deliver(waitingForOthers: waiting) {
            while let call = outbox.withLock({ box -> (@Sendable () -> Void)? in
                box.calls.isEmpty ? nil : box.calls.removeFirst()
            }) {
                call()
            }
        }
    }
}
