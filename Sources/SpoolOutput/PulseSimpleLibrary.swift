internal import CPulseSimple
import SpoolCore
#if canImport(Glibc)
import Glibc
#endif

/// libpulse's "simple" API, loaded with `dlopen` the first time the acoustic check records, not
/// linked.
///
/// Linked, libpulse-simple and what it needs (libpulse and its common library, D-Bus,
/// systemd, X11 and xcb, libgcrypt, three compressors: 17 libraries) were mapped and relocated
/// by every program using Spool — a quarter of the start-up of a `spool decode` — for the one
/// check that records the sound server (`bench latency --acoustic`). The header still comes
/// from the `CPulseSimple` module, for the types; the functions are looked up here.
struct PulseSimpleLibrary: @unchecked Sendable {
    // Sendable: only function pointers into a library that stays loaded, set once.
    typealias New = @convention(c) (
        _ server: UnsafePointer<CChar>?, _ name: UnsafePointer<CChar>?, _ direction: pa_stream_direction_t,
        _ device: UnsafePointer<CChar>?, _ streamName: UnsafePointer<CChar>?, _ spec: UnsafePointer<pa_sample_spec>?,
        _ map: UnsafePointer<pa_channel_map>?, _ attributes: UnsafePointer<pa_buffer_attr>?,
        _ error: UnsafeMutablePointer<Int32>?) -> OpaquePointer?
    typealias Read = @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int, UnsafeMutablePointer<Int32>?) -> Int32
    typealias Latency = @convention(c) (OpaquePointer?, UnsafeMutablePointer<Int32>?) -> pa_usec_t
    typealias Free = @convention(c) (OpaquePointer?) -> Void
    typealias StatusText = @convention(c) (Int32) -> UnsafePointer<CChar>?

    /// `pa_simple_new`, `pa_simple_read`, `pa_simple_get_latency`, `pa_simple_free`.
    let new: New
    let read: Read
    let latency: Latency
    let free: Free
    /// `pa_strerror` (libpulse, which libpulse-simple loads).
    private let statusText: StatusText

    /// The library's text for a status code.
    func text(_ error: Int32) -> String { statusText(error).map { String(cString: $0) } ?? "error \(error)" }

    /// The library, loaded once per process; the error says what is missing.
    static let shared: Result<PulseSimpleLibrary, AudioError> = load()

    private static func load() -> Result<PulseSimpleLibrary, AudioError> {
        // The soname of the libpulse-dev headers the module is built against.
        let soname = "libpulse-simple.so.0"
        guard let handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL) else {
            let reason = dlerror().map { String(cString: $0) } ?? "not found"
            return .failure(AudioError(.deviceUnavailable, "cannot load \(soname) to record the sound server: \(reason)"))
        }
        func function<T>(_ name: String, as _: T.Type) -> T? {
            dlsym(handle, name).map { unsafeBitCast($0, to: T.self) }
        }
        guard let new = function("pa_simple_new", as: New.self), let read = function("pa_simple_read", as: Read.self),
              let latency = function("pa_simple_get_latency", as: Latency.self),
              let free = function("pa_simple_free", as: Free.self),
              let statusText = function("pa_strerror", as: StatusText.self) else {
            return .failure(AudioError(.deviceUnavailable, "\(soname) lacks a function of the simple API"))
        }
        return .success(PulseSimpleLibrary(new: new, read: read, latency: latency, free: free, statusText: statusText))
    }
}
