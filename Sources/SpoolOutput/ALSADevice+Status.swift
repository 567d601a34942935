#if canImport(Glibc)
import Glibc
#endif
internal import CALSA
import SpoolCore

/// A libasound return code. ALSA reports failures as negative `errno` values; the ones the
/// render loop treats specially have names here.
struct ALSAStatus: Equatable, Sendable, CustomStringConvertible {
    /// The raw code, negative on failure.
    let rawValue: Int32

    init(_ rawValue: Int32) { self.rawValue = rawValue }

    /// The device ran dry (playback underrun) and must be prepared again. The C error is `-EPIPE`.
    static let xrun = ALSAStatus(-EPIPE)
    /// The system suspended the device; it must be resumed. The C error is `-ESTRPIPE`.
    static let suspended = ALSAStatus(-ESTRPIPE)
    /// Nothing could be done now; try again. The C error is `-EAGAIN`.
    static let tryAgain = ALSAStatus(-EAGAIN)
    /// A signal interrupted the call. The C error is `-EINTR`.
    static let interrupted = ALSAStatus(-EINTR)
    /// The device was unplugged or its server went away. The C error is `-ENODEV`.
    static let noDevice = ALSAStatus(-ENODEV)
    /// The PCM is in a state that no longer allows the call. The C error is `-EBADFD`.
    static let badState = ALSAStatus(-EBADFD)
    /// The device failed. The C error is `-EIO`.
    static let ioError = ALSAStatus(-EIO)

    /// libasound's text for the code (`snd_strerror`).
    var text: String { String(cString: snd_strerror(rawValue)) }

    var description: String { "\(rawValue) (\(text))" }

    /// The code as the cause of an `AudioError`.
    var libraryStatus: LibraryStatus { LibraryStatus(library: "libasound", code: rawValue, text: text) }
}

/// Turns a libasound return value into a thrown `AudioError` when it is negative.
/// Every configuration call of the ALSA device goes through here.
/// - Parameters:
///   - result: What the call returned.
///   - device: The device name, for the message (`alsa:<device>: …`).
///   - action: What was being done, e.g. `set the period size`.
///   - code: The error code to throw.
/// - Returns: `result` when it is not negative.
/// - Throws: `AudioError` with `code`, the message `alsa:<device>: cannot <action>: <text>` and
///   the `LibraryStatus` as its cause.
@discardableResult
func check<Result: BinaryInteger>(_ result: Result, device: String, _ action: String,
                                  code: AudioError.Code = .deviceUnavailable) throws -> Result {
    guard result < 0 else { return result }
    let status = ALSAStatus(Int32(truncatingIfNeeded: result))
    throw AudioError(code, "alsa:\(device): cannot \(action): \(status.text)", underlying: status.libraryStatus)
}
