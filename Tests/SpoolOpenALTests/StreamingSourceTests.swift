import Foundation
import SpoolCore
import Synchronization
import Testing
@testable import SpoolOpenAL
import SpoolTestSupport

@Suite("OpenAL streaming source")
struct StreamingSourceTests {
    let stereo48 = try! AudioFormat(sampleRate: 48_000, channelCount: 2)

    @Test func unityStereoIsBitExactAndInOrder() throws {
        let device = try makeLoopback()
        let voice = try OpenALStreamingSource(device: device, format: stereo48)
        let log = VoiceLog(voice)
        var expected: [Float] = []
        var enqueued: [PCMBuffer] = []
        for i in 0..<3 {
            let samples = ramp(frames: 1000, channels: 2, start: i * 2000)
            expected += samples
            let buffer = try pcm(samples)
            enqueued.append(buffer)
            try voice.enqueue(buffer)
        }
        #expect(voice.queuedBufferCount == 3)
        try voice.start()
        let out = try device.render(frames: 3072).samples
        // Equal rates at pitch 1 bypass the resampler and direct channels bypass the panner:
        // every sample comes out bit for bit.
        #expect(mismatch(out[0..<6000], expected) == nil)
        #expect(out[6000...].allSatisfy { $0 == 0 })
        #expect(log.buffers.map(\.storageIdentifier) == enqueued.map(\.storageIdentifier))
        #expect(voice.framesPlayed == 3000)
        #expect(voice.queuedBufferCount == 0)
    }

    @Test func processedBuffersAdvanceWithRenderedFrames() throws {
        let device = try makeLoopback(periodFrames: 256)
        let voice = try OpenALStreamingSource(device: device, format: stereo48)
        let log = VoiceLog(voice)
        for i in 0..<12 { try voice.enqueue(try pcm(ramp(frames: 500, channels: 2, start: i * 1000))) }
        try voice.start()
        var rendered = 0
        var out: [Float] = []
        // The voice converts (here: copies) three mixer updates ahead of OpenAL's mixer, and
        // hands a buffer back once its last frame is converted: during the next render call,
        // also for those `start` converted.
        let lead = 3 * 256
        #expect(log.count == 0)
        while rendered < 5888 {
            out += try device.render(frames: 256).samples
            rendered += 256
            // Serviced after each period: the lead is topped up, the buffers it finished come back.
            #expect(log.count == min(12, (rendered + lead) / 500), "after \(rendered) frames")
            #expect(voice.queuedBufferCount == 12 - min(12, (rendered + lead) / 500))
            #expect(voice.framesPlayed == rendered)
        }
        #expect(mismatch(out, ramp(frames: 5888, channels: 2)) == nil)
    }

    @Test func underrunIsDetectedCountedAndRecovered() throws {
        let device = try makeLoopback(periodFrames: 256)
        let voice = try OpenALStreamingSource(device: device, format: stereo48)
        let log = VoiceLog(voice)
        try voice.enqueue(try pcm(ramp(frames: 1000, channels: 2)))
        try voice.enqueue(try pcm(ramp(frames: 1000, channels: 2, start: 2000)))
        try voice.start()
        let dry = try device.render(frames: 3072).samples
        #expect(mismatch(dry[0..<4000], ramp(frames: 2000, channels: 2)) == nil)
        #expect(dry[4000...].allSatisfy { $0 == 0 })
        #expect(voice.underrunCount == 1)
        #expect(voice.isPlaying)
        #expect(log.count == 2)
        #expect(voice.framesPlayed == 2000)
        // Rendering on while dry counts no second underrun.
        _ = try device.render(frames: 512)
        #expect(voice.underrunCount == 1)

        // A buffer arriving later plays from the next frame rendered, whole.
        let late = ramp(frames: 1500, channels: 2, start: 9000)
        try voice.enqueue(try pcm(late))
        let resumed = try device.render(frames: 2048).samples
        #expect(mismatch(resumed[0..<3000], late) == nil)
        #expect(resumed[3000...].allSatisfy { $0 == 0 })
        #expect(voice.underrunCount == 2, "running dry again after the late buffer is a second underrun")
        #expect(voice.framesPlayed == 3500)
        #expect(log.count == 3)
    }

    @Test func positionIsExactBetweenBufferBoundaries() throws {
        let device = try makeLoopback(periodFrames: 100)
        let voice = try OpenALStreamingSource(device: device, format: stereo48)
        for i in 0..<4 { try voice.enqueue(try pcm(ramp(frames: 1000, channels: 2, start: i * 2000))) }
        #expect(voice.framesPlayed == 0)
        try voice.start()
        for frames in [1, 99, 1134, 1266, 1] {
            let before = voice.framesPlayed
            _ = try device.render(frames: frames)
            #expect(voice.framesPlayed == before + frames)
        }
        #expect(voice.framesPlayed == 2501)
    }

