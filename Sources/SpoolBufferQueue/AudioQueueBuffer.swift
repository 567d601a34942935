import SpoolCore

/// One buffer of an `BufferQueue`: memory the program fills with interleaved Float32
/// frames and hands back with `enqueue`. The corresponding Apple type is `AudioQueueBuffer`
/// (`mAudioData`, `mAudioDataBytesCapacity`, `mAudioDataByteSize`).
///
/// While a buffer is enqueued the render thread reads it: do not write to it until the
/// queue's callback hands it back (the same rule as Audio Queue Services).
public final class AudioQueueBuffer: @unchecked Sendable {
    // Sendable: the sample memory is written by the program only while the buffer is not
    // enqueued, and read by the render thread only while it is; the queue's rings order the
    // hand-overs. `frameCount` follows the same rule.

    /// Frames the buffer can hold.
    public let frameCapacity: Int
    /// The format of its frames (the queue's).
    public let format: AudioFormat
    /// Frames of valid audio, set by the program before `enqueue` (`mAudioDataByteSize`).
    public var frameCount: Int
    /// `HostTime` at which the render thread finished reading the buffer, as its callback
    /// runs (0 for a buffer handed back unplayed by a stop or reset).
    public internal(set) var consumedHostTime: UInt64 = 0

    /// A value of the program's own, carried with the buffer.
    public nonisolated(unsafe) var userData: (any Sendable)?

    /// The decoded audio this buffer stands for, when it was enqueued as a `PCMBuffer`
    /// (its frames are read in place, not copied).
    public private(set) var pcmBuffer: PCMBuffer?

    let identifier: Int32
    let queueIdentifier: ObjectIdentifier
    let storage: UnsafeMutablePointer<Float>?

    init(capacity: Int, format: AudioFormat, identifier: Int32, queue: ObjectIdentifier) {
        frameCapacity = capacity
        self.format = format
        frameCount = 0
        self.identifier = identifier
        queueIdentifier = queue
        storage = .allocate(capacity: max(1, capacity * format.channelCount))
        storage!.initialize(repeating: 0, count: max(1, capacity * format.channelCount))
    }

    init(pcm: PCMBuffer, identifier: Int32, queue: ObjectIdentifier) {
        frameCapacity = pcm.frameCount
        format = pcm.format
        frameCount = pcm.frameCount
        self.identifier = identifier
        queueIdentifier = queue
        storage = nil
        pcmBuffer = pcm
    }

    deinit { storage?.deallocate() }

    /// The buffer's sample memory, `frameCapacity × channelCount` floats, for the program to
    /// fill. Empty for a buffer that wraps a `PCMBuffer`, which is read-only.
    public var data: UnsafeMutableBufferPointer<Float> {
        guard let storage else { return UnsafeMutableBufferPointer(start: nil, count: 0) }
        return UnsafeMutableBufferPointer(start: storage, count: frameCapacity * format.channelCount)
    }

    /// Where the render thread reads the frames from.
    var readAddress: UnsafePointer<Float> {
        if let storage { return UnsafePointer(storage) }
        return pcmBuffer!.unsafeBaseAddress
    }
}
