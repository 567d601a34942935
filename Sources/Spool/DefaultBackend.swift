import Foundation
import SpoolBufferQueue
import SpoolCore

// The one place where the player layer names a back-end: everything else in Spool is written
// against the `PlaybackBackend` seam and is handed its back-end, or takes this one.

extension AudioPlayer {
    /// The back-end players use when none is given: the shared audio session's output
    /// (`AudioSession.shared.backend()`), the buffer queue on the system's default output
    /// (48 kHz stereo, 1024 × 3 frames unless the session prefers otherwise), opened on first
    /// use and shared. Where no device can be opened it plays to the null device and prints a
    /// one-line notice to the standard error.
    ///
    /// - Returns: The shared back-end.
    /// - Throws: The device's error when not even the null device opens.
    public static func defaultBackend() throws -> any PlaybackBackend {
        try AudioSession.shared.backend()
    }
}

extension AudioSession {
    /// Opens the buffer queue on the system's default output for a session, printing the
    /// fallback's notice.
    static func openOutput(configuration: OutputConfiguration, role: String) throws -> any PlaybackBackend {
        // The stream is made with the session's role, so no policy sees it as anything else.
        let (device, notice) = try OutputDeviceFactory.open(.default, configuration: configuration, role: role)
        if let notice { FileHandle.standardError.write(Data("spool: \(notice)\n".utf8)) }
        return try BufferQueueBackend(device: device)
    }
}