    @Test func stopWhenDrainedPlaysEverythingThenFinishes() throws {
        let device = try makeLoopback()
        let voice = try OpenALStreamingSource(device: device, format: stereo48)
        let log = VoiceLog(voice)
        let samples = ramp(frames: 3000, channels: 2, start: 7)
        for i in 0..<3 { try voice.enqueue(try pcm(Array(samples[(i * 2000)..<((i + 1) * 2000)]))) }
        try voice.start()
        try voice.stop(immediately: false)
        #expect(voice.isPlaying)
        #expect(throws: AudioError.self) { try voice.enqueue(try pcm(samples)) }
        let out = try device.render(frames: 4096).samples
        #expect(mismatch(out[0..<6000], samples) == nil)
        #expect(!voice.isPlaying)
        #expect(log.finishedCount == 1)
        #expect(log.count == 3)
        #expect(voice.underrunCount == 0)
    }

    @Test func stopImmediatelyFadesOverFiveMillisecondsAndHandsEverythingBack() throws {
        let device = try makeLoopback(periodFrames: 256)
        let voice = try OpenALStreamingSource(device: device, format: stereo48)
        let log = VoiceLog(voice)
        let dc = [Float](repeating: 0.5, count: 4000)
        for _ in 0..<4 { try voice.enqueue(try pcm(dc)) }
        try voice.start()
        _ = try device.render(frames: 2560)
        #expect(log.count == 1)
        try voice.stop(immediately: true)
        #expect(!voice.isPlaying)
        let tail = channel(try device.render(frames: 512).samples, 0)
        // OpenAL Soft glides the gain to 0 over the next mix, which Spool makes 5 ms (240
        // frames) whatever the period: no step above 0.5 / 240, silent from then on.
        #expect(zip(tail, tail.dropFirst()).allSatisfy { abs($1 - $0) <= 0.5 / 240 + 1e-6 })
        #expect(tail[0] > 0.45 && tail[239] > 0)
        #expect(tail[240...].allSatisfy { $0 == 0 })
        #expect(log.count == 4)
        #expect(voice.queuedBufferCount == 0)
        #expect(log.finishedCount == 1, "a started voice that stops reports it")
    }

    @Test func pauseFadesAndResumesAtTheSameFrame() throws {
        let device = try makeLoopback(periodFrames: 256)
        let voice = try OpenALStreamingSource(device: device, format: stereo48)
        for i in 0..<4 { try voice.enqueue(try pcm(ramp(frames: 1000, channels: 2, start: i * 2000))) }
        try voice.start()
        _ = try device.render(frames: 512)
        try voice.pause()
        #expect(!voice.isPlaying)
        let fade = try device.render(frames: 256).samples  // the fade still plays, at a falling gain
        let pausedAt = voice.framesPlayed
        #expect(pausedAt == 512 + 240, "it holds the frame after its 5 ms fade")
        let silent = try device.render(frames: 512).samples
        #expect(silent.allSatisfy { $0 == 0 })
        #expect(voice.framesPlayed == pausedAt)
        try voice.start()
        let resumed = try device.render(frames: 512).samples
        #expect(fade.last.map { abs($0) } ?? 1 < 0.01)
        // It resumes on the next frame, fading in over 5 ms (OpenAL glides from the silenced
        // gain back up over the mix Spool makes 240 frames long), then plays on untouched.
        let expected = ramp(frames: 512, channels: 2, start: 2 * pausedAt)
        let gains = (1..<240).map { resumed[2 * $0] / expected[2 * $0] }
        #expect(zip(gains, gains.dropFirst()).allSatisfy { $1 >= $0 })
        #expect(gains.enumerated().allSatisfy { abs($1 - Float($0 + 1) / 240) < 1e-3 })
        #expect(mismatch(resumed[480...], expected[480...]) == nil)
        #expect(voice.framesPlayed == pausedAt + 512)
    }

    @Test func aPausedVoiceToldToStopPlaysOutWhenResumed() throws {
        let device = try makeLoopback(periodFrames: 256)
        let voice = try OpenALStreamingSource(device: device, format: stereo48)
        let log = VoiceLog(voice)
        for i in 0..<2 { try voice.enqueue(try pcm(ramp(frames: 1000, channels: 2, start: i * 2000))) }
        try voice.start()
        _ = try device.render(frames: 512)
        try voice.pause()
        _ = try device.render(frames: 512)
        try voice.stop(immediately: false)
        _ = try device.render(frames: 512)
        #expect(log.finishedCount == 0)
        try voice.start()
        _ = try device.render(frames: 2048)
        #expect(log.finishedCount == 1)
        #expect(log.count == 2)
        #expect(voice.framesPlayed == 2000)
        #expect(!voice.isPlaying)
    }

