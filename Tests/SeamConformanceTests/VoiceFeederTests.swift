import Foundation
import SpoolCore
import SpoolDecoding
import Synchronization
import Testing
import SpoolTestSupport

/// The outcomes a feeder reported, by name.
final class Recorded: Sendable {
    private let list = Locked<[String]>([])

    func add(_ outcome: VoiceFeeder.Outcome) {
        let name: String = switch outcome {
        case .finished: "finished"
        case .failed(let error): "failed(\(error.code))"
        case .stopped(let finish): "stopped(\(Recorder.name(finish)))"
        }
        list.withLock { $0.append(name) }
    }

    var names: [String] { list.withLock { $0 } }
}

/// `VoiceFeeder` on every back-end: it stops feeding when the voice stops, seeks, and when
/// its decoder fails it plays every frame decoded before the failure, then reports it.
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
    func theCompletionReportsAStopOrADisposeOnce(_ kind: Backend) throws {
        let rig = try Rig(kind)
        for dispose in [false, true] {
            let voice = try rig.voice(stereo48)
            let feeder = try VoiceFeeder(voice: voice, source: .buffer(try identityBuffer(0..<20_000)), bufferFrames: 2048)
            let outcomes = Recorded()
            feeder.setCompletion { outcomes.add($0) }
            try feeder.prime()
            try voice.start()
            _ = try rig.render(4096)
            if dispose { voice.dispose() } else { try voice.stop(immediately: true) }
            _ = try rig.render(4096)
            #expect(outcomes.names == [dispose ? "stopped(disposed)" : "stopped(stopped)"])
        }
    }

    @Test(arguments: Backend.allCases)
    func aSeekWhilePlayingPlaysOnFromTheFrame(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(stereo48)
        let feeder = try VoiceFeeder(voice: voice, source: .buffer(try identityBuffer(0..<48_000)), bufferFrames: 2048)
        let outcomes = Recorded()
        feeder.setCompletion { outcomes.add($0) }
        try feeder.prime()
        try voice.start()
        _ = try rig.render(4096)
        try feeder.seek(toFrame: 30_000)
        #expect(voice.isPlaying)
        let out = try rig.render(20_000)
        let frames = decodeIdentity(out).compactMap { $0 }
        // After the old audio's fade: 30 000 onwards, every frame, in order, to the end.
        let resumed = frames.drop { $0 < 30_000 }
        #expect(resumed.first == 30_000)
        #expect(Array(resumed) == Array(30_000..<48_000))
        #expect(frames.prefix { $0 < 30_000 }.allSatisfy { $0 < 4096 + 256 }, "only the fade of the old audio before it")
        #expect(outcomes.names == ["finished"], "the seek's own stop is not reported")
        #expect(voice.underrunCount == 0)
    }

    @Test(arguments: Backend.allCases)
    func aSeekWhilePausedOrStoppedStartsThereNext(_ kind: Backend) throws {
        let rig = try Rig(kind)
        for pausedFirst in [true, false] {
            let voice = try rig.voice(stereo48)
            let feeder = try VoiceFeeder(voice: voice, source: .buffer(try identityBuffer(0..<24_000)), bufferFrames: 2048)
            try feeder.prime()
            if pausedFirst {
                try voice.start()
                _ = try rig.render(2048)
                try voice.pause()
                _ = try rig.render(512)
            }
            try feeder.seek(toFrame: 10_000)
            #expect(!voice.isPlaying)
            #expect(try rig.render(1024).allSatisfy { $0 == 0 }, "nothing plays until it is started")
            try voice.start()
            let out = try rig.render(15_000)
            #expect(Array(out[0..<28_000]) == identityFrames(10_000..<24_000), "from frame 10 000, bit for bit")
            #expect(voice.framesPlayed == 14_000)
        }
    }

    @Test(arguments: Backend.allCases)
    func aSeekOutsideTheSourceIsRefused(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(stereo48)
        let feeder = try VoiceFeeder(voice: voice, source: .buffer(try identityBuffer(0..<1000)))
        expectError(.outOfRange, "seek past the end") { try feeder.seek(toFrame: 1001) }
        expectError(.outOfRange, "seek before the start") { try feeder.seek(toFrame: -1) }
    }

    @Test(arguments: Backend.allCases)
    func aDecoderFailurePlaysEverythingDecodedBeforeIt(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(stereo48)
        let feeder = try VoiceFeeder(voice: voice, source: .decoder(FailingDecoder(frames: 10_000)),
                                     bufferFrames: 4096, buffersAhead: 3)
        let outcomes = Recorded()
        feeder.setCompletion { outcomes.add($0) }
        try feeder.prime()
        try voice.start()
        let out = try rig.render(12_288)
        #expect(Array(out[0..<20_000]) == identityFrames(0..<10_000), "every decoded frame plays, in order")
        #expect(voice.framesPlayed == 10_000)
        #expect(outcomes.names == ["failed(corruptData)"])
        #expect(voice.underrunCount == 0, "the failure marks the end: no underrun")
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
        let outcomes = Recorded()
        feeder.setCompletion { outcomes.add($0) }
        try feeder.prime()
        try voice.start()
        let out = try rig.render(30_000)
        #expect(voice.framesPlayed == 22_050)
        #expect(Array(out[0..<firstLink.count]) == firstLink)
        #expect(outcomes.names == ["failed(formatChanged)"])
    }

    @Test(arguments: Backend.allCases)
    func aShortFileEndsWithoutAnUnderrun(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(stereo48)
        let feeder = try VoiceFeeder(voice: voice, source: .buffer(try identityBuffer(0..<490)), bufferFrames: 2048)
        let outcomes = Recorded()
        feeder.setCompletion { outcomes.add($0) }
        try feeder.prime()
        try voice.start()
        _ = try rig.render(4096)
        #expect(outcomes.names == ["finished"])
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
