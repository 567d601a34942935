import Foundation
import Testing
import Synchronization
import SpoolCore
@testable import SpoolBufferQueue
import SpoolTestSupport

@Suite("BufferQueue")
struct BufferQueueTests {
    let stereo48 = try! AudioFormat(sampleRate: 48_000, channelCount: 2)

    @Test func unityGainPassthroughIsBitExactAndInOrder() throws {
        let (engine, device) = try makeOfflineEngine()
        let log = CallbackLog()
        let queue = try BufferQueue(format: stereo48, engine: engine) { _, buffer in log.record(buffer) }
        var expected: [Float] = []
        var enqueued: [AudioQueueBuffer] = []
        for i in 0..<3 {
            let samples = ramp(frames: 1000, channels: 2, start: i * 2000)
            expected += samples
            let buffer = try filledBuffer(queue, samples)
            enqueued.append(buffer)
            try queue.enqueue(buffer)
        }
        #expect(try queue.prime() == 3000)
        try queue.start()
        let out = try device.render(frames: 3072).samples
        #expect(Array(out[0..<6000]) == expected)
        #expect(out[6000...].allSatisfy { $0 == 0 })
        // One callback per buffer, in the order they were enqueued.
        #expect(log.buffers.map(ObjectIdentifier.init) == enqueued.map(ObjectIdentifier.init))
        #expect(queue.framesPlayed == 3000)
    }

    @Test func callbackRefillsKeepPlaybackContinuous() throws {
        let (engine, device) = try makeOfflineEngine()
        let next = Locked(0)
        let queue = try BufferQueue(format: stereo48, engine: engine) { queue, buffer in
            let start = next.withLock { n in defer { n += 1 }; return n }
            guard start < 12 else { return }
            _ = buffer.data.update(from: ramp(frames: 500, channels: 2, start: (start + 3) * 1000))
            try? queue.enqueue(buffer)
        }
        for i in 0..<3 { try queue.enqueue(try filledBuffer(queue, ramp(frames: 500, channels: 2, start: i * 1000))) }
        next.withLock { $0 = 0 }
        try queue.start()
        let out = try device.render(frames: 7000).samples
        #expect(Array(out[0..<14_000]) == ramp(frames: 7000, channels: 2))
        #expect(queue.underrunCount == 0)
    }

    @Test func stopImmediatelyFadesOutAndReturnsEveryBuffer() throws {
        let (engine, device) = try makeOfflineEngine()
        let log = CallbackLog()
        let queue = try BufferQueue(format: stereo48, engine: engine) { _, buffer in log.record(buffer) }
        let dc = [Float](repeating: 0.5, count: 2000)
        for _ in 0..<4 { try queue.enqueue(try filledBuffer(queue, dc)) }
        try queue.start()
        _ = try device.render(frames: 1500)
        #expect(log.count == 1)
        try queue.stop(immediately: true)
        let tail = try device.render(frames: 512).samples
        // A 5 ms (240-frame) linear fade: no step larger than 0.5 / 240, then silence.
        let left = channel(tail, 0, of: 2)
        // The fade starts from the level before the stop (a hard cut would start at 0) and
        // is still sounding near its end.
        #expect(abs(left[0] - 0.5) <= 0.5 / 240 + 1e-6, "first sample after the stop: \(left[0])")
        #expect(left[200] > 0.5 * 30 / 240 && left[200] < 0.5 * 50 / 240, "frame 200 of the fade: \(left[200])")
        #expect(zip(left, left.dropFirst()).allSatisfy { abs($1 - $0) <= 0.5 / 240 + 1e-6 })
        #expect(left[240...].allSatisfy { $0 == 0 })
        #expect(log.count == 4)
        #expect(!queue.isRunning)
    }

