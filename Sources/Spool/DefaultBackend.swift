import Foundation
import SpoolBufferQueue
import SpoolCore

// The one place where the player layer names a back-end: everything else in Spool is written
// against the `PlaybackBackend` seam and is handed its back-end, or takes this one.

extension AudioPlayer {
    private static let shared = Locked<(any PlaybackBackend)?>(nil)

    /// The back-end players use when none is given: the buffer queue on the system's default
    /// output (48 kHz stereo, 1024 × 3 frames), opened on first use and shared. Where no
    /// device can be opened it plays to the null device and prints a one-line notice to the
    /// standard error.
    ///
    /// - Returns: The shared back-end.
    /// - Throws: The device's error when not even the null device opens.
    public static func defaultBackend() throws -> any PlaybackBackend {
        try shared.withLock { shared in
            if let backend = shared { return backend }
            let (backend, notice) = try BufferQueueBackend.open(.default, configuration: OutputConfiguration(sampleRate: 48_000))
            if let notice { FileHandle.standardError.write(Data("spool: \(notice)\n".utf8)) }
            shared = backend
            return backend
        }
    }
}
