import Foundation

/// Writes Float32 interleaved PCM as a WAV file (`WAVE_FORMAT_IEEE_FLOAT`), streaming: the
/// header's sizes are filled in by `finish()`.
public final class WAVFileWriter {
    /// The format being written.
    public let format: AudioFormat
    /// Frames written so far.
    public private(set) var framesWritten = 0
    private let handle: FileHandle
    private let path: String
    private var finished = false

    /// Creates (or replaces) the file at `path`.
    /// - Throws: `AudioError.Code.writeFailed` when the file cannot be created.
    public init(path: String, format: AudioFormat) throws {
        self.path = path
        self.format = format
        guard FileManager.default.createFile(atPath: path, contents: nil),
              let handle = FileHandle(forWritingAtPath: path) else {
            throw AudioError(.writeFailed, "\(path): cannot create the file")
        }
        self.handle = handle
        try write(Self.header(format: format, frames: 0))
    }

    deinit { if !finished { try? handle.close() } }

    /// Appends interleaved frames.
    public func write(_ samples: UnsafeBufferPointer<Float>) throws {
        try write(Data(buffer: samples))  // Float32 on Linux hosts is little-endian already
        framesWritten += samples.count / format.channelCount
    }

    /// Appends a buffer.
    public func write(_ buffer: PCMBuffer) throws {
        try buffer.withUnsafeSamples { try write($0) }
    }

    /// Fills in the header's sizes and closes the file.
    public func finish() throws {
        guard !finished else { return }
        finished = true
        do {
            try handle.seek(toOffset: 0)
            try handle.write(contentsOf: Self.header(format: format, frames: framesWritten))
            try handle.close()
        } catch {
            throw AudioError(.writeFailed, "\(path): cannot finish the WAV header", underlying: error)
        }
    }

    private func write(_ data: Data) throws {
        do { try handle.write(contentsOf: data) } catch {
            throw AudioError(.writeFailed, "\(path): write failed", underlying: error)
        }
    }

    /// A 44-byte canonical header for IEEE float data (format tag 3, 32 bits).
    static func header(format: AudioFormat, frames: Int) -> Data {
        let channels = format.channelCount
        let dataBytes = frames * channels * 4
        var d = Data()
        func u32(_ v: Int) { withUnsafeBytes(of: UInt32(truncatingIfNeeded: v).littleEndian) { d.append(contentsOf: $0) } }
        func u16(_ v: Int) { withUnsafeBytes(of: UInt16(truncatingIfNeeded: v).littleEndian) { d.append(contentsOf: $0) } }
        d.append(contentsOf: Array("RIFF".utf8)); u32(36 + dataBytes); d.append(contentsOf: Array("WAVE".utf8))
        d.append(contentsOf: Array("fmt ".utf8)); u32(16); u16(3); u16(channels)
        u32(Int(format.sampleRate)); u32(Int(format.sampleRate) * channels * 4); u16(channels * 4); u16(32)
        d.append(contentsOf: Array("data".utf8)); u32(dataBytes)
        return d
    }
}
