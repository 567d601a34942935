import Dispatch
import Foundation
import Spool
import Testing
import SpoolTestSupport

/// `SystemSound` and its shared output on both back-ends, rendered offline.
@Suite("SystemSound on both back-ends")
struct SystemSoundTests {
    /// A 2000-frame sound whose frames all differ: a ramp with a wobble.
    static func ramp(frames: Int = 2_000) throws -> PCMBuffer {
        try PCMBuffer(format: stereo48, samples: (0..<frames).flatMap { i -> [Float] in
            let v = Float(i) / Float(frames) * 0.3 + 0.05 * Float(sin(Double(i) * 0.05))
            return [v, -v]
        })
    }

    @Test(arguments: Backend.allCases)
    func aSoundPlayedThreeTimesOverlappingMixesToTheExactSum(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let queue = DispatchQueue(label: "test.effects")
        let effects = try SoundEffects(backend: rig.backend, eventQueue: queue)
        let sound = try SystemSound(buffer: Self.ramp(), effects: effects)
        let completions = Locked(0)
        sound.addCompletion { _ in completions.withLock { $0 += 1 } }
        var out: [Float] = []
        for _ in 0..<3 {
            try sound.play()
            out += try rig.render(256)
        }
        #expect(effects.playingCount == 3)
        out += try rig.render(until: { effects.playingCount == 0 }, limit: 48_000) + rig.render(256)
        queue.sync {}
        #expect(completions.withLock { $0 } == 3, "one completion per play")
        let source = try Self.ramp().samples
        var expected = [Float](repeating: 0, count: out.count)
        for start in [0, 256, 512] {
            for i in source.indices where start * 2 + i < expected.count { expected[start * 2 + i] += source[i] }
        }
        let worst = zip(out, expected).map { abs($0 - $1) }.max() ?? 1
        #expect(worst < 1e-5, "largest difference from the sum of three copies at 0, 256 and 512: \(worst)")
    }

    @Test(arguments: Backend.allCases)
    func theCompletionRunsOnceEachPlayHasPlayedItsLastFrame(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let queue = DispatchQueue(label: "test.effects")
        let effects = try SoundEffects(backend: rig.backend, eventQueue: queue)
        let sound = try SystemSound(buffer: Self.ramp(frames: 1_000), effects: effects)
        let completions = Locked(0)
        let token = sound.addCompletion { _ in completions.withLock { $0 += 1 } }
        try sound.play()
        _ = try rig.render(768)
        queue.sync {}
        #expect(completions.withLock { $0 } == 0, "not before its last frame")
        _ = try rig.render(512)
        queue.sync {}
        #expect(completions.withLock { $0 } == 1)
        sound.removeCompletion(token)
        try sound.play()
        _ = try rig.render(2_048)
        queue.sync {}
        #expect(completions.withLock { $0 } == 1, "a removed completion does not run")
    }

    @Test(arguments: Backend.allCases)
    func pastTheVoiceLimitTheOldestOfTheLowestPriorityMakesRoom(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let queue = DispatchQueue(label: "test.effects")
        let effects = try SoundEffects(backend: rig.backend, voiceLimit: 2, eventQueue: queue)
        let long = try constant(0.1, frames: 48_000)
        let low1 = try SystemSound(buffer: long, name: "low1", effects: effects, priority: 0)
        let low2 = try SystemSound(buffer: long, name: "low2", effects: effects, priority: 0)
        let high = try SystemSound(buffer: long, name: "high", effects: effects, priority: 5)
        let finished = Locked<[String]>([])
        for sound in [low1, low2, high] { sound.addCompletion { s in finished.withLock { $0.append(s.name) } } }
        try low1.play()
        _ = try rig.render(256)
        try low2.play()
        _ = try rig.render(256)
        try high.play()  // takes low1's place: the oldest of priority 0
        #expect(effects.playingCount == 2)
        let after = channel(try rig.render(2_048), 0)
        queue.sync {}
        #expect(finished.withLock { $0 } == ["low1"])
        #expect(after[1_024...].allSatisfy { abs($0 - 0.2) < 1e-5 }, "two sounds play on: \(after[1_500])")

        // Every voice now plays a sound of a higher priority than a new low one.
        try high.play()  // takes low2's place (priority 0 ≤ 5)
        _ = try rig.render(512)
        queue.sync {}
        #expect(finished.withLock { $0 } == ["low1", "low2"])
        expectError(.deviceUnavailable, "a low-priority play when both voices play high ones") { try low1.play() }
    }

    @Test(arguments: Backend.allCases)
    func aDisposedSoundCannotPlay(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let effects = try SoundEffects(backend: rig.backend)
        let sound = try SystemSound(buffer: Self.ramp(), effects: effects)
        sound.dispose()
        #expect(sound.isDisposed)
        expectError(.invalidState, "play after dispose") { try sound.play() }
        expectError(.emptyInput, "an empty sound") { _ = try SystemSound(buffer: .empty(stereo48), effects: effects) }
        expectError(.invalidParameter, "a voice limit of 0") { _ = try SoundEffects(backend: rig.backend, voiceLimit: 0) }
    }

    @Test(arguments: Backend.allCases)
    func aFileIsConvertedOnceToTheOutputAndSharedThroughTheCache(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let effects = try SoundEffects(backend: rig.backend)
        let url = URL(fileURLWithPath: fixture("flac-22050-mono-s16.flac"))
        let source = try DecoderRegistry.shared.open(.file(url)).decodeAll()
        let first = try SystemSound(contentsOf: url, effects: effects)
        let second = try SystemSound(contentsOf: url, effects: effects)
        #expect(first.buffer.format == stereo48)
        #expect(first.buffer.frameCount == Int((Double(source.frameCount) * 48_000 / 22_050).rounded()))
        #expect(first.buffer.storageIdentifier == second.buffer.storageIdentifier, "decoded and converted once")
        #expect(effects.cache.stats.itemCount == 1)
        let left = channel(first.buffer.samples, 0)
        #expect(left == channel(first.buffer.samples, 1), "mono feeds both channels")
        // Playing it is a copy: the rendered frames are the converted ones.
        try first.play()
        let out = try rig.render(first.buffer.frameCount)
        #expect(snr(out, first.buffer.samples) >= 80)
    }

    @Test
    func convertingToTheOutputKeepsTheSignal() throws {
        // 1 kHz at 22.05 kHz mono, against the same sine computed at 48 kHz on both channels.
        let mono = try AudioFormat(sampleRate: 22_050, channelCount: 1)
        let source = try PCMBuffer(format: mono, samples: (0..<22_050).map { Float(0.5 * sin(2 * Double.pi * 1_000 * Double($0) / 22_050)) })
        let converted = try source.converted(to: stereo48)
        #expect(converted.frameCount == 48_000)
        let exact = (0..<48_000).map { Float(0.5 * sin(2 * Double.pi * 1_000 * Double($0) / 48_000)) }
        // The edges hold the filter's ramp in and out; the middle is the signal.
        let left = channel(converted.samples, 0)
        #expect(snr(Array(left[2_000..<46_000]), Array(exact[2_000..<46_000])) >= 80,
                "\(snr(Array(left[2_000..<46_000]), Array(exact[2_000..<46_000]))) dB, time-aligned")
        #expect(left == channel(converted.samples, 1))
        #expect(try source.converted(to: mono).storageIdentifier == source.storageIdentifier, "nothing to convert")
    }
}
