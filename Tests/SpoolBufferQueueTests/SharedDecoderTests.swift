import Foundation
import Testing
import SpoolCore
import SpoolDecoding
@testable import SpoolBufferQueue
import SpoolTestSupport

/// A decoder used from a `@Sendable` refill callback, through `SharedDecoder`: it compiles
/// without an unchecked wrapper and the queue plays the file sample for sample.
@Suite("SharedDecoder")
struct SharedDecoderTests {
    @Test func aRefillCallbackDecodesStraightIntoItsBuffers() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fixtures/wav-44100-stereo-s16.wav").path
        let reference = try DecoderRegistry.shared.open(path: path).decodeAll()
        let decoder = SharedDecoder(try DecoderRegistry.shared.open(path: path))
        let (engine, device) = try makeOfflineEngine(rate: 44_100, channels: 2)
        defer { engine.stop() }
        let queue = try BufferQueue(format: decoder.format, engine: engine) { queue, buffer in
            let frames = (try? decoder.read(into: UnsafeMutableBufferPointer(start: buffer.data.baseAddress,
                                                                               count: buffer.frameCapacity * 2))) ?? 0
            guard frames > 0 else { return }
            buffer.frameCount = frames
            try? queue.enqueue(buffer)
        }
        for _ in 0..<3 {
            let buffer = try queue.allocateBuffer(frameCapacity: 1024)
            buffer.frameCount = try decoder.read(into: UnsafeMutableBufferPointer(start: buffer.data.baseAddress, count: 2048))
            try queue.enqueue(buffer)
        }
        try queue.start()
        let rendered = try device.render(frames: 22_050 + 512)
        #expect(Array(rendered.samples.prefix(22_050 * 2)) == reference.samples)
        #expect(decoder.position == 22_050)
        #expect(rendered.samples[(22_050 * 2)...].allSatisfy { $0 == 0 })
    }
}
