import Foundation
import SoundServerTestSupport
import SpoolCore
import Testing
@testable import SpoolOpenAL
import SpoolTestSupport

/// How far ahead Spool's OpenAL voices convert on a device that mixes in real time, and the
/// pump passing by a voice that has its lead in hand.
@Suite("OpenAL streaming lead")
struct StreamingLeadTests {
    let stereo44 = try! AudioFormat(sampleRate: 44_100, channelCount: 2)

    @Test func theLeadIsTheDevicesSettingWholeAtEachRefillInChunksOfWholeUpdates() throws {
        let device = try OpenALDevice(.null(OutputConfiguration(sampleRate: 48_000, periodFrames: 256, periodCount: 3)))
        defer { device.close() }
        #expect(device.streamingLead == 0.040)
        for bad in [0.005, 1.5, -1, .nan, .infinity] {
            #expect(throws: AudioError.self) { try device.setStreamingLead(bad) }
        }
        #expect(device.streamingLead == 0.040)
        let before = try OpenALStreamingSource(device: device, format: stereo44)
        try device.setStreamingLead(0.2)
        let after = try OpenALStreamingSource(device: device, format: stereo44)
        for voice in [before, after] {
            // Whole updates of about 20 ms: 4 × 256 frames.
            #expect(voice.chunkFrames == 1024)
            #expect(voice.leadFrames % voice.chunkFrames == 0)
        }
        // At least the lead asked once a chunk has been taken, and no more than a chunk over.
        #expect(before.leadFrames - before.chunkFrames >= 1920 && before.leadFrames - before.chunkFrames < 1920 + 1024)
        #expect(after.leadFrames - after.chunkFrames >= 9600 && after.leadFrames - after.chunkFrames < 9600 + 1024)
        #expect(after.leadFrames <= OpenALStreamingSource.maximumQueuedALBuffers * after.chunkFrames)
    }

    @Test(.disabled(if: SoundServer.underSanitizer, "real-time pacing means nothing under a sanitizer's slow-down; the plain run checks it"))
    func aPlayingVoiceWithItsLeadRestsAndAnyCallWakesIt() throws {
        let backend = try OpenALBackend(.null(OutputConfiguration(sampleRate: 48_000, periodFrames: 256, periodCount: 3)))
        defer { backend.device.close() }
        let voice = try #require(try backend.makeVoice(format: stereo44) as? OpenALStreamingSource)
        let tone = try pcm(sine(frequency: 440, rate: 44_100, frames: 44_100, channels: 2), rate: 44_100)
        try voice.enqueue(tone)
        try voice.start()
        let deadline = HostTime.now() + HostTime.nanoseconds(2)
        while voice.locked.withLock({ $0.restUntil == nil }), HostTime.now() < deadline { Thread.sleep(forTimeInterval: 0.002) }
        #expect(voice.locked.withLock { $0.restUntil != nil }, "the voice never rested")
        try voice.setPlaybackRate(1.5)
        #expect(voice.locked.withLock { $0.restUntil == nil }, "a call left the voice resting")
        // Resting never lets it run dry: half a second plays on the clock's pace.
        let played = voice.framesPlayed
        Thread.sleep(forTimeInterval: 0.5)
        #expect(voice.underrunCount == 0)
        #expect(voice.framesPlayed - played > Int(0.4 * 44_100 * 1.5))
        try voice.stop(immediately: true)
    }
}
