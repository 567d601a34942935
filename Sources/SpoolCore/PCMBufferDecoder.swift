/// A decoder over PCM already in memory: a program's own buffer or a cached decode. It
/// copies out of the buffer; nothing is decoded.
package final class PCMBufferDecoder: AudioDecoder {
    package let buffer: PCMBuffer
    package private(set) var position = 0

    package init(_ buffer: PCMBuffer, container: String = "memory") {
        self.buffer = buffer
        info = AudioFileInfo(container: container, codec: "PCM 32-bit float")
    }

    package let info: AudioFileInfo
    package var format: AudioFormat { buffer.format }
    package var frameCount: Int { buffer.frameCount }
    package var warnings: [DecodeWarning] { [] }

    package func read(into out: UnsafeMutableBufferPointer<Float>) throws -> Int {
        let channels = format.channelCount
        let n = min(out.count / channels, buffer.frameCount - position)
        guard n > 0, let destination = out.baseAddress else { return 0 }
        buffer.withUnsafeSamples { samples in
            destination.update(from: samples.baseAddress! + position * channels, count: n * channels)
        }
        position += n
        return n
    }

    package func seek(toFrame frame: Int) throws {
        guard (0...buffer.frameCount).contains(frame) else {
            throw AudioError(.outOfRange, "frame \(frame) is outside the buffer's 0...\(buffer.frameCount)")
        }
        position = frame
    }
}
