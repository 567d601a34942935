import Foundation
import SpoolCore
import Synchronization
import Testing
import SpoolTestSupport

/// The seam's optional capability: a back-end that holds one buffer for many voices says so,
/// and one that does not answers `.unsupported`, whatever is asked of it.
@Suite("Seam conformance: shared buffers (an optional capability)")
struct SharedBufferCapabilityTests {
    /// A 0.1 s stereo ramp at the rig's rate: every frame different, so a sample off shows.
    static func ramp(rate: Double) throws -> PCMBuffer {
        let frames = Int(rate / 10)
        let samples = (0..<frames).flatMap { i -> [Float] in
            let value = Float(i) / Float(frames) * 0.5
            return [value, -value]
        }
        return try PCMBuffer(format: AudioFormat(sampleRate: rate, channelCount: 2), samples: samples)
    }

    @Test(arguments: Backend.allCases)
    func aBackendSaysWhetherItHasThemAndOneWithoutAnswersUnsupported(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let buffer = try Self.ramp(rate: rig.rate)
        switch kind {
        case .queue:
            #expect(!rig.backend.supportsSharedBuffers)
            let error = try #require(throws: AudioError.self) { try rig.backend.makeSharedBuffer(buffer) }
            #expect(error.code == .unsupported)
            #expect(error.message.contains(rig.backend.name))
        case .openAL:
            #expect(rig.backend.supportsSharedBuffers)
            let shared = try rig.backend.makeSharedBuffer(buffer)
            #expect(shared.frameCount == buffer.frameCount && shared.format == buffer.format)
        }
    }

    /// Two voices on one shared buffer, started together, render the buffer twice over, sample
    /// for sample; each reports its end once.
    @Test func twoVoicesOnOneSharedBufferPlayItExactlyAndFinishOnce() throws {
        let rig = try Rig(.openAL)
        let buffer = try Self.ramp(rate: rig.rate)
        let shared = try rig.backend.makeSharedBuffer(buffer)
        let finishes = Atomic<Int>(0)
        let voices = try (0..<2).map { _ in try rig.backend.makeVoice(playing: shared, priority: 0) }
        for voice in voices { voice.setFinishedHandler { finishes.add(1, ordering: .relaxed) } }
        for voice in voices { try voice.play() }
        let out = try rig.render(until: { finishes.load(ordering: .relaxed) == 2 }, limit: buffer.frameCount * 4)
        #expect(finishes.load(ordering: .relaxed) == 2)
        let expected = buffer.samples.map { $0 * 2 }
        let worst = zip(out.prefix(expected.count), expected).map { abs($0 - $1) }.max() ?? 1
        #expect(out.count >= expected.count)
        #expect(worst < 1e-6, "the two plays differ from twice the buffer by up to \(worst)")
        #expect(out.dropFirst(expected.count).allSatisfy { $0 == 0 }, "silence after the last frame")
        for voice in voices { voice.dispose() }
        #expect(throws: AudioError.self) { try voices[0].play() }
    }

    /// A buffer one back-end made is refused by another, by name.
    @Test func aSharedBufferOfAnotherBackendIsRefused() throws {
        let first = try Rig(.openAL), second = try Rig(.openAL)
        let shared = try first.backend.makeSharedBuffer(try Self.ramp(rate: first.rate))
        let error = try #require(throws: AudioError.self) { try second.backend.makeVoice(playing: shared, priority: 0) }
        #expect(error.code == .invalidParameter)
    }
}
