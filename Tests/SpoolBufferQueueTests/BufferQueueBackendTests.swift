import Foundation
import Testing
import Synchronization
import SpoolCore
import SpoolOutput
import SpoolDecoding
@testable import SpoolBufferQueue

@Suite("BufferQueueBackend and VoiceFeeder")
struct BufferQueueBackendTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures")

    /// Renders `source` offline through the back-end at its own rate and channel count.
    func render(_ source: VoiceFeeder.Source, format: AudioFormat, frames: Int, loops: Int = 0,
                bufferFrames: Int = 1000) throws -> (PCMBuffer, any PlaybackVoice) {
        let device = try OfflineDevice(configuration: OutputConfiguration(
            sampleRate: format.sampleRate, channelCount: format.channelCount, periodFrames: 256, periodCount: 2))
        let backend = try BufferQueueBackend(device: device)
        let voice = try backend.makeVoice(format: format)
        let feeder = try VoiceFeeder(voice: voice, source: source, bufferFrames: bufferFrames, buffersAhead: 3,
                                     numberOfLoops: loops)
        let finished = Locked(false)
        feeder.setCompletion { _ in finished.withLock { $0 = true } }
        try feeder.prime()
        try voice.start()
        let out = try device.render(frames: frames)
        #expect(finished.withLock { $0 })
        #expect(!voice.isPlaying)
        _ = feeder
        return (out, voice)
    }

    @Test("a decoder plays through the back-end sample for sample", arguments: [
        "wav-44100-stereo-s16.wav", "flac-48000-mono-s24.flac", "mp3-44100-stereo.mp3",
        "vorbis-44100-stereo.ogg", "wav-48000-5.1-s24-extensible.wav",
    ])
    func decoderPlaysExactly(_ file: String) throws {
        let path = Self.fixtures.appendingPathComponent(file).path
        let reference = try DecoderRegistry.shared.open(path: path).decodeAll()
        let decoder = try DecoderRegistry.shared.open(path: path)
        let (out, voice) = try render(.decoder(decoder), format: decoder.format, frames: reference.frameCount + 500)
        let samples = out.samples
        let n = reference.frameCount * reference.format.channelCount
        #expect(Array(samples[0..<n]) == reference.samples)
        #expect(samples[n...].allSatisfy { $0 == 0 })
        #expect(voice.framesPlayed == reference.frameCount)
        #expect(voice.underrunCount == 0)
    }

    @Test func aCachedBufferLoopsWithoutAGap() throws {
        let format = try AudioFormat(sampleRate: 48_000, channelCount: 2)
        let pcm = try PCMBuffer(format: format, samples: ramp(frames: 2500, channels: 2))
        let (out, voice) = try render(.buffer(pcm), format: format, frames: 8000, loops: 2)
        let samples = out.samples
        #expect(Array(samples[0..<15_000]) == pcm.samples + pcm.samples + pcm.samples)
        #expect(samples[15_000...].allSatisfy { $0 == 0 })
        #expect(voice.framesPlayed == 7500)
    }

    @Test func feederRejectsAnotherFormat() throws {
        let device = try OfflineDevice(configuration: OutputConfiguration(sampleRate: 48_000))
        let backend = try BufferQueueBackend(device: device)
        let voice = try backend.makeVoice(format: AudioFormat(sampleRate: 48_000, channelCount: 2))
        let mono = try PCMBuffer(format: AudioFormat(sampleRate: 48_000, channelCount: 1), samples: [0, 1])
        #expect(throws: AudioError.self) { try VoiceFeeder(voice: voice, source: .buffer(mono)) }
    }
}