    @Test func scheduledStartLandsOnItsFrame() throws {
        let device = try makeLoopback(periodFrames: 256)
        let voice = try OpenALStreamingSource(device: device, format: stereo48)
        try voice.enqueue(try pcm([Float](repeating: 0.25, count: 2000)))
        _ = try device.render(frames: 300)
        try voice.start(atHostTime: hostTime(ofFrame: 1000, on: device))
        #expect(voice.isPlaying)
        let out = channel(try device.render(frames: 1024).samples, 0)
        #expect(out[0..<700].allSatisfy { $0 == 0 })
        #expect(out[700..<1024].allSatisfy { $0 == 0.25 })
    }

    @Test func aVoiceFeederDrivesItLikeABufferQueue() throws {
        let backend = OpenALBackend(device: try makeLoopback(periodFrames: 512))
        #expect(backend.name == "openal")
        #expect(backend.outputFormat == stereo48)
        let source = try pcm(ramp(frames: 10_000, channels: 2, start: 3))
        let voice = try backend.makeVoice(format: stereo48)
        let feeder = try VoiceFeeder(voice: voice, source: .buffer(source), bufferFrames: 1024, buffersAhead: 3)
        let completions = Locked<[String]>([])
        feeder.setCompletion { outcome in completions.withLock { $0.append("\(outcome)") } }
        try feeder.prime()
        try voice.start()
        let out = try backend.device.render(frames: 12_288).samples
        #expect(mismatch(out[0..<20_000], source.samples) == nil)
        #expect(out[20_000...].allSatisfy { $0 == 0 })
        #expect(completions.withLock { $0 } == ["finished"])
        #expect(!voice.isPlaying)
        #expect(voice.underrunCount == 0)
        #expect(voice.framesPlayed == 10_000)
    }

    @Test func moreChannelsFoldDownLikeTheBufferQueue() throws {
        let device = try makeLoopback()
        let format = try AudioFormat(sampleRate: 48_000, channelCount: 6)
        let voice = try OpenALStreamingSource(device: device, format: format)
        // One channel at a time, 256 frames each: L R C LFE BL BR.
        var samples: [Float] = []
        for active in 0..<6 {
            for _ in 0..<256 { for c in 0..<6 { samples.append(c == active ? 0.5 : 0) } }
        }
        try voice.enqueue(try PCMBuffer(format: format, samples: samples))
        try voice.start()
        let out = try device.render(frames: 1536).samples
        let norm: Float = 1 / (1 + 2 * 0.707_106_77)
        let expected: [(Float, Float)] = [(norm, 0), (0, norm), (0.707_106_77 * norm, 0.707_106_77 * norm), (0, 0),
                                          (0.707_106_77 * norm, 0), (0, 0.707_106_77 * norm)]
        for (active, (left, right)) in expected.enumerated() {
            let frame = active * 256 + 128
            #expect(abs(out[2 * frame] - 0.5 * left) < 1e-6, "channel \(active) left")
            #expect(abs(out[2 * frame + 1] - 0.5 * right) < 1e-6, "channel \(active) right")
        }
    }

    @Test func aVoiceAt44100IsResampledToTheDeviceRate() throws {
        let device = try makeLoopback()
        let format = try AudioFormat(sampleRate: 44_100, channelCount: 1)
        let voice = try OpenALStreamingSource(device: device, format: format)
        try voice.enqueue(try PCMBuffer(format: format, samples: sine(frequency: 1_000, rate: 44_100, frames: 44_100, channels: 1)))
        try voice.start()
        let out = channel(try device.render(frames: 24_000).samples, 0)
        let frequency = zeroCrossingFrequency(out[1000..<23_000], rate: 48_000)
        #expect(abs(frequency - 1_000) < 0.05)
        // The voice converts with libsoxr, which takes up to 30 ms of source ahead of what it
        // plays (OpenAL Soft's own resampler, stepping in 1/4096ths of a frame, would run
        // 53 ppm slow and drop the last frames).
        let ahead = voice.framesPlayed - 22_050
        #expect((0...1_323).contains(ahead), "framesPlayed \(voice.framesPlayed)")
        try voice.stop(immediately: false)
        let rest = channel(try device.render(frames: 26_000).samples, 0)
        #expect(voice.framesPlayed == 44_100, "every source frame plays")
        #expect(!voice.isPlaying)
        let sounding = 24_000 + (rest.lastIndex { abs($0) > 1e-3 } ?? 0) + 1
        #expect(abs(sounding - 48_000) <= 2, "sounds for \(sounding) frames at 48 kHz")
    }
}