    @Test func stopWhenDrainedPlaysEverythingThenStops() throws {
        let (engine, device) = try makeOfflineEngine()
        let log = CallbackLog()
        let running = Locked<[Bool]>([])
        let queue = try BufferQueue(format: stereo48, engine: engine) { _, buffer in log.record(buffer) }
        queue.setRunningListener { value in running.withLock { $0.append(value) } }
        let samples = ramp(frames: 3000, channels: 2, start: 7)
        for i in 0..<3 { try queue.enqueue(try filledBuffer(queue, Array(samples[(i * 2000)..<((i + 1) * 2000)]))) }
        try queue.start()
        try queue.stop(immediately: false)
        #expect(queue.isRunning)
        #expect(throws: AudioError.self) { try queue.enqueue(try filledBuffer(queue, samples)) }
        let out = try device.render(frames: 4096).samples
        #expect(Array(out[0..<6000]) == samples)
        #expect(out[6000...].allSatisfy { $0 == 0 })
        #expect(log.count == 3)
        #expect(!queue.isRunning)
        #expect(running.withLock { $0 } == [true, false])
    }

    @Test func pauseAndResumeKeepThePosition() throws {
        let (engine, device) = try makeOfflineEngine()
        let queue = try BufferQueue(format: stereo48, engine: engine) { _, _ in }
        let source = ramp(frames: 10_000, channels: 2)
        try queue.enqueue(try filledBuffer(queue, source))
        try queue.start()
        _ = try device.render(frames: 1024)
        try queue.pause()
        let paused = try device.render(frames: 1024).samples
        let position = queue.framesPlayed
        #expect(position == 1024 + 240)  // the fade-out's frames were played, then nothing
        #expect(paused[(240 * 2)...].allSatisfy { $0 == 0 })
        _ = try device.render(frames: 512)
        #expect(queue.framesPlayed == position)
        try queue.start()
        let resumed = try device.render(frames: 1024).samples
        // After the 240-frame fade-in the source continues exactly where it paused.
        let offset = (position + 240) * 2
        #expect(Array(resumed[(240 * 2)...]) == Array(source[offset..<(offset + (1024 - 240) * 2)]))
    }

    @Test func resetReturnsEveryBufferAndKeepsRunning() throws {
        let (engine, device) = try makeOfflineEngine()
        let log = CallbackLog()
        let queue = try BufferQueue(format: stereo48, engine: engine) { _, buffer in log.record(buffer) }
        for i in 0..<5 { try queue.enqueue(try filledBuffer(queue, ramp(frames: 1000, channels: 2, start: i))) }
        try queue.start()
        _ = try device.render(frames: 100)
        try queue.reset()
        #expect(log.count == 5)
        #expect(queue.queuedFrames == 0)
        #expect(queue.isRunning)
        let fresh = ramp(frames: 300, channels: 2, start: 99)
        try queue.enqueue(try filledBuffer(queue, fresh))
        let out = try device.render(frames: 300).samples
        #expect(out == fresh)
    }

    @Test func flushPlaysOutAndReturnsEveryBuffer() throws {
        let (engine, device) = try makeOfflineEngine()
        let log = CallbackLog()
        let queue = try BufferQueue(format: stereo48, engine: engine) { _, buffer in log.record(buffer) }
        for i in 0..<3 { try queue.enqueue(try filledBuffer(queue, ramp(frames: 333, channels: 2, start: i * 666))) }
        try queue.start()
        try queue.flush()
        let out = try device.render(frames: 1024).samples
        #expect(Array(out[0..<1998]) == ramp(frames: 999, channels: 2))
        #expect(log.count == 3)
        #expect(!queue.isRunning)
    }

    @Test func currentTimeIsExactToTheFrame() throws {
        let (engine, device) = try makeOfflineEngine(periodFrames: 100)
        let queue = try BufferQueue(format: stereo48, engine: engine) { _, _ in }
        try queue.enqueue(try filledBuffer(queue, ramp(frames: 5000, channels: 2)))
        try queue.start()
        _ = try device.render(frames: 1234)
        #expect(queue.currentTime.sampleTime == 1234)
        #expect(queue.framesPlayed == 1234)
        _ = try device.render(frames: 1)
        #expect(queue.currentTime.sampleTime == 1235)
    }

