/// Whether an output device can start new audio below its buffer floor: re-mix the frames it
/// has queued and not yet played, and write them again, instead of making a new sound wait
/// behind them.
public enum RewindSupport: Sendable, Equatable, CustomStringConvertible {
    /// The device rewrites its unplayed frames on request (`OutputDevice.requestRewind()`).
    case available
    /// The device cannot; new audio starts behind what it holds. The text says why.
    case unavailable(String)

    /// Whether the device rewinds.
    public var isAvailable: Bool { self == .available }

    /// `rewinds`, or `does not rewind: <why>`.
    public var description: String {
        switch self {
        case .available: "rewinds"
        case .unavailable(let reason): "does not rewind: \(reason)"
        }
    }
}

/// A renderer that can add sounds that have just started into frames it rendered before and
/// the device has not played yet: what lets a device rewind (`OutputDevice.requestRewind()`).
///
/// Mixing is a sum, so a sound that starts is added to the frames already mixed without
/// rendering again what they hold: the audio already playing carries on unchanged, and the
/// new sound starts within the device's safety margin of the call instead of behind the
/// whole buffer.
public protocol RewindingRenderer: AudioRenderer {
    /// Render thread: adds into `buffer`, which holds `frames` frames already rendered and not
    /// yet played, the sounds that started since the device last asked, from their first frame.
    ///
    /// Called once per rewind, with every frame to rewrite in one piece: the frames from just
    /// past the play head up to the last one rendered. The sounds it adds carry on from the
    /// frame after them in the next `render` call. The same rules as `render` hold: no lock,
    /// no allocation, no I/O, no user code.
    /// - Parameters:
    ///   - buffer: The frames as rendered before, interleaved in the device's format.
    ///   - frames: Frames in `buffer`.
    ///   - timestamp: When the first of them will be heard.
    /// - Returns: Whether anything was added (when not, the device writes nothing again).
    func renderStarts(into buffer: UnsafeMutablePointer<Float>, frames: Int, timestamp: RenderTimestamp) -> Bool

    /// Render thread: the device asked to rewind will not (nothing left to rewrite, or the
    /// server's timing did not come): the sounds waiting for it start in the next `render`,
    /// behind the buffer. The same rules as `render` hold.
    func declineStarts()
}

extension RewindingRenderer {
    /// A renderer that keeps no starts waiting has nothing to release.
    public func declineStarts() {}
}

extension OutputDevice {
    /// Devices do not rewind unless they say so.
    public var rewindSupport: RewindSupport { .unavailable("\(name) keeps no frames to rewrite") }

    /// Devices that do not rewind ignore the request.
    public func requestRewind() {}
}
