import Foundation
import Spool
import SpoolTestSupport

/// Sine tones written at test time with Spool's own `WAVFileWriter`, in a temporary folder
/// of the test's own that goes when the value does.
final class TestTones {
    let folder: URL

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("spool-play-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: folder) }

    /// Writes `seconds` of a sine at `frequency` and `amplitude` (the same on every channel)
    /// to a float32 WAV file named `name`.
    /// - Returns: Its path.
    func tone(_ name: String, seconds: Double, sampleRate: Double = 8_000, channels: Int = 1,
              frequency: Double = 440, amplitude: Float = 0.5) throws -> String {
        let path = folder.appendingPathComponent(name).path
        let format = try AudioFormat(sampleRate: sampleRate, channelCount: channels)
        let writer = try WAVFileWriter(path: path, format: format)
        let frames = format.frames(forSeconds: seconds)
        var samples = [Float](repeating: 0, count: frames * channels)
        for n in 0..<frames {
            let value = amplitude * Float(sin(2 * Double.pi * frequency * Double(n) / sampleRate))
            for c in 0..<channels { samples[n * channels + c] = value }
        }
        try samples.withUnsafeBufferPointer { try writer.write($0) }
        try writer.finish()
        return path
    }
}
