import SpoolCore
import SpoolResampling

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
        let mapped = mappingChannels(to: format.channelCount)
        guard mapped.format.sampleRate != format.sampleRate else { return mapped }
        let channels = format.channelCount
        let ratio = format.sampleRate / mapped.format.sampleRate
        let converter = try makeRateConverter(.soxrHQ, channelCount: channels, ratio: ratio)
        let wanted = Int((Double(mapped.frameCount) * ratio).rounded())
        // What the filter holds back comes out once the input has ended (a nil input drains it).
        var out = [Float](repeating: 0, count: (wanted + 4096) * channels)
        var written = 0, consumed = 0
        try mapped.withUnsafeSamples { input in
            try out.withUnsafeMutableBufferPointer { output in
                guard let destination = output.baseAddress else { return }
                var stalls = 0
                while written < wanted {
                    let capacity = min(4096, output.count / channels - written)
                    guard capacity > 0 else { break }
                    let atEnd = consumed >= mapped.frameCount
                    let step = converter.process(
                        input: atEnd ? nil : input.baseAddress.map { $0 + consumed * channels },
                        inputFrames: mapped.frameCount - consumed,
                        output: destination + written * channels, outputCapacity: capacity)
                    consumed += step.inputUsed
                    written += step.outputWritten
                    // The tail is drained when the converter gives nothing more at the end.
                    if step.inputUsed == 0 && step.outputWritten == 0 {
                        stalls += 1
                        if atEnd || stalls > 2 { break }
                    } else {
                        stalls = 0
                    }
                }
                if written < wanted, consumed < mapped.frameCount {
                    throw AudioError(.libraryFailure, "the rate converter stopped at input frame \(consumed) of \(mapped.frameCount)")
                }
            }
        }
        let frames = min(wanted, written)
        var samples = Array(out[0..<(frames * channels)])
        // A filter that ended short leaves silence, never a truncated sound.
        if frames < wanted { samples += [Float](repeating: 0, count: (wanted - frames) * channels) }
        return try PCMBuffer(format: format, samples: samples)
    }

    /// This audio with `channels` channels, by `ChannelMatrix`.
    private func mappingChannels(to channels: Int) -> PCMBuffer {
        let sourceChannels = format.channelCount
        guard sourceChannels != channels,
              let target = try? AudioFormat(sampleRate: format.sampleRate, channelCount: channels) else { return self }
        let entries = ChannelMatrix.entries(from: sourceChannels, to: channels)
        var samples = [Float](repeating: 0, count: frameCount * channels)
        withUnsafeSamples { input in
            for frame in 0..<frameCount {
                for entry in entries {
                    samples[frame * channels + entry.output] += input[frame * sourceChannels + entry.input] * entry.gain
                }
            }
        }
        return (try? PCMBuffer(format: target, samples: samples)) ?? self
    }
}