    @Test func underrunPlaysSilenceCountsFlagsAndRecovers() throws {
        let (engine, device) = try makeOfflineEngine()
        let queue = try BufferQueue(format: stereo48, engine: engine) { _, _ in }
        try queue.enqueue(try filledBuffer(queue, [Float](repeating: 0.25, count: 2000)))
        try queue.start()
        let out = try device.render(frames: 2048).samples
        #expect(out[0..<2000].allSatisfy { $0 == 0.25 })
        #expect(out[2000...].allSatisfy { $0 == 0 })
        #expect(queue.underrunCount == 1)
        _ = try device.render(frames: 512)
        #expect(queue.underrunCount == 1)  // one dry spell, one count
        #expect(queue.currentTime.isDiscontinuity)
        #expect(!queue.currentTime.isDiscontinuity)  // reported once
        try queue.enqueue(try filledBuffer(queue, [Float](repeating: 0.75, count: 512)))
        let recovered = try device.render(frames: 256).samples
        #expect(recovered.allSatisfy { $0 == 0.75 })
        #expect(queue.isRunning)
        // The timeline ran on through the silence.
        #expect(queue.currentTime.sampleTime == 2048 + 512 + 256)
    }

    @Test func trimmedBuffersJoinWithoutAGap() throws {
        let (engine, device) = try makeOfflineEngine()
        let queue = try BufferQueue(format: stereo48, engine: engine) { _, _ in }
        let music = ramp(frames: 1800, channels: 2)
        let junk = [Float](repeating: 9, count: 200)
        // File A: 100 frames of encoder delay, 900 of music, 50 of padding.
        let a = Array(junk[0..<200]) + Array(music[0..<1800]) + Array(junk[0..<100])
        // File B: 30 frames of delay, then the next 900 of music.
        let b = Array(junk[0..<60]) + Array(music[1800..<3600])
        try queue.enqueue(try filledBuffer(queue, a), trimFramesAtStart: 100, trimFramesAtEnd: 50)
        try queue.enqueue(try filledBuffer(queue, b), trimFramesAtStart: 30)
        try queue.start()
        let out = try device.render(frames: 1800).samples
        #expect(out == music)
    }

    @Test func aBufferScheduledLaterStartsOnItsSample() throws {
        let (engine, device) = try makeOfflineEngine()
        let queue = try BufferQueue(format: stereo48, engine: engine) { _, _ in }
        try queue.enqueue(try filledBuffer(queue, [Float](repeating: 0.5, count: 400)), startSampleTime: 300)
        try queue.start()
        let out = try device.render(frames: 500).samples
        #expect(out[0..<600].allSatisfy { $0 == 0 })
        #expect(out[600..<1000].allSatisfy { $0 == 0.5 })
        #expect(queue.underrunCount == 0)  // the wait for a scheduled buffer is no underrun
        _ = try device.render(frames: 10)
        #expect(queue.underrunCount == 1)  // running dry after it is
    }

    @Test func startAtAHostTimeLandsOnTheFrame() throws {
        let (engine, device) = try makeOfflineEngine()
        let queue = try BufferQueue(format: stereo48, engine: engine) { _, _ in }
        try queue.enqueue(try filledBuffer(queue, [Float](repeating: 0.5, count: 2000)))
        // 700 frames after the device's first frame.
        try queue.start(atHostTime: device.hostTimeBase + UInt64((700.0 / 48_000 * 1e9).rounded()))
        let out = channel(try device.render(frames: 2048).samples, 0, of: 2)
        #expect(out.firstIndex { $0 != 0 } == 700)
    }

