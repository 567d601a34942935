import Foundation
import Testing
import SpoolCore
@testable import SpoolDecoding
import SpoolTestSupport

/// Small reads of a file (libmpg123 asks for each frame's 4-byte header, then its body) come
/// from `ByteReader`'s read-ahead block: one system call per 64 KiB, not two per frame, and
/// every byte the same as reading the file directly.
@Suite("File read-ahead")
struct ReadAheadTests {
    private static func temporaryFile(_ bytes: Data, _ name: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("spool-readahead-\(UUID())-\(name)").path
        try bytes.write(to: URL(fileURLWithPath: path))
        return path
    }

    /// A long MP3: a fixture without tags repeated until it holds over a thousand frames.
    private static func longMP3() throws -> Data {
        let one = try Data(contentsOf: URL(fileURLWithPath: Fixtures.path("mp3-48000-stereo-notag.mp3")))
        var bytes = Data()
        for _ in 0..<60 { bytes.append(one) }
        return bytes
    }

    @Test func decodingAnMP3ReadsTheFileABlockAtATimeNotAFrameAtATime() throws {
        let bytes = try Self.longMP3()
        let path = try Self.temporaryFile(bytes, "long.mp3")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let decoder = try #require(try DecoderRegistry.shared.open(path: path) as? MP3Decoder)
        let decoded = try decoder.decodeAll()
        #expect(decoded.frameCount == decoder.frameCount)
        #expect(decoded.frameCount > 1000 * 1152)
        // The walk of the frames and libmpg123's decoding each read the file once, a block
        // at a time; a few more reads look for tags at either end. Without the read-ahead
        // libmpg123 alone made two reads per frame (over 2600 here).
        let blocks = bytes.count / ByteReader.readAheadSize + 1
        #expect(decoder.reader.systemReads <= 2 * blocks + 16, "\(decoder.reader.systemReads) reads of \(bytes.count) bytes")

        // The same bytes from memory decode to the same samples, bit for bit.
        let fromMemory = try openDecoder(.memory(bytes, name: "long.mp3")).decodeAll()
        #expect(fromMemory.frameCount == decoded.frameCount)
        #expect(fromMemory.samples == decoded.samples)
    }

    @Test(arguments: ["mp3-44100-stereo.mp3", "mp3-22050-mono-vbr.mp3", "mp3/tags-between-frames.mp3",
                      "broken/corrupt-middle.mp3", "broken/truncated.mp3", "vorbis-22050-mono.ogg",
                      "vorbis-48000-5.1.ogg", "vorbis-44100-stereo-chained.ogg", "broken/corrupt-middle.ogg",
                      "ogg/page-missing.ogg"])
    func aFileDecodesAsItsBytesDoFromMemory(name: String) throws {
        let path = Fixtures.path(name)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let file = try openDecoder(.file(path: path))
        let memory = try openDecoder(.memory(bytes, name: name, typeHint: URL(fileURLWithPath: name).pathExtension))
        let a = try file.decodeAll(), b = try memory.decodeAll()
        #expect(a.frameCount == b.frameCount)
        #expect(a.samples == b.samples)
        #expect(file.frameCount == memory.frameCount)
        #expect(file.warnings.map(\.kind) == memory.warnings.map(\.kind))
    }

    /// Random reads, seeks, windows and excluded ranges give the same bytes from a file as
    /// from memory: reads inside the block, across its end, larger than it, at the end of
    /// the file and past it.
    @Test func randomReadsOfAFileMatchTheBytes() throws {
        var generator = SplitMix(seed: 0x5EED)
        var bytes = Data(count: 3 * ByteReader.readAheadSize + 12_345)
        bytes.withUnsafeMutableBytes { raw in
            for i in raw.indices { raw[i] = UInt8(truncatingIfNeeded: generator.next()) }
        }
        let path = try Self.temporaryFile(bytes, "random.bin")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let file = try ByteReader(source: .file(path: path))
        let memory = try ByteReader(source: .memory(bytes))
        let total = bytes.count
        for round in 0..<400 {
            if round % 50 == 0 {
                // A new window and excluded ranges inside it, as the MP3 decoder sets them.
                let start = Int(generator.next() % UInt64(total / 4))
                let end = total - Int(generator.next() % UInt64(total / 4))
                let cut = start + Int(generator.next() % UInt64(end - start - 1000))
                for reader in [file, memory] {
                    reader.setWindow(start..<end)
                    reader.exclude([cut..<(cut + 700)])
                }
            }
            let position = Int(generator.next() % UInt64(file.size + 10))
            #expect(file.seek(position, whence: SEEK_SET) == memory.seek(position, whence: SEEK_SET))
            let sizes = [1, 4, 200, 2048, ByteReader.readAheadSize - 1, ByteReader.readAheadSize, 100_000]
            let count = sizes[Int(generator.next() % UInt64(sizes.count))]
            var a = [UInt8](repeating: 0, count: count), b = [UInt8](repeating: 0, count: count)
            let gotA = a.withUnsafeMutableBytes { file.read(into: $0.baseAddress!, count: count) }
            let gotB = b.withUnsafeMutableBytes { memory.read(into: $0.baseAddress!, count: count) }
            #expect(gotA == gotB, "read of \(count) at \(position)")
            #expect(a == b, "read of \(count) at \(position)")
            #expect(file.position == memory.position)
            let at = Int(generator.next() % UInt64(total + 100))
            #expect(file.bytes(at: at, count: count) == memory.bytes(at: at, count: count), "bytes(at: \(at), count: \(count))")
        }
    }
}
