#if canImport(Glibc)
import Glibc
#endif
internal import CPulse
import SpoolCore

extension PulseAudioStream {
    /// Main loop lock: reports the server's cork requests (`pa_stream_set_event_callback`).
    ///
    /// `module-role-cork` sends `PA_STREAM_EVENT_REQUEST_CORK` when a stream of a trigger
    /// role (`phone` by default) starts on the same sink, muting this one itself, and
    /// `PA_STREAM_EVENT_REQUEST_UNCORK` when the last such stream ends, to a stream that was
    /// corked by then; one that played on is only unmuted. The callback runs on the main
    /// loop's thread, between renders: it compares the event's name and sets atomics, as
    /// the underflow callback does.
    func setEventCallback(_ stream: OpaquePointer) {
        pulse.streamSetEventCallback(stream, { _, event, _, userdata in
            guard let userdata, let event else { return }
            let stream = Unmanaged<PulseAudioStream>.fromOpaque(userdata).takeUnretainedValue()
            if strcmp(event, PA_STREAM_EVENT_REQUEST_CORK) == 0 {
                stream.events.reportCorkRequest(true)
            } else if strcmp(event, PA_STREAM_EVENT_REQUEST_UNCORK) == 0 {
                stream.events.reportCorkRequest(false)
            }
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Follows the server's sinks and default sink for the device's `.routeChanged` events;
    /// returns once the sinks there are now are known, so that only later changes are reported.
    func watchSinks() {
        withMainloopLock {
            if let context { sinkWatcher.attach(context, sync: .baseline) }
        }
        sinkWatcher.synchronize()
    }
}

extension PulseAudioStream {
    /// Main loop lock: replaces the stream's `media.role` on the server, not waiting for the reply.
    func updateRole(_ role: String) {
        guard let stream, !lost.load(ordering: .acquiring) else { return }
        let properties = pulse.proplistNew()
        defer { pulse.proplistFree(properties) }
        _ = pulse.proplistSets(properties, PA_PROP_MEDIA_ROLE, role)
        if let operation = pulse.streamProplistUpdate(stream, PA_UPDATE_REPLACE, properties, nil, nil) {
            pulse.operationUnref(operation)
        }
    }
}
