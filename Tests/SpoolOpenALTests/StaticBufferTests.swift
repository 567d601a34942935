import Foundation
import SpoolCore
import Synchronization
import Testing
@testable import SpoolOpenAL
import SpoolTestSupport

@Suite("OpenAL static buffers")
struct StaticBufferTests {
    @Test func aSharedBufferPlaysOnEverySourceAndIsFreedOnlyAtTheEnd() throws {
        let device = try makeLoopback(periodFrames: 256)
        let samples = ramp(frames: 1000, channels: 2)
        var buffer: OpenALStaticBuffer? = try device.makeStaticBuffer(try pcm(samples))
        let name = try #require(buffer).name
        var sources = try (0..<3).map { _ in try device.makeStaticSource(playing: try #require(buffer)) }
        #expect(device.isBuffer(name))

        // Started 300 frames apart, each plays the whole buffer: the mix is their sum.
        try sources[0].play()
        var out = try device.render(frames: 300).samples
        try sources[1].play()
        out += try device.render(frames: 300).samples
        try sources[2].play()
        out += try device.render(frames: 1600).samples
        var expected = [Float](repeating: 0, count: 2200 * 2)
        for start in [0, 300, 600] {
            for i in 0..<2000 { expected[start * 2 + i] += samples[i] }
        }
        let worst = zip(out, expected).map { abs($0 - $1) }.max() ?? 0
        #expect(worst <= 1e-6, "largest difference \(worst)")
        #expect(sources.allSatisfy { !$0.isPlaying })

        // The owner lets go: the sources still hold it.
        buffer = nil
        #expect(device.isBuffer(name))
        sources[0].dispose()
        sources[1].dispose()
        #expect(device.isBuffer(name))
        try sources[2].play()
        #expect(try device.render(frames: 100).samples[0] == samples[0])
        sources[2].dispose()
        sources = []
        #expect(!device.isBuffer(name), "alIsBuffer is still true once nothing uses the buffer")
    }

    @Test func aLoopingSourceRepeatsUntilLoopingIsTurnedOff() throws {
        let device = try makeLoopback(periodFrames: 256)
        let samples = ramp(frames: 1000, channels: 2)
        let source = try device.makeStaticSource(playing: try device.makeStaticBuffer(try pcm(samples)))
        let finished = Atomic<Int>(0)
        source.setFinishedHandler { finished.add(1, ordering: .relaxed) }
        try source.setLooping(true)
        try source.play()
        let looped = try device.render(frames: 3500).samples
        #expect(mismatch(looped, Array((samples + samples + samples + samples).prefix(7000))) == nil)
        #expect(source.isPlaying)
        #expect(source.framesPlayed == 500)
        try source.setLooping(false)
        let tail = try device.render(frames: 1000).samples
        #expect(mismatch(tail[0..<1000], samples[1000..<2000]) == nil)
        #expect(tail[1000...].allSatisfy { $0 == 0 })
        #expect(!source.isPlaying)
        #expect(finished.load(ordering: .relaxed) == 1)
    }

    @Test func aMonoEffectPansPerSourceAndAStereoOneRefuses() throws {
        let device = try makeLoopback()
        let mono = try device.makeStaticBuffer(try pcm([Float](repeating: 0.5, count: 2000), channels: 1))
        let left = try device.makeStaticSource(playing: mono)
        let right = try device.makeStaticSource(playing: mono)
        try left.setPan(-1)
        try right.setPan(1)
        try right.setVolume(0.5)
        try left.play()
        try right.play()
        let out = try device.render(frames: 512).samples
        #expect(abs(out[600] - 0.5) < 1e-5)
        #expect(abs(out[601] - 0.25) < 1e-5)

        let stereo = try device.makeStaticSource(playing: try device.makeStaticBuffer(try pcm([0.1, 0.2])))
        expectError(.invalidParameter) { try stereo.setPan(0.5) }
        try stereo.setPan(0)
    }

    @Test func aBufferOfAnotherDeviceIsRefused() throws {
        let first = try makeLoopback()
        let second = try makeLoopback()
        let buffer = try first.makeStaticBuffer(try pcm([0.1, 0.2]))
        expectError(.invalidParameter) { try second.makeStaticSource(playing: buffer) }
    }
}
