import Foundation
import Testing
@testable import SpoolCore
import SpoolTestSupport

/// The WAV writer opens its path in place: a symbolic link is written through, not replaced
/// by a new file renamed over it (which is how `spool decode --output /dev/null`, run as root,
/// once left a regular file where the device was).
@Suite("WAVFileWriter paths")
struct WAVFileWriterPathTests {
    private func temporaryDirectory() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("spool-writer-paths-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    @Test func aSymbolicLinkIsWrittenThroughAndStaysALink() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let target = dir.appendingPathComponent("target.wav").path, link = dir.appendingPathComponent("link.wav").path
        try Data(repeating: 0x55, count: 10_000).write(to: URL(fileURLWithPath: target))
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)

        let format = try AudioFormat(sampleRate: 8000, channelCount: 1)
        let writer = try WAVFileWriter(path: link, format: format)
        let samples: [Float] = [0.25, -0.5, 1]
        try samples.withUnsafeBufferPointer { try writer.write($0) }
        try writer.finish()

        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == target)
        let written = try Data(contentsOf: URL(fileURLWithPath: target))
        // The old, longer content is gone: header, then the three samples.
        #expect(written.count == WAVFileWriter.header(format: format, frames: 3).count + 12)
        #expect(written.suffix(12) == samples.withUnsafeBufferPointer { Data(buffer: $0) })
    }

    @Test func aFileThatCannotBeCreatedSaysWhy() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("spool-missing-\(UUID())/out.wav").path
        #expect {
            _ = try WAVFileWriter(path: path, format: try AudioFormat(sampleRate: 8000, channelCount: 1))
        } throws: { error in
            guard let error = error as? AudioError else { return false }
            return error.code == .writeFailed && error.message.hasPrefix("\(path): cannot create the file: ")
        }
    }
}
