internal import CALSA
import SpoolCore

/// libasound's error reports, routed into Spool's `Diagnostics` rather than standard error
/// (`snd_lib_error_set_handler`): process-wide, so OpenAL Soft's ALSA driver is quiet too.
package enum ALSALog {
    private static let installed: Void = spool_alsa_route_errors()

    /// Installs the route, once; before the first `snd_pcm_open` of the process.
    package static func install() { _ = installed }
}

@_cdecl("spool_alsa_log")
func spoolALSALog(_ file: UnsafePointer<CChar>?, _ line: Int32, _ function: UnsafePointer<CChar>?, _ error: Int32,
                  _ message: UnsafePointer<CChar>?) {
    let text = message.map { String(cString: $0) } ?? ""
    let place = function.map { "\(String(cString: $0)): " } ?? ""
    let reason = error != 0 ? " (\(String(cString: snd_strerror(error))))" : ""
    Diagnostics.report(library: "libasound", place + text + reason)
}