@Suite("Render path allocations")
struct RenderAllocationTests {
    /// Drives a real-time engine's render entry point on this thread, as the device's render
    /// thread would, and counts heap allocations: steady state must make none, with plain
    /// and rate-converted queues, volume ramps, pan moves, buffers finishing and refilling.
    @Test func steadyStateRenderingAllocatesNothing() throws {
        let device = try NullDevice(configuration: OutputConfiguration(sampleRate: 48_000, periodFrames: 256, periodCount: 2))
        let engine = QueueEngine(device: device)  // not started: this test is its render thread
        engine.startsBelowFloor = false  // which makes no rewind pass (the next test does)
        let stereo = try AudioFormat(sampleRate: 48_000, channelCount: 2)
        let mono441 = try AudioFormat(sampleRate: 44_100, channelCount: 1)
        let refill: BufferQueue.OutputCallback = { queue, buffer in try? queue.enqueue(buffer) }
        let plain = try BufferQueue(format: stereo, engine: engine, callback: refill)
        let converted = try BufferQueue(format: mono441, engine: engine, callback: refill)
        plain.isMeteringEnabled = true
        for _ in 0..<4 {
            try plain.enqueue(try filledBuffer(plain, sine(frequency: 440, rate: 48_000, frames: 700, channels: 2)))
            try converted.enqueue(try filledBuffer(converted, sine(frequency: 440, rate: 44_100, frames: 700, channels: 1)))
        }
        try plain.start()
        try converted.start()
        // `start` starts the engine's device too; stopped, it leaves this thread as the only
        // render thread (the queues' start commands wait in their rings for it).
        engine.stop()
        let buffer = UnsafeMutablePointer<Float>.allocate(capacity: 256 * 2)
        defer { buffer.deallocate() }
        var sampleTime: Int64 = 0
        func period() {
            engine.render(into: buffer, frames: 256, timestamp: RenderTimestamp(sampleTime: sampleTime, hostTime: HostTime.now()))
            sampleTime += 256
        }
        for _ in 0..<20 { period() }  // warm-up: first commands, converter priming
        try plain.setVolume(0.5, rampSeconds: 0.05)
        try converted.setPan(0.7)
        try converted.setPlaybackRate(1.25)
        spool_allocation_counting_begin()
        for _ in 0..<200 { period() }
        let allocations = spool_allocation_counting_end()
        #expect(allocations == 0)
        #expect(plain.framesPlayed > 200 * 256 / 2)
    }

    /// The output limiter bends a mix that passes full scale (two 0.8 tones) on the render
    /// thread with no allocation.
    @Test func theOutputLimiterAllocatesNothing() throws {
        let device = try NullDevice(configuration: OutputConfiguration(sampleRate: 48_000, periodFrames: 256, periodCount: 2))
        let engine = QueueEngine(device: device)
        engine.startsBelowFloor = false
        engine.outputLimiter = true
        let stereo = try AudioFormat(sampleRate: 48_000, channelCount: 2)
        let refill: BufferQueue.OutputCallback = { queue, buffer in try? queue.enqueue(buffer) }
        let queues = try (0..<2).map { _ in try BufferQueue(format: stereo, engine: engine, callback: refill) }
        for queue in queues {
            for _ in 0..<4 {
                try queue.enqueue(try filledBuffer(queue, sine(frequency: 440, rate: 48_000, frames: 700, channels: 2, amplitude: 0.8)))
            }
            try queue.start()
        }
        engine.stop()
        let buffer = UnsafeMutablePointer<Float>.allocate(capacity: 256 * 2)
        defer { buffer.deallocate() }
        var sampleTime: Int64 = 0, peak: Float = 0
        func period() {
            engine.render(into: buffer, frames: 256, timestamp: RenderTimestamp(sampleTime: sampleTime, hostTime: HostTime.now()))
            sampleTime += 256
        }
        for _ in 0..<20 { period() }
        spool_allocation_counting_begin()
        for _ in 0..<200 {
            period()
            for i in 0..<512 { peak = max(peak, abs(buffer[i])) }
        }
        let allocations = spool_allocation_counting_end()
        #expect(allocations == 0)
        #expect(peak <= 1 && peak > SoftLimiter.threshold, "the mix was bent: \(peak)")
    }

