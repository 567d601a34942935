import Foundation
import SpoolCore
import Testing
@testable import SpoolOpenAL
import SpoolTestSupport

@Suite("OpenAL parameters")
struct ParameterTests {
    let stereo48 = try! AudioFormat(sampleRate: 48_000, channelCount: 2)
    let mono48 = try! AudioFormat(sampleRate: 48_000, channelCount: 1)

    @Test func aVolumeStepGlidesOverOnePeriodThenHolds() throws {
        let device = try makeLoopback(periodFrames: 256)
        let voice = try OpenALStreamingSource(device: device, format: stereo48)
        try voice.enqueue(try pcm([Float](repeating: 0.5, count: 48_000)))
        try voice.start()
        _ = try device.render(frames: 512)
        try voice.setVolume(0.5, rampSeconds: 0)
        let left = channel(try device.render(frames: 1024).samples, 0)
        // OpenAL Soft smooths the step itself: linear over the next mixer update (one period here).
        let steps = zip(left, left.dropFirst()).map { $0 - $1 }
        #expect(steps.allSatisfy { $0 >= 0 && $0 <= 0.25 / 256 + 1e-6 })
        #expect(left[0] > 0.49)
        #expect(left[256...].allSatisfy { $0 == 0.25 })
        #expect(voice.volume == 0.5)
    }

    @Test func aVolumeRampFollowsItsLineWithinOnePeriodsStep() throws {
        let device = try makeLoopback(periodFrames: 256)
        let voice = try OpenALStreamingSource(device: device, format: stereo48)
        try voice.enqueue(try pcm([Float](repeating: 0.25, count: 48_000)))
        try voice.start()
        _ = try device.render(frames: 512)
        try voice.setVolume(0, rampSeconds: 0.1)  // 4800 frames
        let left = channel(try device.render(frames: 6000).samples, 0)
        var worst: Float = 0
        for j in 0..<4800 { worst = max(worst, abs(left[j] - 0.25 * (1 - Float(j) / 4800))) }
        #expect(worst < 0.003, "largest distance from the line: \(worst)")
        #expect(zip(left, left.dropFirst()).allSatisfy { $1 <= $0 })
        #expect(left[5056...].allSatisfy { $0 == 0 })
        #expect(voice.volume == 0)
    }

    @Test(arguments: [-1, -0.5, 0, 0.5, 1] as [Float])
    func monoPanFollowsTheBalanceLaw(pan: Float) throws {
        let device = try makeLoopback(periodFrames: 256)
        let voice = try OpenALStreamingSource(device: device, format: mono48)
        try voice.setPan(pan)
        try voice.enqueue(try PCMBuffer(format: mono48, samples: sine(frequency: 750, frames: 9600, channels: 1)))
        try voice.start()
        let out = try device.render(frames: 9600).samples
        let left = rms(channel(out, 0)[960..<8640]), right = rms(channel(out, 1)[960..<8640])
        let input = 0.5 / 2.squareRoot()
        // Unity at the centre and on the near side, cos(|p| · π/2) on the far side.
        let far = Float(cos(Double(abs(pan)) * .pi / 2))
        let law: (left: Float, right: Float) = pan < 0 ? (1, far) : (far, 1)
        print(String(format: "mono pan %+.1f: left %.3f dB (law %.3f), right %.3f dB (law %.3f)", pan,
                     decibels(left / input), decibels(Double(law.left)), decibels(right / input), decibels(Double(law.right))))
        for (measured, expected, side) in [(left, Double(law.left), "left"), (right, Double(law.right), "right")] {
            if expected < 1e-3 {
                #expect(measured / input < 1e-3, "\(side) at pan \(pan) should be silent, is \(decibels(measured / input)) dB")
            } else {
                let error = decibels(measured / input) - decibels(expected)
                #expect(abs(error) < 0.1, "\(side) at pan \(pan): \(decibels(measured / input)) dB, law \(decibels(expected)) dB")
            }
        }
    }

    @Test func aPanChangeGlidesRatherThanJumps() throws {
        let device = try makeLoopback(periodFrames: 256)
        let voice = try OpenALStreamingSource(device: device, format: mono48)
        try voice.enqueue(try PCMBuffer(format: mono48, samples: [Float](repeating: 0.5, count: 4800)))
        try voice.start()
        _ = try device.render(frames: 512)
        try voice.setPan(1)
        let left = channel(try device.render(frames: 512).samples, 0)
        let start: Float = 0.5  // a mono source at the centre plays at unity on both sides
        #expect(zip(left, left.dropFirst()).allSatisfy { $1 <= $0 && $0 - $1 <= start / 256 + 1e-5 })
        #expect(left[256...].allSatisfy { abs($0) < 1e-6 })
    }

    @Test func stereoPanBalancesLikeTheBufferQueue() throws {
        let device = try makeLoopback()
        let voice = try OpenALStreamingSource(device: device, format: stereo48)
        try voice.setPan(0.5)
        var samples: [Float] = []
        for _ in 0..<1000 { samples += [0.5, 0.3] }
        try voice.enqueue(try pcm(samples))
        try voice.start()
        let out = try device.render(frames: 512).samples
        // Balanced right by 0.5: the far (left) side at cos(0.5 · π/2), the near side untouched.
        #expect(abs(out[200] - 0.5 * Float(cos(Double.pi / 4))) <= 1e-7)
        #expect(out[201] == 0.3)
    }

    @Test(arguments: [0.5, 1.5, 2] as [Float])
    func playbackRateScalesTheFrequency(rate: Float) throws {
        let device = try makeLoopback()
        let voice = try OpenALStreamingSource(device: device, format: mono48)
        try voice.setPlaybackRate(rate)
        #expect(voice.playbackRate == rate)
        try voice.enqueue(try PCMBuffer(format: mono48, samples: sine(frequency: 1_000, frames: 48_000, channels: 1)))
        try voice.start()
        let left = channel(try device.render(frames: 12_000).samples, 0)
        let measured = zeroCrossingFrequency(left[1000..<11_000], rate: 48_000)
        #expect(abs(measured / (1_000 * Double(rate)) - 1) < 0.005, "\(measured) Hz at rate \(rate)")
        // The converter takes source frames a little ahead of what it plays (its filter's reach).
        let ahead = voice.framesPlayed - Int(12_000 * rate)
        #expect((0...1_440).contains(ahead), "framesPlayed \(voice.framesPlayed) at rate \(rate)")
        // And every frame plays: drained, it has taken the whole buffer.
        try voice.stop(immediately: false)
        _ = try device.render(frames: Int(48_000 / rate) + 2_048)
        #expect(voice.framesPlayed == 48_000)
        #expect(!voice.isPlaying)
    }
}
