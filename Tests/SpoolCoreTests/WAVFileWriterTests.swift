import Foundation
import Testing
@testable import SpoolCore
import SpoolTestSupport

/// The chunks of a RIFF/WAVE file, read independently of the writer: every chunk's size must
/// add up to the file's, so a header that lies about its contents fails here.
private struct RIFFChunks {
    var chunks: [(id: String, body: Data)] = []
    init(_ data: Data) throws {
        func u32(_ at: Int) -> Int { Int(data[at..<(at + 4)].withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }) }
        #expect(String(decoding: data[0..<4], as: UTF8.self) == "RIFF")
        #expect(String(decoding: data[8..<12], as: UTF8.self) == "WAVE")
        #expect(u32(4) == data.count - 8, "the RIFF size must cover the whole file")
        var at = 12
        while at + 8 <= data.count {
            let id = String(decoding: data[at..<(at + 4)], as: UTF8.self)
            let size = u32(at + 4)
            try #require(at + 8 + size <= data.count, "chunk \(id) claims more bytes than the file holds")
            chunks.append((id, Data(data[(at + 8)..<(at + 8 + size)])))
            at += 8 + size + (size & 1)
        }
        #expect(at == data.count)
    }
    subscript(id: String) -> Data? { chunks.first { $0.id == id }?.body }
}

private func u16(_ d: Data, _ at: Int) -> Int { Int(d[d.startIndex + at..<d.startIndex + at + 2].withUnsafeBytes { $0.loadUnaligned(as: UInt16.self) }) }
private func u32(_ d: Data, _ at: Int) -> Int { Int(d[d.startIndex + at..<d.startIndex + at + 4].withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }) }

@Suite("WAVFileWriter")
struct WAVFileWriterTests {
    private func temporaryPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("spool-writer-\(UUID()).wav").path
    }

    @Test func stereoFloatHasCbSizeAndAFactChunk() throws {
        let format = try AudioFormat(sampleRate: 22_050, channelCount: 2)
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let writer = try WAVFileWriter(path: path, format: format)
        let samples: [Float] = [0.5, -0.5, 0.25, -0.25, 1, -1]
        try writer.write(try PCMBuffer(format: format, samples: samples))
        try writer.finish()
        #expect(writer.framesWritten == 3)

        let riff = try RIFFChunks(try Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(riff.chunks.map(\.id) == ["fmt ", "fact", "data"])
        let fmt = try #require(riff["fmt "])
        #expect(fmt.count == 18, "a non-PCM fmt chunk carries cbSize")
        #expect(u16(fmt, 0) == 3)  // WAVE_FORMAT_IEEE_FLOAT
        #expect(u16(fmt, 2) == 2)
        #expect(u32(fmt, 4) == 22_050)
        #expect(u32(fmt, 8) == 22_050 * 8)
        #expect(u16(fmt, 12) == 8)
        #expect(u16(fmt, 14) == 32)
        #expect(u16(fmt, 16) == 0)
        #expect(u32(try #require(riff["fact"]), 0) == 3, "fact holds the frames per channel")
        let body = try #require(riff["data"]).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        #expect(body == samples)
    }

    @Test(arguments: [(6, 0x3F), (8, 0x63F), (3, 0x7)])
    func moreThanTwoChannelsIsExtensibleWithAChannelMask(channels: Int, mask: Int) throws {
        let format = try AudioFormat(sampleRate: 48_000, channelCount: channels)
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let writer = try WAVFileWriter(path: path, format: format)
        let samples = (0..<(channels * 5)).map { Float($0) / 64 }
        try writer.write(try PCMBuffer(format: format, samples: samples))
        try writer.finish()

        let riff = try RIFFChunks(try Data(contentsOf: URL(fileURLWithPath: path)))
        let fmt = try #require(riff["fmt "])
        #expect(fmt.count == 40)
        #expect(u16(fmt, 0) == 0xFFFE)  // WAVE_FORMAT_EXTENSIBLE
        #expect(u16(fmt, 2) == channels)
        #expect(u16(fmt, 16) == 22)  // cbSize
        #expect(u16(fmt, 18) == 32)  // valid bits
        #expect(u32(fmt, 20) == mask)
        #expect(Array(fmt[(fmt.startIndex + 24)...]) == [3, 0, 0, 0, 0, 0, 0x10, 0, 0x80, 0, 0, 0xAA, 0, 0x38, 0x9B, 0x71])
        #expect(u32(try #require(riff["fact"]), 0) == 5)
        #expect(try #require(riff["data"]).count == samples.count * 4)
    }

    @Test func aWriterDroppedUnfinishedStillLeavesATrueHeader() throws {
        let format = try AudioFormat(sampleRate: 8_000, channelCount: 1)
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        do {
            let writer = try WAVFileWriter(path: path, format: format)
            try writer.write(try PCMBuffer(format: format, samples: [0.1, 0.2, 0.3, 0.4]))
        }
        let riff = try RIFFChunks(try Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(try #require(riff["data"]).count == 16)
        #expect(u32(try #require(riff["fact"]), 0) == 4)
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
