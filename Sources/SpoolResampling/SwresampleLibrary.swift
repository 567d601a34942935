internal import CSwresample
#if canImport(Glibc)
import Glibc
#endif
import SpoolCore

/// libswresample and the libavutil calls it is driven with, loaded with `dlopen` the first time
/// a libswresample converter is made, not linked.
///
/// Linked, libswresample and libavutil (with what libavutil needs: VA-API, VDPAU, X11 and xcb,
/// OpenCL, Intel's media SDK — 26 libraries in all) were mapped and relocated by every program
/// that uses Spool, about 2 ms of each start, for the converters only the `fast` and `balanced`
/// levels use. The headers still come from the `CSwresample` module, for the types; the
/// functions are looked up here.
struct SwresampleLibrary: @unchecked Sendable {
    // Sendable: only function pointers into libraries that stay loaded, set once.
    typealias AllocateWithOptions = @convention(c) (
        _ context: UnsafeMutablePointer<OpaquePointer?>?, _ outputLayout: UnsafePointer<AVChannelLayout>?,
        _ outputFormat: AVSampleFormat, _ outputRate: CInt, _ inputLayout: UnsafePointer<AVChannelLayout>?,
        _ inputFormat: AVSampleFormat, _ inputRate: CInt, _ logOffset: CInt, _ logContext: UnsafeMutableRawPointer?) -> CInt
    typealias Initialize = @convention(c) (OpaquePointer?) -> CInt
    typealias Free = @convention(c) (UnsafeMutablePointer<OpaquePointer?>?) -> Void
    typealias Convert = @convention(c) (
        _ context: OpaquePointer?, _ output: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?, _ outputCount: CInt,
        _ input: UnsafeMutablePointer<UnsafePointer<UInt8>?>?, _ inputCount: CInt) -> CInt
    typealias DropOutput = @convention(c) (OpaquePointer?, CInt) -> CInt
    typealias DefaultLayout = @convention(c) (UnsafeMutablePointer<AVChannelLayout>?, CInt) -> Void
    typealias ReleaseLayout = @convention(c) (UnsafeMutablePointer<AVChannelLayout>?) -> Void
    typealias SetInteger = @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, Int64, CInt) -> CInt
    typealias SetDouble = @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, Double, CInt) -> CInt
    typealias ErrorText = @convention(c) (CInt, UnsafeMutablePointer<CChar>?, Int) -> CInt

    /// `swr_alloc_set_opts2`, `swr_init`, `swr_free`, `swr_convert`, `swr_drop_output`.
    let allocateWithOptions: AllocateWithOptions
    let initialize: Initialize
    let free: Free
    let convert: Convert
    let dropOutput: DropOutput
    /// libavutil's `av_channel_layout_default`, `av_channel_layout_uninit`, `av_opt_set_int`,
    /// `av_opt_set_double`, `av_strerror`.
    let defaultLayout: DefaultLayout
    let releaseLayout: ReleaseLayout
    let setInteger: SetInteger
    let setDouble: SetDouble
    let errorText: ErrorText

    /// The libraries, loaded once per process; the error says what is missing.
    static let shared: Result<SwresampleLibrary, AudioError> = load()

    private static func load() -> Result<SwresampleLibrary, AudioError> {
        // The sonames of the headers the module is built against.
        let names = ["libswresample.so.\(LIBSWRESAMPLE_VERSION_MAJOR)", "libavutil.so.\(LIBAVUTIL_VERSION_MAJOR)"]
        var handles: [UnsafeMutableRawPointer] = []
        for name in names {
            guard let handle = dlopen(name, RTLD_NOW | RTLD_LOCAL) else {
                let reason = dlerror().map { String(cString: $0) } ?? "not found"
                return .failure(AudioError(.libraryFailure, "cannot load \(name) for the libswresample converters: \(reason)"))
            }
            handles.append(handle)
        }
        func function<T>(_ library: Int, _ name: String, as _: T.Type) -> T? {
            dlsym(handles[library], name).map { unsafeBitCast($0, to: T.self) }
        }
        guard let allocate = function(0, "swr_alloc_set_opts2", as: AllocateWithOptions.self),
              let initialize = function(0, "swr_init", as: Initialize.self),
              let free = function(0, "swr_free", as: Free.self),
              let convert = function(0, "swr_convert", as: Convert.self),
              let drop = function(0, "swr_drop_output", as: DropOutput.self),
              let defaultLayout = function(1, "av_channel_layout_default", as: DefaultLayout.self),
              let releaseLayout = function(1, "av_channel_layout_uninit", as: ReleaseLayout.self),
              let setInteger = function(1, "av_opt_set_int", as: SetInteger.self),
              let setDouble = function(1, "av_opt_set_double", as: SetDouble.self),
              let errorText = function(1, "av_strerror", as: ErrorText.self) else {
            return .failure(AudioError(.libraryFailure, "\(names.joined(separator: " or ")) lacks a function the converters call"))
        }
        return .success(SwresampleLibrary(
            allocateWithOptions: allocate, initialize: initialize, free: free, convert: convert, dropOutput: drop,
            defaultLayout: defaultLayout, releaseLayout: releaseLayout, setInteger: setInteger, setDouble: setDouble,
            errorText: errorText))
    }
}