    /// The rewind pass (`renderStarts`), driven on this thread as a device's render thread
    /// would: a queue whose start is waiting for it is added into frames already mixed,
    /// converted from 44.1 kHz, with no allocation; a render before it leaves the queue alone.
    @Test func rewindPassAllocatesNothing() throws {
        let device = try NullDevice(configuration: OutputConfiguration(sampleRate: 48_000, periodFrames: 256, periodCount: 3))
        let engine = QueueEngine(device: device)  // never started: this test is its render thread
        let mono441 = try AudioFormat(sampleRate: 44_100, channelCount: 1)
        let queue = try BufferQueue(format: mono441, engine: engine) { _, _ in }
        try queue.enqueue(try filledBuffer(queue, sine(frequency: 440, rate: 44_100, frames: 4_410, channels: 1)))
        // What `start` does on a running device that rewinds: the mark, then the command.
        queue.slot.rewindPending.store(HostTime.now(), ordering: .releasing)
        queue.slot.commands.push(QueueCommand.start.rawValue)
        let frames = 768
        let buffer = UnsafeMutablePointer<Float>.allocate(capacity: frames * 2)
        defer { buffer.deallocate() }
        engine.render(into: buffer, frames: 256, timestamp: RenderTimestamp(sampleTime: 0, hostTime: HostTime.now()))
        #expect(queue.framesPlayed == 0, "a render before the rewind pass carried out the start")
        buffer.update(repeating: 0.25, count: frames * 2)
        spool_allocation_counting_begin()
        let started = engine.renderStarts(into: buffer, frames: frames, timestamp: RenderTimestamp(sampleTime: 256, hostTime: HostTime.now()))
        let allocations = spool_allocation_counting_end()
        #expect(allocations == 0)
        #expect(started)
        #expect(queue.framesPlayed > 600, "the pass rendered \(queue.framesPlayed) frames of the queue")
        // Added to what was there: the frames mixed before (0.25) with the tone (0.5 peak,
        // RMS 0.354) on top.
        let added = (200..<700).map { buffer[2 * $0] - 0.25 }
        #expect(abs(rms(added) - 0.354) < 0.02, "what the pass added has an RMS of \(rms(added))")
        // Started once: a second pass adds nothing.
        #expect(!engine.renderStarts(into: buffer, frames: frames, timestamp: RenderTimestamp(sampleTime: 256, hostTime: HostTime.now())))
    }

    /// A device that will not rewind after all (nothing left to rewrite, the server's timing
    /// late) says so, and the start waiting on it goes ahead in the next render, behind the
    /// buffer, instead of waiting out its period and 2 ms: the wait that put one start in a
    /// hundred at 10 ms on a 128 × 2 sound-server stream.
    @Test func aDeclinedRewindStartsTheQueueInTheNextRender() throws {
        let device = try NullDevice(configuration: OutputConfiguration(sampleRate: 48_000, periodFrames: 256, periodCount: 3))
        let engine = QueueEngine(device: device)  // never started: this test is its render thread
        let queue = try BufferQueue(format: stereo48, engine: engine) { _, _ in }
        try queue.enqueue(try filledBuffer(queue, sine(frequency: 440, rate: 48_000, frames: 4_800, channels: 2)))
        queue.slot.rewindPending.store(HostTime.now(), ordering: .releasing)
        queue.slot.commands.push(QueueCommand.start.rawValue)
        let buffer = UnsafeMutablePointer<Float>.allocate(capacity: 512)
        defer { buffer.deallocate() }
        engine.render(into: buffer, frames: 256, timestamp: RenderTimestamp(sampleTime: 0, hostTime: HostTime.now()))
        #expect(queue.framesPlayed == 0, "a render before the rewind pass carried out the start")
        spool_allocation_counting_begin()
        engine.declineStarts()
        let allocations = spool_allocation_counting_end()
        #expect(allocations == 0)
        engine.render(into: buffer, frames: 256, timestamp: RenderTimestamp(sampleTime: 256, hostTime: HostTime.now()))
        #expect(queue.framesPlayed > 200, "the start waited on after the decline: \(queue.framesPlayed) frames played")
        #expect(rms((0..<256).map { buffer[2 * $0] }) > 0.3, "the tone is in the render after the decline")
    }
}

import CAllocationCounter
import SpoolTestSupport
