internal import COpenAL
import SpoolCore

/// The device's source pool: the policy is described at `OpenALDevice.sourceLimit`.
/// OpenAL Soft gives each device a fixed number of sources (256 unless its `sources` setting
/// says otherwise; 1.19 takes no smaller number from the `ALC_MONO_SOURCES` /
/// `ALC_STEREO_SOURCES` attributes, which only split it), so the limit is Spool's own.
extension OpenALDevice {
    /// Takes a source for `owner`: a free one, a new one, or one stolen by the policy above.
    /// In a batch. The source comes reset: stopped, with no buffer.
    func acquireSource(priority: Int, owner: any SourceOwner, _ s: inout Shared,
                       _ deliveries: inout Deliveries) throws -> UInt32 {
        let source: UInt32
        if let free = s.freeSources.popLast() {
            source = free
        } else if let made = generateSource(&s) {
            source = made
        } else {
            source = try steal(below: priority, &s, &deliveries)
        }
        s.voices[source] = VoiceEntry(owner: owner, priority: priority, sequence: s.nextSequence)
        s.nextSequence += 1
        return source
    }

    /// A new source while under the limit (`alGenSources`); nil when at the limit or when
    /// OpenAL Soft has no more (`AL_OUT_OF_MEMORY`), which then becomes the limit.
    private func generateSource(_ s: inout Shared) -> UInt32? {
        guard s.generatedSources.count < s.sourceLimit else { return nil }
        var source: UInt32 = 0
        alGenSources(1, &source)
        guard OpenALStatus.al().isSuccess else {
            s.sourceLimit = s.generatedSources.count
            return nil
        }
        s.generatedSources.append(source)
        return source
    }

    private func steal(below priority: Int, _ s: inout Shared, _ deliveries: inout Deliveries) throws -> UInt32 {
        let candidates = s.voices.filter { $0.value.priority <= priority && $0.value.owner != nil }
        guard let victim = candidates.min(by: { a, b in
            (a.value.priority, a.value.sequence) < (b.value.priority, b.value.sequence)
        }) else {
            throw AudioError(.invalidState,
                "no OpenAL source left: all \(s.sourceLimit) sources play voices of priority above \(priority)")
        }
        let reason = AudioError(.invalidState,
            "the voice's OpenAL source was taken by a voice of priority \(priority) (this one had \(victim.value.priority))")
        victim.value.owner?.relinquish(reason: reason, &deliveries)
        s.voices[victim.key] = nil
        reset(victim.key)
        return victim.key
    }

    /// Gives `source` back to the pool: in a batch.
    func releaseSource(_ source: UInt32, _ s: inout Shared) {
        guard s.voices.removeValue(forKey: source) != nil else { return }
        reset(source)
        s.freeSources.append(source)
    }

    /// Stops `source` and detaches its buffers (which unqueues them all).
    private func reset(_ source: UInt32) {
        alSourceStop(source)
        alSourcei(source, AL_BUFFER, 0)
        alSourcei(source, AL_LOOPING, AL_FALSE)
        _ = alGetError()
    }
}
