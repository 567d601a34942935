internal import COpenAL
import SpoolCore

/// The streaming source's queue work, done in device batches with the voice's lock held:
/// what the pump does at each pass, and what `enqueue` does at once.
extension OpenALStreamingSource {
    // MARK: SourceOwner

    var scheduledHostTime: UInt64? { locked.withLock { $0.scheduledStart } }

    func service(_ step: ServiceStep, _ deliveries: inout Deliveries) {
        locked.withLock { st in
            guard let source = st.source else { return }
            if let due = st.scheduledStart, due <= step.heardHostTime {
                st.scheduledStart = nil
                if st.transport == .playing { beginPlaying(&st, source: source) }
            }
            if let fade = st.fade, fade.isOver(clock: step.clock) {
                if fade.stopping {
                    stopNow(&st, source: source)
                } else {
                    st.fade = nil
                    if st.playingInAL { reclaim(&st, source: source) }
                    if st.playingInAL {
                        alSourcePause(source)
                        st.playingInAL = false
                    }
                }
            }
            try? feed(&st, source: source)
            if st.parameters.advance(clock: step.clock, lookahead: device.updateNanoseconds) {
                st.parameters.applyGain(to: source)
            }
            if st.draining, st.transport == .playing, st.queued.isEmpty, st.pending.isEmpty, !st.playingInAL,
               st.scheduledStart == nil {
                st.draining = false
                st.starved = false
                st.transport = .stopped
                st.finishDue = true
            }
            collect(&st, into: &deliveries)
        }
    }

    func relinquish(reason: AudioError, _ deliveries: inout Deliveries) {
        locked.withLock { st in
            guard let source = st.source else { return }
            alSourceStop(source)
            alSourcei(source, AL_BUFFER, 0)
            deleteNames(&st)
            let (buffers, handler) = end(&st, reason: reason)
            if let handler { deliveries.add { for buffer in buffers { handler(buffer) } } }
            if let finished = st.onFinished { deliveries.add { finished(.ended(reason)) } }
        }
    }

    // MARK: Queue work

    /// Unqueues what played, copies waiting buffers into free OpenAL buffers and queues them,
    /// and starts the source again when it had run dry.
    func feed(_ st: inout State, source: UInt32) throws {
        reclaim(&st, source: source)
        if st.fade?.stopping == true { return }  // what is queued now is about to be handed back
        let queuedBefore = st.queued.count
        var added = 0
        while !st.pending.isEmpty, let name = takeName(&st) {
            let buffer = st.pending.removeFirst()
            do {
                try st.upload.upload(buffer, into: name, balance: format.channelCount == 2 ? st.parameters.pan : 0)
            } catch {
                st.freeNames.append(name)
                st.pending.insert(buffer, at: 0)
                throw error
            }
            var queuedName = name
            alSourceQueueBuffers(source, 1, &queuedName)
            try OpenALStatus.al().check("alSourceQueueBuffers")
            st.queued.append(Entry(name: name, buffer: buffer))
            added += 1
        }
        guard st.transport == .playing, st.scheduledStart == nil, !st.queued.isEmpty else { return }
        if st.starved {
            play(&st, source: source)
        } else if added > 0, st.playingInAL, Self.sourceState(source) == AL_STOPPED {
            // It ran dry between `reclaim` and the queueing above: what was queued before has
            // played, what was just queued has not. Unqueue the first, then play the rest.
            unqueue(&st, source: source, count: queuedBefore, played: true)
            if !st.draining { st.underruns += 1 }
            play(&st, source: source)
        }
    }

