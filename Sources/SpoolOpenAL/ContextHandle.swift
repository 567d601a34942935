internal import COpenAL
import SpoolCore

/// Owns an open `ALCdevice` and closes it (`alcCloseDevice`) when it goes.
final class DeviceHandle: @unchecked Sendable {
    // Sendable: the pointer never changes, and OpenAL Soft's ALC calls on a device are
    // thread-safe; Spool makes them through `OpenALDevice`, which serialises its own.
    let pointer: OpaquePointer

    init(pointer: OpaquePointer) {
        self.pointer = pointer
        OpenALLibrary.opened(device: pointer)
    }

    // Once the process's exit has closed OpenAL, the exit closed the device: nothing is left to do.
    deinit {
        let pointer = self.pointer
        _ = try? OpenALLibrary.use {
            alcCloseDevice(pointer)
            OpenALLibrary.closed(device: pointer)
        }
    }
}

/// Owns an `ALCcontext` on a `DeviceHandle` and destroys it (`alcDestroyContext`) when it
/// goes. Sources live in the context, buffers in the device: `OpenALDevice` deletes both
/// before letting go of this.
///
/// **The current-context discipline.** OpenAL's AL calls act on "the current context".
/// `alcMakeContextCurrent` sets one for the whole process, which two devices (say, the
/// sound server and a loopback renderer) or two threads would fight over. OpenAL Soft has
/// `ALC_EXT_thread_local_context`: `alcSetThreadContext` sets the context for the calling
/// thread only, and takes precedence over the process-wide one there. Spool never sets the
/// process-wide context. Every batch of AL calls runs in `withCurrent`, which sets this
/// context on the calling thread, runs the batch, and puts back whatever the thread had
/// before, so a program using OpenAL itself on the same thread is left as it was.
/// `OpenALDevice` holds its lock around each batch, so its bookkeeping and OpenAL's state
/// change together.
final class ContextHandle: @unchecked Sendable {
    // Sendable: the pointers never change; AL calls on the context are made only inside
    // `OpenALDevice`'s lock (see above).
    let device: DeviceHandle
    let pointer: OpaquePointer

    /// Makes a context on `device` with the zero-terminated `attributes`.
    /// - Throws: The ALC error of `alcCreateContext`, naming `deviceName`.
    init(device: DeviceHandle, attributes: [Int32], deviceName: String) throws {
        self.device = device
        let made = try OpenALLibrary.gate.pass {
            attributes.withUnsafeBufferPointer { alcCreateContext(device.pointer, $0.baseAddress) }
        }
        guard let made else {
            let status = OpenALStatus.alc(device.pointer)
            throw AudioError(status.isSuccess ? .libraryFailure : status.errorCode,
                             "\(deviceName): alcCreateContext failed: \(status.name)", underlying: status.libraryStatus)
        }
        pointer = made
        OpenALLibrary.opened(context: made)
    }

    // Once the process's exit has closed OpenAL, the exit destroyed the context.
    deinit {
        let pointer = self.pointer
        OpenALLibrary.gate.ifOpen {
            if alcGetThreadContext() == pointer { alcSetThreadContext(nil) }
            alcDestroyContext(pointer)
            OpenALLibrary.closed(context: pointer)
        }
    }

    /// Runs `body` with this context current on the calling thread, then restores the
    /// thread's previous context. Pending AL errors of the context are cleared first, so
    /// each `OpenALStatus.al()` in `body` reports what `body` did.
    /// - Throws: `.invalidState` once the process's exit has closed OpenAL; what `body` throws.
    func withCurrent<R>(_ body: () throws -> R) throws -> R {
        try OpenALLibrary.gate.pass {
            let previous = alcGetThreadContext()
            if previous != pointer { alcSetThreadContext(pointer) }
            defer { if previous != pointer { alcSetThreadContext(previous) } }
            _ = alGetError()
            return try body()
        }
    }
}
