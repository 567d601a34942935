import Foundation
import SpoolCore
import SpoolDecoding
import Synchronization
import Testing

/// `VoiceFeeder` on every back-end: it stops feeding when the voice stops, and when its
/// decoder fails it plays every frame decoded before the failure, then reports it.
@Suite("Seam conformance: the feeder")
struct VoiceFeederTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures")

    /// A decoder of `frames` identity frames that fails with `.corruptData` after them.
    final class FailingDecoder: AudioDecoder {
        let format = stereo48
        let frames: Int
        private(set) var position = 0
        var frameCount: Int { frames + 10_000 }
        var info: AudioFileInfo { AudioFileInfo(container: "test", codec: "identity") }
        var warnings: [DecodeWarning] { [] }

        init(frames: Int) { self.frames = frames }

        func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int {
            guard position < frames else { throw AudioError(.corruptData, "test: broken after \(frames) frames") }
            // Short reads, as real decoders make: at most 700 frames at a time.
            let n = min(buffer.count / 2, frames - position, 700)
            for (i, v) in identityFrames(position..<(position + n)).enumerated() { buffer[i] = v }
            position += n
            return n
        }

        func seek(toFrame frame: Int) throws {
            guard (0...frames).contains(frame) else { throw AudioError(.outOfRange, "test: frame \(frame)") }
            position = frame
        }
    }

    @Test(arguments: Backend.allCases)
    func aStoppedVoiceIsFedNoMore(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(stereo48)
        let feeder = try VoiceFeeder(voice: voice, source: .buffer(try identityBuffer(0..<48_000)),
                                     bufferFrames: 4096, buffersAhead: 3)
        try feeder.prime()
        try voice.start()
        _ = try rig.render(8192)
        try voice.stop(immediately: true)
        _ = try rig.render(1024)
        let position = feeder.position
        _ = try rig.render(8192)
        #expect(feeder.position == position, "the feeder went on from \(position) to \(feeder.position)")
        #expect(voice.queuedBufferCount == 0, "nothing stale waits on the voice")
    }

    @Test(arguments: Backend.allCases)
    func aDecoderFailurePlaysEverythingDecodedBeforeIt(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(stereo48)
        let feeder = try VoiceFeeder(voice: voice, source: .decoder(FailingDecoder(frames: 10_000)),
                                     bufferFrames: 4096, buffersAhead: 3)
        let errors = Mutex<[String]>([])
        feeder.setCompletion { error in errors.withLock { $0.append(error.map { "\($0.code)" } ?? "none") } }
        try feeder.prime()
        try voice.start()
        let out = try rig.render(12_288)
        #expect(Array(out[0..<20_000]) == identityFrames(0..<10_000), "every decoded frame plays, in order")
        #expect(voice.framesPlayed == 10_000)
        #expect(errors.withLock { $0 } == ["corruptData"])
    }

    @Test(arguments: Backend.allCases)
    func aChainedOggThatChangesFormatPlaysItsWholeFirstLink(_ kind: Backend) throws {
        let path = Self.fixtures.appendingPathComponent("broken/vorbis-chained-mixed.ogg").path
        // The first link, as the decoder itself reads it up to the change.
        let probe = try DecoderRegistry.shared.open(path: path)
        var firstLink: [Float] = []
        var chunk = [Float](repeating: 0, count: 2048 * probe.format.channelCount)
        while let n = try? chunk.withUnsafeMutableBufferPointer({ try probe.read(into: $0) }), n > 0 {
            firstLink += chunk[0..<(n * probe.format.channelCount)]
        }
        #expect(firstLink.count == 22_050 * 2)

        let rig = try Rig(kind, rate: 44_100)
        let decoder = try DecoderRegistry.shared.open(path: path)
        let voice = try rig.voice(decoder.format)
        let feeder = try VoiceFeeder(voice: voice, source: .decoder(decoder), bufferFrames: 4096, buffersAhead: 3)
        let errors = Mutex<[String]>([])
        feeder.setCompletion { error in errors.withLock { $0.append(error.map { "\($0.code)" } ?? "none") } }
        try feeder.prime()
        try voice.start()
        let out = try rig.render(30_000)
        #expect(voice.framesPlayed == 22_050)
        #expect(Array(out[0..<firstLink.count]) == firstLink)
        #expect(errors.withLock { $0 } == ["formatChanged"])
    }

    @Test(arguments: Backend.allCases)
    func aShortFileEndsWithoutAnUnderrun(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(stereo48)
        let feeder = try VoiceFeeder(voice: voice, source: .buffer(try identityBuffer(0..<490)), bufferFrames: 2048)
        let done = Atomic<Int>(0)
        feeder.setCompletion { _ in done.add(1, ordering: .relaxed) }
        try feeder.prime()
        try voice.start()
        _ = try rig.render(4096)
        #expect(done.load(ordering: .relaxed) == 1)
        #expect(voice.underrunCount == 0, "the end of a sound is no underrun")
        #expect(voice.framesPlayed == 490)
    }

    @Test(arguments: Backend.allCases)
    func theFeedersCompletionSurvivesTheProgramsOwnHandlers(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(stereo48)
        let feeder = try VoiceFeeder(voice: voice, source: .buffer(try identityBuffer(0..<5000)), bufferFrames: 1024)
        let completions = Atomic<Int>(0)
        feeder.setCompletion { _ in completions.add(1, ordering: .relaxed) }
        let log = Recorder(voice)  // the program's own observers, added after the feeder's
        try feeder.prime()
        try voice.start()
        let out = try rig.render(8192)
        #expect(Array(out[0..<10_000]) == identityFrames(0..<5000), "the feeder kept feeding")
        #expect(completions.load(ordering: .relaxed) == 1)
        #expect(log.finishes == ["playedOut"])
        #expect(log.consumed.count == 5)
    }
}
