import SpoolCore

extension PCMBuffer {
    /// This audio at another rate and channel layout, converted once, whole: libsoxr's
    /// high-quality converter for the rate, `ChannelMatrix` (the mapping both back-ends mix
    /// with) for the channels. The length is the source's duration at the new rate, rounded to
    /// the nearest frame; the converter is time-aligned, so frame 0 is the source's frame 0.
    ///
    /// - Parameter format: The rate and channel count wanted.
    /// - Returns: This buffer itself when the format is already `format`.
    /// - Throws: `.invalidParameter` for a ratio or channel count the converter cannot take.
    public func converted(to format: AudioFormat) throws -> PCMBuffer {
        if self.format == format { return self }
        // One conversion path: the playlist's, reading this buffer as a decoder to its end.
        let decoder = try ConvertingDecoder(PCMBufferDecoder(self), to: format)
        let channels = format.channelCount
        let frames = decoder.frameCount
        var samples = [Float](repeating: 0, count: frames * channels)
        var written = 0
        try samples.withUnsafeMutableBufferPointer { out in
            while written < frames {
                let n = try decoder.read(into: UnsafeMutableBufferPointer(rebasing: out[(written * channels)...]))
                guard n > 0 else {
                    throw AudioError(.libraryFailure, "the rate converter stopped at output frame \(written) of \(frames)")
                }
                written += n
            }
        }
        return try PCMBuffer(format: format, samples: samples)
    }
}