    /// Unqueues the buffers OpenAL has played. A source Spool set playing that is now
    /// `AL_STOPPED` ran out of audio: everything on it played (OpenAL then reports all its
    /// buffers processed), and unless it was playing out a stop that is an underrun.
    func reclaim(_ st: inout State, source: UInt32) {
        let alState = Self.sourceState(source)
        if st.playingInAL, alState == AL_STOPPED {
            unqueue(&st, source: source, count: st.queued.count, played: true)
            st.playingInAL = false
            if st.transport == .playing, st.scheduledStart == nil {
                if !st.draining { st.underruns += 1 }
                st.starved = true
            }
        } else if alState == AL_PLAYING || alState == AL_PAUSED, !st.queued.isEmpty {
            var processed: Int32 = 0
            alGetSourcei(source, AL_BUFFERS_PROCESSED, &processed)
            if processed > 0 { unqueue(&st, source: source, count: Int(processed), played: true) }
        }
        // AL_INITIAL, or stopped by Spool: nothing has played since, and a stopped source
        // would report the buffers queued on it as processed.
    }

    /// Takes the first `count` buffers off the source (`alSourceUnqueueBuffers`), oldest
    /// first, to hand back; `played` counts their frames as played.
    func unqueue(_ st: inout State, source: UInt32, count: Int, played: Bool) {
        let count = min(count, st.queued.count)
        guard count > 0 else { return }
        var names = [UInt32](repeating: 0, count: count)
        alSourceUnqueueBuffers(source, Int32(count), &names)
        guard OpenALStatus.al().isSuccess else { return }
        for entry in st.queued.prefix(count) {
            if played { st.playedFrames += entry.buffer.frameCount }
            st.handBack.append(entry.buffer)
            st.freeNames.append(entry.name)
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

    /// Plays what is queued, or waits for the first buffer.
    func beginPlaying(_ st: inout State, source: UInt32) {
        guard !st.playingInAL else { return }
        if st.queued.isEmpty {
            st.starved = true
        } else {
            play(&st, source: source)
        }
    }

    private func play(_ st: inout State, source: UInt32) {
        alSourcePlay(source)
        st.playingInAL = true
        st.starved = false
    }

    /// Silences the source (OpenAL glides its gain to 0 over the next update) and notes when
    /// the pump may pause or stop it.
    func fadeOut(_ st: inout State, source: UInt32, stopping: Bool) {
        st.parameters.muted = true
        st.parameters.applyGain(to: source)
        st.fade = Fade(stopping: stopping, until: device.clockNanoseconds() + device.settleNanoseconds,
                       hostDeadline: device.rendersOnDemand ? nil
                           : HostTime.now() + UInt64(2 * device.settleNanoseconds) + HostTime.nanoseconds(0.05))
    }

    /// Stops the source now (`alSourceStop`) and takes every buffer off it: those OpenAL
    /// played count as played, the rest are handed back unplayed.
    func stopNow(_ st: inout State, source: UInt32) {
        if st.playingInAL || Self.sourceState(source) == AL_PAUSED { reclaim(&st, source: source) }
        alSourceStop(source)
        unqueue(&st, source: source, count: st.queued.count, played: false)
        st.playingInAL = false
        st.fade = nil
        if st.parameters.muted {
            st.parameters.muted = false
            st.parameters.applyGain(to: source)
        }
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

    /// Ends the voice: it holds no source from now on.
    /// - Returns: Every buffer it still held, oldest first, and the handler to give them to.
    func end(_ st: inout State, reason: AudioError) -> ([PCMBuffer], (@Sendable (PCMBuffer) -> Void)?) {
        let buffers = st.handBack + st.queued.map(\.buffer) + st.pending
        st.handBack = []
        st.queued = []
        st.pending = []
        st.source = nil
        st.ended = reason
        st.transport = .stopped
        st.draining = false
        st.starved = false
        st.playingInAL = false
        st.scheduledStart = nil
        st.fade = nil
        return (buffers, st.onConsumed)
    }

    /// Adds the handler calls now due: consumed buffers in order, then the finished handler.
    private func collect(_ st: inout State, into deliveries: inout Deliveries) {
        if !st.handBack.isEmpty {
            let buffers = st.handBack
            st.handBack = []
            if let handler = st.onConsumed { deliveries.add { for buffer in buffers { handler(buffer) } } }
        }
        if st.finishDue {
            st.finishDue = false
            if let finished = st.onFinished { deliveries.add { finished(.playedOut) } }
        }
    }
}
