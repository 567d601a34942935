import Spool

/// A back-end rendered on demand, for the benchmarks that render offline: the buffer queue on
/// an `OfflineDevice` (`queue`) or the OpenAL back-end on a loopback device (`openal`).
enum OfflineBackend {
    /// Opens `name`'s back-end with `configuration`.
    /// - Returns: The back-end and what renders it.
    static func open(_ name: String, _ configuration: OutputConfiguration) throws -> (any PlaybackBackend, any OfflineRendering) {
        if name == "queue" {
            let device = try OfflineDevice(configuration: configuration)
            return (try BufferQueueBackend(device: device), device)
        }
        let device = try OpenALDevice(.loopback(configuration))
        return (OpenALBackend(device: device), device)
    }
}