    @Test func twoQueuesMixToTheSum() throws {
        let (engine, device) = try makeOfflineEngine()
        let a = ramp(frames: 1000, channels: 2)
        let b = sine(frequency: 440, rate: 48_000, frames: 1000, channels: 2)
        let q1 = try BufferQueue(format: stereo48, engine: engine) { _, _ in }
        let q2 = try BufferQueue(format: stereo48, engine: engine) { _, _ in }
        try q1.enqueue(try filledBuffer(q1, a))
        try q2.enqueue(try filledBuffer(q2, b))
        try q1.start()
        try q2.start()
        let out = try device.render(frames: 1000).samples
        #expect(out == zip(a, b).map { $0 + $1 })
    }

    @Test func resampling44100To48000KeepsASine() throws {
        let (engine, device) = try makeOfflineEngine()
        let format = try AudioFormat(sampleRate: 44_100, channelCount: 1)
        let queue = try BufferQueue(format: format, engine: engine) { _, _ in }
        try queue.setPan(-1)  // the whole mono signal to the left channel at unity
        try queue.enqueue(try filledBuffer(queue, sine(frequency: 1000, rate: 44_100, frames: 44_100, channels: 1)))
        try queue.start()
        let left = channel(try device.render(frames: 48_000).samples, 0, of: 2)
        let steady = left[4800..<43_200]
        let frequency = zeroCrossingFrequency(steady, rate: 48_000)
        #expect(abs(frequency - 1000) / 1000 < 0.001, "\(frequency) Hz")
        let snr = sineFitSNR(steady, frequency: frequency, rate: 48_000)
        #expect(snr >= 90, "SNR \(snr) dB")
    }

    @Test func volumeRampNeverStepsFasterThanItsSlope() throws {
        let (engine, device) = try makeOfflineEngine()
        let queue = try BufferQueue(format: stereo48, engine: engine) { _, _ in }
        try queue.enqueue(try filledBuffer(queue, [Float](repeating: 0.5, count: 20_000)))
        try queue.start()
        _ = try device.render(frames: 256)
        try queue.setVolume(0, rampSeconds: 0.01)  // 480 frames
        let down = channel(try device.render(frames: 1024).samples, 0, of: 2)
        #expect(abs(down[0] - 0.5) <= 0.5 / 480 + 1e-6, "the ramp starts where the level was: \(down[0])")
        #expect(abs(down[240] - 0.25) <= 0.5 / 480 * 2, "half way down at frame 240: \(down[240])")
        #expect(zip(down, down.dropFirst()).allSatisfy { abs($1 - $0) <= 0.5 / 480 + 1e-6 })
        #expect(down[480...].allSatisfy { abs($0) < 1e-6 })
        // An instant change still ramps over 5 ms.
        try queue.setVolume(1)
        let up = channel(try device.render(frames: 512).samples, 0, of: 2)
        #expect(up[0] <= 0.5 / 240 + 1e-6, "the ramp up starts from silence: \(up[0])")
        #expect(zip(up, up.dropFirst()).allSatisfy { abs($1 - $0) <= 0.5 / 240 + 1e-6 })
        #expect(up[240...].allSatisfy { abs($0 - 0.5) < 1e-6 })
    }

    @Test func monoPansWithTheBalanceLaw() throws {
        let (engine, device) = try makeOfflineEngine()
        let mono = try AudioFormat(sampleRate: 48_000, channelCount: 1)
        let queue = try BufferQueue(format: mono, engine: engine) { _, _ in }
        try queue.enqueue(try filledBuffer(queue, [Float](repeating: 1, count: 4000)))
        try queue.start()
        // At the centre a mono source plays at unity on both channels, as an Audio Queue does.
        let centre = try device.render(frames: 256).samples
        #expect(centre.allSatisfy { $0 == 1 })
        try queue.setPan(-1)
        let left = try device.render(frames: 512).samples
        #expect(left[1000] == 1 && abs(left[1001]) < 1e-6)
        let l = channel(left, 0, of: 2), r = channel(left, 1, of: 2)
        // All along the glide the near side stays at unity and the far side falls as
        // cos(|p| · π/2) of the gliding position: never rising.
        #expect(l.allSatisfy { $0 == 1 })
        #expect(zip(r, r.dropFirst()).allSatisfy { $1 <= $0 + 1e-7 })
        // Half way through the 5 ms glide (240 frames) the position is -0.5: cos(π/4).
        #expect(abs(r[120] - Float(cos(Double.pi / 4))) < 0.01)
    }

