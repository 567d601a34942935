import SpoolCore

/// A decoder's frames at another rate and channel layout, converted as they are read: what a
/// playlist plays each item through, so that items of any format join into one stream at the
/// output's format. The converter is libsoxr's high-quality one, time-aligned (output frame 0
/// is the source's frame 0); channels map by `ChannelMatrix`, as the back-ends map them. The
/// length is the source's duration at the new rate, rounded to the nearest frame, which is
/// also how `PCMBuffer.converted(to:)` converts a whole buffer.
package final class ConvertingDecoder: AudioDecoder {
    package let format: AudioFormat
    private let inner: any AudioDecoder

    /// The decoder converted.
    package var source: any AudioDecoder { inner }
    private let ratio: Double
    private let entries: [(output: Int, input: Int, gain: Float)]
    /// nil at equal rates: the frames pass through (channels mapped).
    private var converter: (any RateConverter)?
    private var input: [Float]
    private var mapped: [Float]
    private var pending = 0
    private var pendingOffset = 0
    private var innerEnded = false
    package private(set) var position = 0

    /// - Parameters:
    ///   - decoder: The source, at frame 0.
    ///   - format: The rate and channel count wanted.
    /// - Throws: `.invalidParameter` for a ratio or channel count the converter cannot take.
    package init(_ decoder: any AudioDecoder, to format: AudioFormat) throws {
        inner = decoder
        self.format = format
        ratio = format.sampleRate / decoder.format.sampleRate
        entries = ChannelMatrix.entries(from: decoder.format.channelCount, to: format.channelCount)
        converter = ratio == 1 ? nil : try makeRateConverter(.soxrHQ, channelCount: format.channelCount, ratio: ratio)
        input = [Float](repeating: 0, count: 4096 * decoder.format.channelCount)
        mapped = [Float](repeating: 0, count: 4096 * format.channelCount)
    }

    /// The source's format, before conversion.
    package var sourceFormat: AudioFormat { inner.format }
    package var info: AudioFileInfo { inner.info }
    package var warnings: [DecodeWarning] { inner.warnings }
    package var isFrameCountExact: Bool { inner.isFrameCountExact }
    package var frameCount: Int { Int((Double(inner.frameCount) * ratio).rounded()) }

    package func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int {
        let channels = format.channelCount
        let wanted = buffer.count / channels
        guard wanted > 0, let out = buffer.baseAddress else { return 0 }
        // An exact count bounds the output, so its length is the count's whatever the filter's tail.
        let limit = inner.isFrameCountExact ? max(0, frameCount - position) : Int.max
        var written = 0
        var stalls = 0
        let progressive = inner as? any ProgressiveDecoder
        while written < min(wanted, limit) {
            // A progressive source (audio still downloading) gives what it has: no waiting for
            // the rest of the request.
            if pending == 0, !innerEnded, written > 0, let progressive, progressive.wouldWait { break }
            if pending == 0 && !innerEnded { try fill() }
            guard let converter else {
                let n = min(pending, min(wanted, limit) - written)
                if n == 0 { break }
                mapped.withUnsafeBufferPointer { source in
                    (out + written * channels).update(from: source.baseAddress! + pendingOffset * channels, count: n * channels)
                }
                pending -= n
                pendingOffset += n
                written += n
                continue
            }
            let step = mapped.withUnsafeBufferPointer { source in
                converter.process(input: innerEnded && pending == 0 ? nil : source.baseAddress.map { $0 + pendingOffset * channels },
                                  inputFrames: pending, output: out + written * channels,
                                  outputCapacity: min(wanted, limit) - written)
            }
            pending -= step.inputUsed
            pendingOffset += step.inputUsed
            written += step.outputWritten
            if step.inputUsed == 0 && step.outputWritten == 0 {
                stalls += 1
                if innerEnded && pending == 0 || stalls > 2 { break }
            } else {
                stalls = 0
            }
        }
        // The filter may end a frame or two short of the rounded length: silence fills it.
        if written < wanted, innerEnded, pending == 0, limit != .max, written < limit {
            let pad = min(wanted, limit) - written
            (out + written * channels).update(repeating: 0, count: pad * channels)
            written += pad
        }
        position += written
        return written
    }

    /// Reads the next chunk of the source and maps its channels.
    private func fill() throws {
        let sourceChannels = inner.format.channelCount
        let frames = try input.withUnsafeMutableBufferPointer { try inner.read(into: $0) }
        pendingOffset = 0
        pending = frames
        if frames == 0 {
            innerEnded = true
            return
        }
        let channels = format.channelCount
        if sourceChannels == channels {
            mapped.withUnsafeMutableBufferPointer { m in
                for i in 0..<(frames * channels) { m[i] = input[i] }
            }
            return
        }
        for i in 0..<(frames * channels) { mapped[i] = 0 }
        for frame in 0..<frames {
            for entry in entries {
                mapped[frame * channels + entry.output] += input[frame * sourceChannels + entry.input] * entry.gain
            }
        }
    }

    /// Moves to output frame `frame`: the source is sought to the frame that sounds there.
    package func seek(toFrame frame: Int) throws {
        try inner.seek(toFrame: min(inner.frameCount, Int(saturating: (Double(frame) / ratio).rounded())))
        converter = ratio == 1 ? nil : try makeRateConverter(.soxrHQ, channelCount: format.channelCount, ratio: ratio)
        pending = 0
        pendingOffset = 0
        innerEnded = false
        position = frame
    }
}
