internal import COpenAL
import Dispatch
import Foundation
import SpoolCore
import Synchronization

/// Process-wide facts about the OpenAL library: whether it has started (read its
/// configuration), and with which configuration from Spool; the gate every OpenAL call passes,
/// which the process's exit closes; and the devices and contexts still open, which the exit
/// closes first.
///
/// **Exit.** OpenAL Soft 1.19 cleans up in a library destructor, after the `atexit` handlers:
/// it reports the devices left open (`alc_cleanup: 1 device not closed`) and destroys the lock
/// every ALC call takes, so that any ALC call after it, from a thread still running, fails an
/// assertion and aborts (`LockLists: Assertion 'ret == althrd_success' failed`). Spool's exit
/// handler, registered at the library's first use, stops the pump and clock threads, closes
/// the gate (waiting for the calls under way), and then, on the exiting thread, destroys the
/// contexts and closes the devices still open. From then on no OpenAL call is made: every
/// path that would make one reads the closed gate and does nothing (a batch or an open
/// throws `.invalidState`, a render renders silence, a handle's `deinit` frees nothing).
enum OpenALLibrary {
    struct State {
        var started = false
        var applied: OpenALConfiguration?
        var configurationPath: String?
        var exitHandlerRegistered = false
        /// The devices and contexts open, by address: what the exit closes.
        var devices: Set<UInt> = []
        var contexts: Set<UInt> = []
    }

    static let state = Locked(State())

    /// One device call at a time, process-wide (see `use`).
    private static let deviceCalls = Locked(())

    /// What every OpenAL call passes; closed by the process's exit.
    static let gate = CallGate()

    /// Where a device whose last reference went on its own pump or clock thread is closed:
    /// not on that thread, which the device's closing stops.
    static let closer = DispatchQueue(label: "spool.openal.close")

    /// What a call refused by the closed gate throws.
    static var exiting: AudioError { AudioError(.invalidState, "openal: the process is exiting; OpenAL is closed") }

    /// Runs `body`, an OpenAL call that may be the library's first, after marking the
    /// library as started: an `apply()` that comes later knows the configuration is fixed,
    /// and one that came earlier has set the environment before OpenAL Soft reads it. The
    /// first call registers the exit handler.
    ///
    /// The calls that open, list and close devices run one at a time across the process:
    /// OpenAL Soft 1.19's PulseAudio driver frees and rebuilds its device list when devices
    /// are listed, while an `alcOpenDevice` on another thread may be reading a name from it
    /// (AddressSanitizer caught the use after free with two tests opening devices at once).
    /// - Throws: `.invalidState` once the process's exit has closed the library; what `body` throws.
    static func use<R>(_ body: () throws -> R) throws -> R {
        OpenALLog.route()
        let register = state.withLock { s -> Bool in
            s.started = true
            defer { s.exitHandlerRegistered = true }
            return !s.exitHandlerRegistered
        }
        if register { atexit { OpenALLibrary.processExiting() } }
        return try gate.pass { try deviceCalls.withLock { _ in try body() } }
    }

    /// Notes a device or context opened, for the exit to close.
    static func opened(device: OpaquePointer? = nil, context: OpaquePointer? = nil) {
        state.withLock { s in
            if let device { s.devices.insert(UInt(bitPattern: device)) }
            if let context { s.contexts.insert(UInt(bitPattern: context)) }
        }
    }

    /// Notes a device or context closed.
    static func closed(device: OpaquePointer? = nil, context: OpaquePointer? = nil) {
        state.withLock { s in
            if let device { s.devices.remove(UInt(bitPattern: device)) }
            if let context { s.contexts.remove(UInt(bitPattern: context)) }
        }
    }

    /// The exit handler: stops the threads that render and service devices, closes the gate
    /// once the calls under way are done (a second at most), and closes what is still open,
    /// contexts first, on this thread.
    private static func processExiting() {
        ServiceThreads.stopAll(waitingAtMost: 1)
        gate.close(waitingAtMost: 1)
        let (devices, contexts) = state.withLock { s in
            defer { (s.devices, s.contexts) = ([], []) }
            return (s.devices, s.contexts)
        }
        for context in contexts.compactMap(OpaquePointer.init(bitPattern:)) {
            if alcGetThreadContext() == context { alcSetThreadContext(nil) }
            alcDestroyContext(context)
        }
        for device in devices.compactMap(OpaquePointer.init(bitPattern:)) { alcCloseDevice(device) }
    }

    static func apply(_ configuration: OpenALConfiguration) throws {
        try state.withLock { s in
            if s.started {
                if s.applied == configuration { return }
                let inEffect = s.applied.map { "\($0)" } ?? "OpenAL Soft's own defaults and files"
                throw AudioError(.invalidState,
                    "OpenAL Soft already started in this process with \(inEffect) and reads its configuration only once; "
                    + "\(configuration) needs a new process")
            }
            let path = FileManager.default.temporaryDirectory
                .appendingPathComponent("spool-alsoft-\(getpid()).conf").path
            do {
                try configuration.fileContents.write(toFile: path, atomically: true, encoding: .utf8)
            } catch {
                throw AudioError(.writeFailed, "\(path): cannot write the OpenAL configuration", underlying: error)
            }
            setenv("ALSOFT_CONF", path, 1)
            setenv("ALSOFT_DRIVERS", configuration.drivers.joined(separator: ","), 1)
            s.applied = configuration
            s.configurationPath = path
        }
    }
}

/// A gate calls pass while it is open: once closed it lets none through, and its closing waits
/// for those under way. No lock: a counter and a flag, both sequentially consistent, so that a
/// call either sees the gate closed or is counted before the closing reads the count (the
/// render thread passes it too).
final class CallGate: Sendable {
    private let closedFlag = Atomic<Bool>(false)
    private let inFlight = Atomic<Int>(0)

    /// Whether the gate is closed.
    var isClosed: Bool { closedFlag.load(ordering: .sequentiallyConsistent) }

    /// Runs `body` unless the gate is closed; calls may nest.
    /// - Throws: `OpenALLibrary.exiting` when closed; what `body` throws.
    func pass<R>(_ body: () throws -> R) throws -> R {
        inFlight.wrappingAdd(1, ordering: .sequentiallyConsistent)
        defer { inFlight.wrappingSubtract(1, ordering: .sequentiallyConsistent) }
        guard !closedFlag.load(ordering: .sequentiallyConsistent) else { throw OpenALLibrary.exiting }
        return try body()
    }

    /// Runs `body` unless the gate is closed, and then does nothing.
    func ifOpen(_ body: () -> Void) {
        _ = try? pass(body)
    }

    /// Closes the gate and waits up to `seconds` for the calls under way to end (the calling
    /// thread's own, if it is inside one, never do).
    func close(waitingAtMost seconds: Double) {
        closedFlag.store(true, ordering: .sequentiallyConsistent)
        let deadline = HostTime.now() &+ HostTime.nanoseconds(seconds)
        while inFlight.load(ordering: .sequentiallyConsistent) > 0, HostTime.now() < deadline { usleep(100) }
    }
}
