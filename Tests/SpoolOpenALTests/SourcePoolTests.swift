import Foundation
import SpoolCore
import Testing
@testable import SpoolOpenAL
import SpoolTestSupport

@Suite("OpenAL source pool")
struct SourcePoolTests {
    let stereo48 = try! AudioFormat(sampleRate: 48_000, channelCount: 2)

    @Test func aNewVoiceStealsTheOldestOfTheLowestPriority() throws {
        let device = try makeLoopback(sourceLimit: 3)
        let a = try OpenALStreamingSource(device: device, format: stereo48, priority: 0)
        let b = try OpenALStreamingSource(device: device, format: stereo48, priority: 0)
        let c = try OpenALStreamingSource(device: device, format: stereo48, priority: 1)
        let aLog = VoiceLog(a)
        try a.enqueue(try pcm(ramp(frames: 100, channels: 2)))
        try a.start()
        #expect(device.sourcesInUse == 3)

        let d = try OpenALStreamingSource(device: device, format: stereo48, priority: 0)
        // `a` was the oldest of priority 0: it stops, hands back its buffer and finishes.
        #expect(aLog.count == 1)
        #expect(aLog.finishedCount == 1)
        #expect(!a.isPlaying)
        expectError(.invalidState) { try a.enqueue(try pcm([0, 0])) }
        expectError(.invalidState) { try a.start() }
        try b.enqueue(try pcm([0, 0]))
        try c.enqueue(try pcm([0, 0]))

        let e = try OpenALStreamingSource(device: device, format: stereo48, priority: 0)  // steals b
        expectError(.invalidState) { try b.enqueue(try pcm([0, 0])) }
        try c.enqueue(try pcm([0, 0]))
        try d.enqueue(try pcm([0, 0]))
        try e.enqueue(try pcm([0, 0]))
        #expect(device.sourcesInUse == 3)
    }

    @Test func whenEveryVoiceHasAHigherPriorityMakingOneThrows() throws {
        let device = try makeLoopback(sourceLimit: 2)
        let high = try (0..<2).map { _ in try OpenALStreamingSource(device: device, format: stereo48, priority: 5) }
        expectError(.invalidState) { try OpenALStreamingSource(device: device, format: stereo48, priority: 4) }
        expectError(.invalidState) { try OpenALBackend(device: device).makeVoice(format: stereo48) }
        // An equal priority takes the oldest.
        _ = try OpenALStreamingSource(device: device, format: stereo48, priority: 5)
        expectError(.invalidState) { try high[0].enqueue(try pcm([0, 0])) }
        try high[1].enqueue(try pcm([0, 0]))
    }

    @Test func disposedAndDroppedVoicesGiveTheirSourcesBack() throws {
        let device = try makeLoopback(sourceLimit: 1)
        let first = try OpenALStreamingSource(device: device, format: stereo48, priority: 9)
        first.dispose()
        let second = try OpenALStreamingSource(device: device, format: stereo48, priority: 0)
        do { _ = try OpenALStreamingSource(device: device, format: stereo48, priority: -1) } catch {}
        try second.enqueue(try pcm([0, 0]))  // not stolen by the lower priority
        second.dispose()
        do {
            let dropped = try OpenALStreamingSource(device: device, format: stereo48, priority: 9)
            try dropped.enqueue(try pcm(ramp(frames: 500, channels: 2)))
            try dropped.start()
        }
        // The dropped voice's source comes back to the pool: no stealing needed.
        let third = try OpenALStreamingSource(device: device, format: stereo48, priority: -5)
        try third.enqueue(try pcm([0.5, 0.5]))
        try third.start()
        let out = try device.render(frames: 256).samples
        #expect(out[0] == 0.5 && out[2...].allSatisfy { $0 == 0 }, "only the new voice plays")
        #expect(device.sourcesInUse == 1)
    }

    @Test func staticAndStreamingSourcesShareThePool() throws {
        let device = try makeLoopback(sourceLimit: 2)
        let effect = try device.makeStaticSource(playing: try device.makeStaticBuffer(try pcm([0.1, 0.1])), priority: 0)
        let music = try OpenALStreamingSource(device: device, format: stereo48, priority: 10)
        _ = try OpenALStreamingSource(device: device, format: stereo48, priority: 1)
        expectError(.invalidState) { try effect.play() }
        try music.enqueue(try pcm([0, 0]))
    }
}
