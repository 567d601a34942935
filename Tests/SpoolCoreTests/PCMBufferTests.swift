import Foundation
import Testing
@testable import SpoolCore
import SpoolTestSupport

@Suite("PCMBuffer and AudioFormat")
struct PCMBufferTests {
    let stereo = try! AudioFormat(sampleRate: 48_000, channelCount: 2)

    @Test func formatRejectsInvalidParameters() {
        for (rate, channels) in [(0.0, 2), (-44_100.0, 2), (44_100.0, 0), (44_100.0, 9), (.nan, 2), (1e9, 1)] {
            #expect(throws: AudioError.self) { try AudioFormat(sampleRate: rate, channelCount: channels) }
        }
        #expect(stereo.frames(forSeconds: 0.5) == 24_000)
        #expect(stereo.seconds(forFrames: 12_000) == 0.25)
    }

    @Test func samplesMustFillWholeFrames() throws {
        do {
            _ = try PCMBuffer(format: stereo, samples: [0, 1, 2])
            Issue.record("3 samples accepted as stereo frames")
        } catch let error as AudioError {
            #expect(error.code == .invalidParameter)
        }
        let buffer = try PCMBuffer(format: stereo, samples: [0, 1, 2, 3])
        #expect(buffer.frameCount == 2)
        #expect(buffer.byteCount == 16)
        #expect(buffer.sample(frame: 1, channel: 0) == 2)
        #expect(buffer.sample(frame: 2, channel: 0) == nil)
    }

    @Test func int16DataIsScaledBy32768() throws {
        let values: [Int16] = [0, 16_384, -32_768, 32_767]
        let data = values.withUnsafeBytes { Data($0) }
        let buffer = try PCMBuffer(format: stereo, interleaved: data, sampleType: .int16)
        #expect(buffer.samples == [0, 0.5, -1, Float(32_767) / 32_768])
        #expect(throws: AudioError.self) {
            try PCMBuffer(format: stereo, interleaved: data.prefix(6), sampleType: .int16)
        }
    }

    @Test func float32DataIsTakenAsIs() throws {
        let values: [Float] = [0.25, -0.75, 1, -1]
        let buffer = try PCMBuffer(format: stereo, interleaved: values.withUnsafeBytes { Data($0) }, sampleType: .float32)
        #expect(buffer.samples == values)
        // Unaligned bytes (a slice of a larger Data) decode the same.
        var shifted = Data([0])
        shifted.append(values.withUnsafeBytes { Data($0) })
        let unaligned = try PCMBuffer(format: stereo, interleaved: shifted.dropFirst(), sampleType: .float32)
        #expect(unaligned.samples == values)
    }

    @Test func slicesShareStorageAndStayInBounds() throws {
        let buffer = try PCMBuffer(format: stereo, samples: (0..<20).map(Float.init))
        let slice = try buffer.slice(frames: 3..<7)
        #expect(slice.frameCount == 4)
        #expect(slice.samples == (6..<14).map(Float.init))
        #expect(slice.storageIdentifier == buffer.storageIdentifier)
        let inner = try slice.slice(frames: 1..<2)
        #expect(inner.samples == [8, 9])
        #expect(throws: AudioError.self) { try buffer.slice(frames: 5..<11) }
        #expect(throws: AudioError.self) { try slice.slice(frames: -1..<2) }
    }

    @Test func weakReferenceTellsWhetherStorageIsAlive() throws {
        var buffer: PCMBuffer? = try PCMBuffer(format: stereo, samples: [1, 2])
        let reference = buffer!.storageReference
        #expect(reference.isAlive)
        buffer = nil
        #expect(!reference.isAlive)
    }
}

@Suite("Seconds to frames and nanoseconds: saturating")
struct SaturatingTimeTests {
    @Test func framesForSecondsSaturatesAndNaNIsZero() throws {
        let format = try AudioFormat(sampleRate: 48_000, channelCount: 2)
        #expect(format.frames(forSeconds: 1.5) == 72_000)
        #expect(format.frames(forSeconds: 1e300) == Int.saturationLimit)
        #expect(format.frames(forSeconds: .infinity) == Int.saturationLimit)
        #expect(format.frames(forSeconds: -1e300) == -Int.saturationLimit)
        #expect(format.frames(forSeconds: -.infinity) == -Int.saturationLimit)
        #expect(format.frames(forSeconds: .nan) == 0)
    }

    @Test func hostTimeNanosecondsSaturatesAndNeverGoesBelowZero() {
        #expect(HostTime.nanoseconds(1.5) == 1_500_000_000)
        #expect(HostTime.nanoseconds(1e300) == UInt64(Int.saturationLimit))
        #expect(HostTime.nanoseconds(-1e300) == 0)
        #expect(HostTime.nanoseconds(.nan) == 0)
    }
}
