internal import CPulse
import SpoolCore
#if canImport(Glibc)
import Glibc
#endif

/// libpulse's asynchronous API, loaded with `dlopen` the first time a PulseAudio device is
/// opened, not linked: what `PulseSimpleLibrary` does for the simple API, and for the same
/// reason (linked, libpulse and the 16 libraries it needs are mapped and relocated by every
/// program using Spool, `spool decode` included). The `CPulse` module gives the types and
/// constants; the functions are looked up here, each under its C name.
struct PulseAudioLibrary: @unchecked Sendable {
    // Sendable: only function pointers into a library that stays loaded, set once.
    typealias MainloopNew = @convention(c) () -> OpaquePointer?
    typealias MainloopCall = @convention(c) (OpaquePointer?) -> Void
    typealias MainloopStart = @convention(c) (OpaquePointer?) -> Int32
    typealias MainloopSignal = @convention(c) (OpaquePointer?, Int32) -> Void
    typealias MainloopAPI = @convention(c) (OpaquePointer?) -> UnsafeMutablePointer<pa_mainloop_api>?
    typealias MainloopInThread = @convention(c) (OpaquePointer?) -> Int32
    typealias MainloopSetName = @convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> Void
    typealias APIOnce = @convention(c) (UnsafeMutablePointer<pa_mainloop_api>?,
                                        (@convention(c) (UnsafeMutablePointer<pa_mainloop_api>?, UnsafeMutableRawPointer?) -> Void)?,
                                        UnsafeMutableRawPointer?) -> Void
    typealias ProplistNew = @convention(c) () -> OpaquePointer?
    typealias ProplistSets = @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, UnsafePointer<CChar>?) -> Int32
    typealias ProplistFree = @convention(c) (OpaquePointer?) -> Void
    typealias ContextNew = @convention(c) (UnsafeMutablePointer<pa_mainloop_api>?, UnsafePointer<CChar>?, OpaquePointer?)
        -> OpaquePointer?
    typealias ContextSetStateCallback = @convention(c) (OpaquePointer?, pa_context_notify_cb_t?, UnsafeMutableRawPointer?)
        -> Void
    typealias ContextConnect = @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, pa_context_flags_t,
                                               UnsafePointer<pa_spawn_api>?) -> Int32
    typealias ContextCall = @convention(c) (OpaquePointer?) -> Void
    typealias ContextGetState = @convention(c) (OpaquePointer?) -> pa_context_state_t
    typealias ContextErrno = @convention(c) (OpaquePointer?) -> Int32
    typealias ContextSetSubscribeCallback = @convention(c) (OpaquePointer?, pa_context_subscribe_cb_t?,
                                                            UnsafeMutableRawPointer?) -> Void
    typealias ContextSubscribe = @convention(c) (OpaquePointer?, pa_subscription_mask_t, pa_context_success_cb_t?,
                                                 UnsafeMutableRawPointer?) -> OpaquePointer?
    typealias ContextGetSinkInfoByIndex = @convention(c) (OpaquePointer?, UInt32, pa_sink_info_cb_t?, UnsafeMutableRawPointer?)
        -> OpaquePointer?
    typealias ContextGetSinkInfoList = @convention(c) (OpaquePointer?, pa_sink_info_cb_t?, UnsafeMutableRawPointer?)
        -> OpaquePointer?
    typealias ContextGetServerInfo = @convention(c) (OpaquePointer?, pa_server_info_cb_t?, UnsafeMutableRawPointer?)
        -> OpaquePointer?
    typealias StatusText = @convention(c) (Int32) -> UnsafePointer<CChar>?
    typealias StreamNew = @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, UnsafePointer<pa_sample_spec>?,
                                          UnsafePointer<pa_channel_map>?, OpaquePointer?) -> OpaquePointer?
    typealias StreamSetNotify = @convention(c) (OpaquePointer?, pa_stream_notify_cb_t?, UnsafeMutableRawPointer?) -> Void
    typealias StreamSetRequest = @convention(c) (OpaquePointer?, pa_stream_request_cb_t?, UnsafeMutableRawPointer?) -> Void
    typealias StreamSetEvent = @convention(c) (OpaquePointer?, pa_stream_event_cb_t?, UnsafeMutableRawPointer?) -> Void
    typealias StreamConnectPlayback = @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, UnsafePointer<pa_buffer_attr>?,
                                                      pa_stream_flags_t, UnsafePointer<pa_cvolume>?, OpaquePointer?) -> Int32
    typealias StreamStatus = @convention(c) (OpaquePointer?) -> Int32
    typealias StreamCall = @convention(c) (OpaquePointer?) -> Void
    typealias StreamGetState = @convention(c) (OpaquePointer?) -> pa_stream_state_t
    typealias StreamGetBufferAttributes = @convention(c) (OpaquePointer?) -> UnsafePointer<pa_buffer_attr>?
    typealias StreamBeginWrite = @convention(c) (OpaquePointer?, UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
                                                 UnsafeMutablePointer<Int>?) -> Int32
    typealias StreamWrite = @convention(c) (OpaquePointer?, UnsafeRawPointer?, Int, pa_free_cb_t?, Int64, pa_seek_mode_t)
        -> Int32
    typealias StreamWritableSize = @convention(c) (OpaquePointer?) -> Int
    typealias StreamGetLatency = @convention(c) (OpaquePointer?, UnsafeMutablePointer<pa_usec_t>?, UnsafeMutablePointer<Int32>?)
        -> Int32
    typealias StreamCork = @convention(c) (OpaquePointer?, Int32, pa_stream_success_cb_t?, UnsafeMutableRawPointer?)
        -> OpaquePointer?
    typealias StreamOperation = @convention(c) (OpaquePointer?, pa_stream_success_cb_t?, UnsafeMutableRawPointer?) -> OpaquePointer?
    typealias StreamProplistUpdate = @convention(c) (OpaquePointer?, pa_update_mode_t, OpaquePointer?, pa_stream_success_cb_t?,
                                                     UnsafeMutableRawPointer?) -> OpaquePointer?
    typealias StreamGetIndex = @convention(c) (OpaquePointer?) -> UInt32
    typealias StreamGetTimingInfo = @convention(c) (OpaquePointer?) -> UnsafePointer<pa_timing_info>?
    typealias OperationUnref = @convention(c) (OpaquePointer?) -> Void
    typealias OperationGetState = @convention(c) (OpaquePointer?) -> pa_operation_state_t
    typealias ChannelMapInit = @convention(c) (UnsafeMutablePointer<pa_channel_map>?, UInt32, pa_channel_map_def_t)
        -> UnsafeMutablePointer<pa_channel_map>?

    /// `pa_threaded_mainloop_new`, `_free`, `_start`, `_stop`, `_lock`, `_unlock`, `_wait`,
    /// `_signal`, `_get_api`, `_in_thread`, `_set_name`.
    let mainloopNew: MainloopNew
    let mainloopFree: MainloopCall
    let mainloopStart: MainloopStart
    let mainloopStop: MainloopCall
    let mainloopLock: MainloopCall
    let mainloopUnlock: MainloopCall
    let mainloopWait: MainloopCall
    let mainloopSignal: MainloopSignal
    let mainloopAPI: MainloopAPI
    let mainloopInThread: MainloopInThread
    let mainloopSetName: MainloopSetName
    /// `pa_mainloop_api_once`: runs a function once on the main loop's thread.
    let apiOnce: APIOnce
    /// `pa_proplist_new`, `pa_proplist_sets`, `pa_proplist_free`.
    let proplistNew: ProplistNew
    let proplistSets: ProplistSets
    let proplistFree: ProplistFree
    /// `pa_context_new_with_proplist`, `_set_state_callback`, `_connect`, `_disconnect`,
    /// `_unref`, `_get_state`, `_errno`.
    let contextNew: ContextNew
    let contextSetStateCallback: ContextSetStateCallback
    let contextConnect: ContextConnect
    let contextDisconnect: ContextCall
    let contextUnref: ContextCall
    let contextGetState: ContextGetState
    let contextErrno: ContextErrno
    /// `pa_context_set_subscribe_callback`, `pa_context_subscribe`,
    /// `pa_context_get_sink_info_by_index`, `_get_sink_info_list`, `_get_server_info`.
    let contextSetSubscribeCallback: ContextSetSubscribeCallback
    let contextSubscribe: ContextSubscribe
    let contextGetSinkInfoByIndex: ContextGetSinkInfoByIndex
    let contextGetSinkInfoList: ContextGetSinkInfoList
    let contextGetServerInfo: ContextGetServerInfo
    /// `pa_stream_new_with_proplist`, `_set_state_callback`, `_set_write_callback`,
    /// `_set_underflow_callback`, `_connect_playback`, `_disconnect`, `_unref`, `_get_state`,
    /// `_get_buffer_attr`, `_begin_write`, `_cancel_write`, `_write`, `_writable_size`,
    /// `_get_latency`, `_cork`, `_flush`, `_get_index`, `_update_timing_info`, `_get_timing_info`,
    /// `_set_event_callback`.
    let streamNew: StreamNew
    let streamSetStateCallback: StreamSetNotify
    let streamSetWriteCallback: StreamSetRequest
    let streamSetUnderflowCallback: StreamSetNotify
    let streamSetEventCallback: StreamSetEvent
    let streamConnectPlayback: StreamConnectPlayback
    let streamDisconnect: StreamStatus
    let streamUnref: StreamCall
    let streamGetState: StreamGetState
    let streamGetBufferAttributes: StreamGetBufferAttributes
    let streamBeginWrite: StreamBeginWrite
    let streamCancelWrite: StreamStatus
    let streamWrite: StreamWrite
    let streamWritableSize: StreamWritableSize
    let streamGetLatency: StreamGetLatency
    let streamCork: StreamCork
    let streamFlush: StreamOperation
    let streamGetIndex: StreamGetIndex
    /// `pa_stream_proplist_update`.
    let streamProplistUpdate: StreamProplistUpdate
    let streamUpdateTimingInfo: StreamOperation
    let streamGetTimingInfo: StreamGetTimingInfo
    /// `pa_operation_unref`, `pa_operation_cancel`, `pa_operation_get_state`.
    let operationUnref: OperationUnref
    let operationCancel: OperationUnref
    let operationGetState: OperationGetState
    /// `pa_channel_map_init_auto`.
    let channelMapInit: ChannelMapInit
    /// `pa_strerror`.
    private let statusText: StatusText

    /// libpulse's text for an error code (`pa_strerror`).
    func text(_ error: Int32) -> String { statusText(error).map { String(cString: $0) } ?? "error \(error)" }

    /// The error code as the cause of an `AudioError`.
    func status(_ error: Int32) -> LibraryStatus { LibraryStatus(library: "libpulse", code: error, text: text(error)) }

    /// The library, loaded once per process; the error says what is missing.
    static let shared: Result<PulseAudioLibrary, AudioError> = load()

    private static func load() -> Result<PulseAudioLibrary, AudioError> {
        // The soname of the libpulse-dev headers the module is built against.
        let soname = "libpulse.so.0"
        guard let handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL) else {
            let reason = dlerror().map { String(cString: $0) } ?? "not found"
            return .failure(AudioError(.deviceUnavailable, "pulse: cannot load \(soname): \(reason)"))
        }
        struct Missing: Error { let name: String }
        func function<T>(_ name: String) throws -> T {
            guard let symbol = dlsym(handle, name) else { throw Missing(name: name) }
            return unsafeBitCast(symbol, to: T.self)
        }
        do {
            return .success(PulseAudioLibrary(
                mainloopNew: try function("pa_threaded_mainloop_new"),
                mainloopFree: try function("pa_threaded_mainloop_free"),
                mainloopStart: try function("pa_threaded_mainloop_start"),
                mainloopStop: try function("pa_threaded_mainloop_stop"),
                mainloopLock: try function("pa_threaded_mainloop_lock"),
                mainloopUnlock: try function("pa_threaded_mainloop_unlock"),
                mainloopWait: try function("pa_threaded_mainloop_wait"),
                mainloopSignal: try function("pa_threaded_mainloop_signal"),
                mainloopAPI: try function("pa_threaded_mainloop_get_api"),
                mainloopInThread: try function("pa_threaded_mainloop_in_thread"),
                mainloopSetName: try function("pa_threaded_mainloop_set_name"),
                apiOnce: try function("pa_mainloop_api_once"),
                proplistNew: try function("pa_proplist_new"),
                proplistSets: try function("pa_proplist_sets"),
                proplistFree: try function("pa_proplist_free"),
                contextNew: try function("pa_context_new_with_proplist"),
                contextSetStateCallback: try function("pa_context_set_state_callback"),
                contextConnect: try function("pa_context_connect"),
                contextDisconnect: try function("pa_context_disconnect"),
                contextUnref: try function("pa_context_unref"),
                contextGetState: try function("pa_context_get_state"),
                contextErrno: try function("pa_context_errno"),
                contextSetSubscribeCallback: try function("pa_context_set_subscribe_callback"),
                contextSubscribe: try function("pa_context_subscribe"),
                contextGetSinkInfoByIndex: try function("pa_context_get_sink_info_by_index"),
                contextGetSinkInfoList: try function("pa_context_get_sink_info_list"),
                contextGetServerInfo: try function("pa_context_get_server_info"),
                streamNew: try function("pa_stream_new_with_proplist"),
                streamSetStateCallback: try function("pa_stream_set_state_callback"),
                streamSetWriteCallback: try function("pa_stream_set_write_callback"),
                streamSetUnderflowCallback: try function("pa_stream_set_underflow_callback"),
                streamSetEventCallback: try function("pa_stream_set_event_callback"),
                streamConnectPlayback: try function("pa_stream_connect_playback"),
                streamDisconnect: try function("pa_stream_disconnect"),
                streamUnref: try function("pa_stream_unref"),
                streamGetState: try function("pa_stream_get_state"),
                streamGetBufferAttributes: try function("pa_stream_get_buffer_attr"),
                streamBeginWrite: try function("pa_stream_begin_write"),
                streamCancelWrite: try function("pa_stream_cancel_write"),
                streamWrite: try function("pa_stream_write"),
                streamWritableSize: try function("pa_stream_writable_size"),
                streamGetLatency: try function("pa_stream_get_latency"),
                streamCork: try function("pa_stream_cork"),
                streamFlush: try function("pa_stream_flush"),
                streamGetIndex: try function("pa_stream_get_index"),
                streamProplistUpdate: try function("pa_stream_proplist_update"),
                streamUpdateTimingInfo: try function("pa_stream_update_timing_info"),
                streamGetTimingInfo: try function("pa_stream_get_timing_info"),
                operationUnref: try function("pa_operation_unref"),
                operationCancel: try function("pa_operation_cancel"),
                operationGetState: try function("pa_operation_get_state"),
                channelMapInit: try function("pa_channel_map_init_auto"),
                statusText: try function("pa_strerror")))
        } catch let missing as Missing {
            return .failure(AudioError(.deviceUnavailable, "pulse: \(soname) lacks \(missing.name)"))
        } catch {
            return .failure(AudioError(.deviceUnavailable, "pulse: cannot load \(soname): \(error)"))
        }
    }
}

