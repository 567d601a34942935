import Foundation
@testable import Spool
import Testing
import SpoolTestSupport

/// The player's read-ahead decoder yields exactly what its decoder yields, whatever the timing
/// of its worker against the reads and seeks.
@Suite("PrefetchingDecoder")
struct PrefetchingDecoderTests {
    @Test func readsAndSeeksYieldTheDecodersOwnFramesWhateverTheTiming() throws {
        let path = fixture("wav-48000-stereo-f32.wav")
        let reference = try DecoderRegistry.shared.open(path: path).decodeAll().samples
        var generator = SystemRandomNumberGenerator()
        for round in 0..<200 {
            let decoder = PrefetchingDecoder(try DecoderRegistry.shared.open(path: path), chunkFrames: 1024, chunksAhead: 3)
            var position = 0
            if round % 3 == 2 { try decoder.seek(toFrame: 0) }
            if round % 2 == 1 { usleep(UInt32.random(in: 0...300, using: &generator)) }
            for step in 0..<12 {
                if step % 4 == 3 {
                    position = Int.random(in: 0...(reference.count / 2), using: &generator)
                    if step % 8 == 3 { position = Int.random(in: 0..<1024, using: &generator) }
                    try decoder.seek(toFrame: position)
                }
                let want = Int.random(in: 1...3000, using: &generator)
                var out = [Float](repeating: 0, count: want * 2)
                let got = try out.withUnsafeMutableBufferPointer { try decoder.read(into: $0) }
                let expected = Array(reference[min(reference.count, position * 2)..<min(reference.count, (position + got) * 2)])
                #expect(Array(out.prefix(got * 2)) == expected, "round \(round) step \(step): \(got) frames at \(position)")
                if Array(out.prefix(got * 2)) != expected { return }
                #expect(got > 0 || position * 2 >= reference.count, "no frames at \(position)")
                position += got
                #expect(decoder.position == position)
            }
        }
    }
}
