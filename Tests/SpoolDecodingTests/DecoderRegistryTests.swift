import Foundation
import Testing
import SpoolCore
@testable import SpoolDecoding
import SpoolTestSupport

/// A toy format for the registry tests: the magic `SPL0`, a rate byte ×1000, then Int8 mono samples.
final class ToyDecoder: AudioDecoder {
    let format: AudioFormat
    let frameCount: Int
    private(set) var position = 0
    let info = AudioFileInfo(container: "Toy", codec: "Int8")
    let warnings: [DecodeWarning] = []
    private let samples: [Int8]

    init(data: Data) throws {
        let bytes = [UInt8](data)
        format = try AudioFormat(sampleRate: Double(bytes[4]) * 1000, channelCount: 1)
        samples = bytes.dropFirst(5).map { Int8(bitPattern: $0) }
        frameCount = samples.count
    }

    func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int {
        let n = min(buffer.count, frameCount - position)
        for i in 0..<n { buffer[i] = Float(samples[position + i]) / 128 }
        position += n
        return n
    }

    func seek(toFrame frame: Int) throws {
        guard (0...frameCount).contains(frame) else { throw AudioError(.outOfRange, "toy: frame \(frame)") }
        position = frame
    }
}

@Suite("DecoderRegistry")
struct DecoderRegistryTests {
    static let toy = DecoderFactory(name: "toy", typeHints: ["toy"], sniff: { $0.matches("SPL0") }, open: { source in
        guard case .memory(let data) = source.location else { throw AudioError(.unsupportedFormat, "toy: memory only") }
        return try ToyDecoder(data: data)
    })

    @Test func aRegisteredFormatIsFoundByItsBytes() throws {
        let registry = DecoderRegistry(factories: [.mp3, .vorbis, .sndfile])
        let data = Data("SPL0".utf8) + Data([8, 64, 0, 192, 127, 128, 1, 2, 3, 4, 5, 6, 7])
        #expect(throws: AudioError.self) { try registry.open(.memory(data)) }
        registry.register(Self.toy)
        let decoder = try registry.open(.memory(data, typeHint: "mp3"))
        #expect(decoder.info.container == "Toy")
        #expect(decoder.format.sampleRate == 8000)
        #expect(try decoder.decodeAll().samples.prefix(4) == [0.5, 0, -0.5, 127.0 / 128])
    }

    @Test func candidatesPutTheHintedFormatFirstOnlyAmongMatches() throws {
        let registry = DecoderRegistry(factories: [.mp3, .vorbis, .sndfile])
        let wav = try Data(contentsOf: URL(fileURLWithPath: Fixtures.path("wav-44100-stereo-s16.wav")))
        #expect(try registry.candidates(for: .memory(wav, typeHint: "ogg")).map(\.name) == ["sndfile"])
        #expect(try registry.candidates(for: .memory(Data(repeating: 0x41, count: 64), typeHint: "xyz")).isEmpty)
    }
}