    @Test func levelMeterReportsPeakAndAverage() throws {
        let (engine, device) = try makeOfflineEngine(periodFrames: 960)
        let queue = try BufferQueue(format: stereo48, engine: engine) { _, _ in }
        queue.isMeteringEnabled = true
        try queue.enqueue(try filledBuffer(queue, sine(frequency: 1000, rate: 48_000, frames: 4800, channels: 2)))
        try queue.start()
        _ = try device.render(frames: 1920)
        for level in queue.levels {
            #expect(abs(level.peakPower - (-6.02)) < 0.1)
            #expect(abs(level.averagePower - (-9.03)) < 0.1)
        }
    }

    @Test func errorsNameWhatIsWrong() throws {
        let (engine, _) = try makeOfflineEngine()
        let queue = try BufferQueue(format: stereo48, engine: engine) { _, _ in }
        let other = try BufferQueue(format: stereo48, engine: engine) { _, _ in }
        func code(_ body: () throws -> Void) -> AudioError.Code? {
            do { try body() } catch let error as AudioError { return error.code } catch { return nil }
            return nil
        }
        let foreign = try other.allocateBuffer(frameCapacity: 10)
        foreign.frameCount = 10
        #expect(code { try queue.enqueue(foreign) } == .invalidParameter)
        let buffer = try queue.allocateBuffer(frameCapacity: 10)
        buffer.frameCount = 11
        #expect(code { try queue.enqueue(buffer) } == .invalidParameter)
        buffer.frameCount = 10
        #expect(code { try queue.enqueue(buffer, trimFramesAtStart: 6, trimFramesAtEnd: 4) } == .invalidParameter)
        try queue.enqueue(buffer)
        #expect(code { try queue.enqueue(buffer) } == .invalidState)
        #expect(code { try queue.freeBuffer(buffer) } == .invalidState)
        #expect(code { _ = try queue.allocateBuffer(frameCapacity: 0) } == .invalidParameter)
        #expect(code { try queue.setVolume(1.5) } == .invalidParameter)
        #expect(code { try queue.setVolume(0.5, rampSeconds: -1) } == .invalidParameter)
        #expect(code { try queue.setPan(2) } == .invalidParameter)
        #expect(code { try queue.setPlaybackRate(3) } == .invalidParameter)
        let mono = try PCMBuffer(format: AudioFormat(sampleRate: 48_000, channelCount: 1), samples: [0, 0])
        #expect(code { try queue.enqueue(mono) } == .invalidParameter)
        queue.dispose()
        #expect(code { try queue.start() } == .invalidState)
        #expect(code { _ = try queue.allocateBuffer(frameCapacity: 10) } == .invalidState)
        #expect(code { try queue.enqueue(try PCMBuffer(format: stereo48, samples: [0, 0])) } == .invalidState)
    }

    @Test func decodedBuffersPlayInPlace() throws {
        let (engine, device) = try makeOfflineEngine()
        let log = CallbackLog()
        let queue = try BufferQueue(format: stereo48, engine: engine) { _, buffer in log.record(buffer) }
        let pcm = try PCMBuffer(format: stereo48, samples: ramp(frames: 700, channels: 2))
        try queue.enqueue(pcm)
        try queue.enqueue(try pcm.slice(frames: 100..<200))
        try queue.start()
        let out = try device.render(frames: 800).samples
        #expect(out == pcm.samples + (try pcm.slice(frames: 100..<200)).samples)
        #expect(log.buffers.compactMap { $0.pcmBuffer?.frameCount } == [700, 100])
    }
}