extension PulseAudioLibrary {
    /// Makes a threaded main loop whose thread is named `threadName` and starts it.
    /// - Throws: `.deviceUnavailable` (`<owner>: cannot …`) when libpulse cannot.
    func startMainloop(threadName: String, owner: String) throws -> OpaquePointer {
        guard let mainloop = mainloopNew() else {
            throw AudioError(.deviceUnavailable, "\(owner): cannot make a threaded main loop")
        }
        mainloopSetName(mainloop, threadName)
        guard mainloopStart(mainloop) >= 0 else {
            mainloopFree(mainloop)
            throw AudioError(.deviceUnavailable, "\(owner): cannot start the threaded main loop")
        }
        return mainloop
    }

    /// Makes a context on `mainloop` with `application.name` in its proplist
    /// (`pa_context_new_with_proplist`); nil when libpulse refuses.
    func makeContext(on mainloop: OpaquePointer, applicationName: String) -> OpaquePointer? {
        guard let api = mainloopAPI(mainloop) else { return nil }
        let properties = proplistNew()
        defer { proplistFree(properties) }
        _ = proplistSets(properties, PA_PROP_APPLICATION_NAME, applicationName)
        return contextNew(api, applicationName, properties)
    }

    /// Main loop lock, off the main loop's thread: waits, letting the main loop run, until
    /// `done` says stop or `timeout` seconds passed. A 2 ms poll, the lock released in
    /// between: a reply or a state change that no callback signals is seen as soon.
    /// - Returns: Whether `done` returned true before the deadline.
    func wait(on mainloop: OpaquePointer, timeout: Double, until done: () throws -> Bool) rethrows -> Bool {
        let deadline = HostTime.now() + HostTime.nanoseconds(timeout)
        while true {
            if try done() { return true }
            if HostTime.now() >= deadline { return false }
            mainloopUnlock(mainloop)
            usleep(2_000)
            mainloopLock(mainloop)
        }
    }
}
