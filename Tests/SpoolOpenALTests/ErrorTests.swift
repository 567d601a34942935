import Foundation
import SpoolCore
import Testing
@testable import SpoolOpenAL
import SpoolTestSupport

@Suite("OpenAL errors")
struct ErrorTests {
    let stereo48 = try! AudioFormat(sampleRate: 48_000, channelCount: 2)

    @Test func invalidParametersAreInvalidParameter() throws {
        let device = try makeLoopback()
        let voice = try OpenALStreamingSource(device: device, format: stereo48)
        expectError(.invalidParameter) { try voice.setVolume(1.5, rampSeconds: 0) }
        expectError(.invalidParameter) { try voice.setVolume(0.5, rampSeconds: -1) }
        expectError(.invalidParameter) { try voice.setVolume(0.5, rampSeconds: .infinity) }
        expectError(.invalidParameter) { try voice.setPan(1.5) }
        expectError(.invalidParameter) { try voice.setPlaybackRate(0.25) }
        expectError(.invalidParameter) { try voice.setPlaybackRate(3) }
        expectError(.invalidParameter) { try device.render(frames: -1) }
        expectError(.invalidParameter) { try OpenALDevice(.loopback(OutputConfiguration(sampleRate: 48_000, channelCount: 1))) }
        expectError(.invalidParameter) { try OpenALDevice(.loopback(OutputConfiguration(sampleRate: 44_100.5))) }
        expectError(.invalidParameter) { try makeLoopback(sourceLimit: 0) }
        expectError(.invalidParameter) { try OpenALConfiguration(periodFrames: 10).validate() }
        expectError(.invalidParameter) { try OpenALConfiguration(periodCount: 40).validate() }
        expectError(.invalidParameter) { try OpenALConfiguration(drivers: ["pulse;rm"]).validate() }
    }

    @Test func wrongFormatsAreInvalidParameter() throws {
        let device = try makeLoopback()
        let voice = try OpenALStreamingSource(device: device, format: stereo48)
        expectError(.invalidParameter) { try voice.enqueue(try pcm([0.1, 0.2], channels: 1)) }
        expectError(.invalidParameter) { try voice.enqueue(try pcm([0.1, 0.2], rate: 44_100)) }
        expectError(.invalidParameter) { try voice.enqueue(.empty(self.stereo48)) }
        // A streaming voice converts any rate the converter takes (1/16 to 16 times the
        // device's); a static buffer goes to OpenAL as it is, at a whole-number rate.
        let oddRate = try AudioFormat(sampleRate: 22_050.5, channelCount: 1)
        _ = try OpenALStreamingSource(device: device, format: oddRate)
        expectError(.invalidParameter) { try OpenALStreamingSource(device: device, format: AudioFormat(sampleRate: 1_000, channelCount: 1)) }
        expectError(.invalidParameter) { try device.makeStaticBuffer(try PCMBuffer(format: oddRate, samples: [0])) }
        expectError(.invalidParameter) { try device.makeStaticBuffer(.empty(self.stereo48)) }
        #expect(voice.queuedBufferCount == 0)
    }

    @Test func callsAfterDisposeAreInvalidState() throws {
        let device = try makeLoopback()
        let voice = try OpenALStreamingSource(device: device, format: stereo48)
        let log = VoiceLog(voice)
        try voice.enqueue(try pcm(ramp(frames: 100, channels: 2)))
        voice.dispose()
        #expect(log.count == 1, "dispose hands back what was queued")
        voice.dispose()
        expectError(.invalidState) { try voice.enqueue(try pcm([0, 0])) }
        expectError(.invalidState) { try voice.start() }
        expectError(.invalidState) { try voice.pause() }
        expectError(.invalidState) { try voice.stop(immediately: true) }
        expectError(.invalidState) { try voice.setVolume(0.5, rampSeconds: 0) }
        expectError(.invalidState) { try voice.setPan(0) }
        expectError(.invalidState) { try voice.setPlaybackRate(1) }
        #expect(!voice.isPlaying)
        #expect(voice.queuedBufferCount == 0)

        let effect = try device.makeStaticSource(playing: try device.makeStaticBuffer(try pcm([0, 0])))
        effect.dispose()
        expectError(.invalidState) { try effect.play() }
        #expect(device.sourcesInUse == 0)
    }

    @Test func callsAfterCloseAreInvalidState() throws {
        let device = try makeLoopback()
        let voice = try OpenALStreamingSource(device: device, format: stereo48)
        let log = VoiceLog(voice)
        try voice.enqueue(try pcm(ramp(frames: 100, channels: 2)))
        try voice.start()
        device.close()
        #expect(log.count == 1)
        #expect(log.finishedCount == 1)
        expectError(.invalidState) { try voice.enqueue(try pcm([0, 0])) }
        expectError(.invalidState) { try device.render(frames: 10) }
        expectError(.invalidState) { try OpenALStreamingSource(device: device, format: self.stereo48) }
        #expect(!device.isConnected)
        device.close()
    }

    @Test func onlyALoopbackDeviceRendersOnDemand() throws {
        let device = try OpenALDevice(.null(OutputConfiguration(sampleRate: 48_000, periodFrames: 480, periodCount: 2)))
        defer { device.close() }
        expectError(.invalidState) { try device.render(frames: 10) }
    }

    @Test func configuringOpenALAfterItStartedIsInvalidState() throws {
        _ = try makeLoopback()  // OpenAL Soft has now read its configuration in this process
        #expect(OpenALConfiguration.isLibraryStarted)
        let other = OpenALConfiguration(sampleRate: 32_000, periodFrames: 333, periodCount: 7)
        #expect(OpenALConfiguration.current != other)
        expectError(.invalidState) { try other.apply() }
        // What is in effect may be applied again.
        if let current = OpenALConfiguration.current { try current.apply() }
    }
}
