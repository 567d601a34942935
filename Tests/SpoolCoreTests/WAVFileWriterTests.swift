import Foundation
import Testing
@testable import SpoolCore

@Suite("WAVFileWriter")
struct WAVFileWriterTests {
    @Test func writesAFloatWAVWithCorrectSizes() throws {
        let format = try AudioFormat(sampleRate: 22_050, channelCount: 2)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("spool-writer-\(UUID()).wav").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let writer = try WAVFileWriter(path: path, format: format)
        let samples: [Float] = [0.5, -0.5, 0.25, -0.25, 1, -1]
        try writer.write(try PCMBuffer(format: format, samples: samples))
        try writer.finish()
        #expect(writer.framesWritten == 3)

        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(data.count == 44 + 24)
        func u32(_ at: Int) -> UInt32 { data[at..<(at + 4)].withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) } }
        func u16(_ at: Int) -> UInt16 { data[at..<(at + 2)].withUnsafeBytes { $0.loadUnaligned(as: UInt16.self) } }
        #expect(String(decoding: data[0..<4], as: UTF8.self) == "RIFF")
        #expect(u32(4) == 36 + 24)
        #expect(u16(20) == 3)  // WAVE_FORMAT_IEEE_FLOAT
        #expect(u16(22) == 2)
        #expect(u32(24) == 22_050)
        #expect(u16(34) == 32)
        #expect(u32(40) == 24)
        let body = data[44...].withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        #expect(body == samples)
    }

    @Test func unwritablePathIsAClearError() throws {
        let format = try AudioFormat(sampleRate: 8_000, channelCount: 1)
        do {
            _ = try WAVFileWriter(path: "/nonexistent-dir/x.wav", format: format)
            Issue.record("wrote into a missing directory")
        } catch let error as AudioError {
            #expect(error.code == .writeFailed)
            #expect(error.message.contains("/nonexistent-dir/x.wav"))
        }
    }
}
