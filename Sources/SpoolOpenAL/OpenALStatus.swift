internal import COpenAL
import SpoolCore

/// An error code from OpenAL (`alGetError`) or from its context layer ALC (`alcGetError`).
/// Every OpenAL call Spool makes is followed by one of these, and `check(_:)` turns a
/// failure into an `AudioError` carrying the code as a `LibraryStatus`.
struct OpenALStatus: Equatable {
    /// Which of the two error queues the code came from: they share no values.
    enum Layer: Equatable { case al, alc }

    let layer: Layer
    let code: Int32

    /// The pending AL error of the calling thread's current context (`alGetError`), which
    /// also clears it.
    /// None once the process's exit has closed OpenAL.
    static func al() -> OpenALStatus { OpenALStatus(layer: .al, code: (try? OpenALLibrary.gate.pass { alGetError() }) ?? 0) }

    /// The pending ALC error of `device`, or of the library when `device` is nil (`alcGetError`).
    /// None once the process's exit has closed OpenAL.
    static func alc(_ device: OpaquePointer?) -> OpenALStatus {
        OpenALStatus(layer: .alc, code: (try? OpenALLibrary.gate.pass { alcGetError(device) }) ?? 0)
    }

    var isSuccess: Bool { code == 0 }  // AL_NO_ERROR and ALC_NO_ERROR are both 0

    /// The C spelling of the code, for messages.
    var name: String {
        switch (layer, code) {
        case (_, 0): "no error"
        case (.al, AL_INVALID_NAME): "AL_INVALID_NAME"
        case (.al, AL_INVALID_ENUM): "AL_INVALID_ENUM"
        case (.al, AL_INVALID_VALUE): "AL_INVALID_VALUE"
        case (.al, AL_INVALID_OPERATION): "AL_INVALID_OPERATION"
        case (.al, AL_OUT_OF_MEMORY): "AL_OUT_OF_MEMORY"
        case (.alc, ALC_INVALID_DEVICE): "ALC_INVALID_DEVICE"
        case (.alc, ALC_INVALID_CONTEXT): "ALC_INVALID_CONTEXT"
        case (.alc, ALC_INVALID_ENUM): "ALC_INVALID_ENUM"
        case (.alc, ALC_INVALID_VALUE): "ALC_INVALID_VALUE"
        case (.alc, ALC_OUT_OF_MEMORY): "ALC_OUT_OF_MEMORY"
        default: "OpenAL error 0x\(String(code, radix: 16))"
        }
    }

    /// What Spool calls this failure: bad values are the caller's, a bad device is a
    /// missing device, the rest is the library's.
    var errorCode: AudioError.Code {
        switch (layer, code) {
        case (.al, AL_INVALID_VALUE), (.al, AL_INVALID_ENUM), (.alc, ALC_INVALID_VALUE), (.alc, ALC_INVALID_ENUM):
            .invalidParameter
        case (.al, AL_INVALID_OPERATION), (.al, AL_INVALID_NAME), (.alc, ALC_INVALID_CONTEXT):
            .invalidState
        case (.alc, ALC_INVALID_DEVICE):
            .deviceUnavailable
        default:
            .libraryFailure
        }
    }

    /// The code as the underlying cause of an `AudioError`.
    var libraryStatus: LibraryStatus { LibraryStatus(library: "OpenAL Soft", code: code, text: name) }

    /// Throws an `AudioError` naming `action` unless the status is success.
    /// - Parameter action: What was being done, e.g. `alBufferData for a 4096-frame buffer`.
    func check(_ action: @autoclosure () -> String) throws {
        guard !isSuccess else { return }
        throw AudioError(errorCode, "\(action()) failed: \(name)", underlying: libraryStatus)
    }
}
