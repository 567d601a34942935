import Foundation
import SpoolCore
import Testing
import SpoolTestSupport

/// Volume, pan and playback rate, set before and during play, and underruns, on every back-end.
@Suite("Seam conformance: volume, pan, rate, underruns")
struct SeamParameterTests {
    // MARK: Volume

    @Test(arguments: Backend.allCases)
    func aVolumeSetBeforeStartAppliesFromTheFirstFrameWithNoRamp(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(stereo48)
        try voice.setVolume(0.3)
        try voice.enqueue(try constant(0.5, frames: 2000))
        try voice.start()
        let out = try rig.render(2000)
        let worst = out.map { abs($0 - 0.15) }.max() ?? 1
        #expect(worst <= 1e-7, "differs from 0.3 × 0.5 by up to \(worst)")
    }

    @Test(arguments: Backend.allCases)
    func threeVoicesOnOneBufferMixToExactlyTheirSum(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let tone = try sine(440, frames: 4800, format: stereo48)
        var voices: [any PlaybackVoice] = []
        for _ in 0..<3 {
            let voice = try rig.voice(stereo48)
            try voice.setVolume(0.3)
            try voice.enqueue(tone)
            voices.append(voice)
        }
        for voice in voices { try voice.start() }
        let out = try rig.render(4800)
        let expected = tone.samples.map { 0.9 * $0 }
        #expect(snr(out, expected) >= 120, "three voices at 0.3: \(snr(out, expected)) dB against 0.9 × the buffer")
    }

    @Test(arguments: Backend.allCases)
    func aVolumeRampDuringPlayFollowsItsLine(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(stereo48)
        try voice.enqueue(try constant(0.25, frames: 48_000))
        try voice.start()
        _ = try rig.render(512)
        try voice.setVolume(0, rampSeconds: 0.1)  // 4800 frames
        let left = channel(try rig.render(6000), 0)
        var worst: Float = 0
        for j in 0..<4800 { worst = max(worst, abs(left[j] - 0.25 * (1 - Float(j) / 4800))) }
        #expect(worst < 0.004, "largest distance from the line: \(worst)")
        #expect(zip(left, left.dropFirst()).allSatisfy { $1 <= $0 + 1e-7 })
        #expect(left[5056...].allSatisfy { $0 == 0 })
    }

    @Test(arguments: Backend.allCases)
    func aVolumeSetWhilePausedIsWhatTheResumedFramesPlayAt(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(stereo48)
        try voice.enqueue(try constant(0.5, frames: 8000))
        try voice.start()
        _ = try rig.render(1024)
        try voice.pause()
        _ = try rig.render(512)
        try voice.setVolume(0.5)
        try voice.start()
        let out = channel(try rig.render(2048), 0)
        // Past the resume's fade-in (at most one declick time), exactly 0.5 × 0.5.
        #expect(out[256...].allSatisfy { abs($0 - 0.25) <= 1e-7 }, "plays at \(out[300])")
        #expect(out[0..<256].allSatisfy { $0 <= 0.25 + 1e-7 }, "the fade-in never overshoots")
    }

    // MARK: Pan

    /// The balance law, computed here from its definition: unity at the centre, the far side
    /// attenuated by cos(|p|·π/2).
    static func balance(_ pan: Float) -> (left: Double, right: Double) {
        let far = cos(Double(abs(pan)) * .pi / 2)
        return pan < 0 ? (1, far) : (far, 1)
    }

    @Test(arguments: Backend.allCases)
    func aMonoSourceAtTheCentrePlaysAtUnityOnBothChannels(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(mono48)
        let tone = try sine(500, frames: 9600, format: mono48)
        try voice.enqueue(tone)
        try voice.start()
        let out = try rig.render(9600)
        for side in 0..<2 {
            #expect(snr(channel(out, side), tone.samples) >= 90, "side \(side): \(snr(channel(out, side), tone.samples)) dB against the source")
        }
    }

    @Test(arguments: Backend.allCases, [-1, -0.5, 0.5, 1] as [Float])
    func aMonoSourceOffCentreFollowsTheBalanceLaw(_ kind: Backend, pan: Float) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(mono48)
        try voice.setPan(pan)
        try voice.enqueue(try sine(750, frames: 9600, format: mono48))
        try voice.start()
        let out = try rig.render(9600)
        let input = 0.5 / 2.squareRoot()
        let law = Self.balance(pan)
        for (side, expected) in [(0, law.left), (1, law.right)] {
            let measured = rms(channel(out, side)[960..<8640]) / input
            if expected < 1e-6 {
                #expect(measured < 1e-3, "side \(side) at pan \(pan) should be silent: \(20 * log10(measured)) dB")
            } else {
                #expect(abs(20 * log10(measured / expected)) < 0.1,
                        "side \(side) at pan \(pan): \(20 * log10(measured)) dB, law \(20 * log10(expected)) dB")
            }
        }
    }

    @Test(arguments: Backend.allCases, [-0.6, 0.3] as [Float])
    func aStereoSourceIsBalancedFromTheFirstFrame(_ kind: Backend, pan: Float) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(stereo48)
        try voice.setPan(pan)
        let source = try identityBuffer(0..<2000)
        try voice.enqueue(source)
        try voice.start()
        let out = try rig.render(2000)
        let law = Self.balance(pan)
        let expected = source.samples.enumerated().map { i, v in Float(Double(v) * (i % 2 == 0 ? law.left : law.right)) }
        let worst = zip(out, expected).map { abs($0 - $1) }.max() ?? 1
        #expect(worst <= 1e-6, "differs from the balanced source by up to \(worst)")
    }

    // MARK: Playback rate

    @Test(arguments: Backend.allCases, [0.8, 1.25] as [Float])
    func aRateSetBeforeStartPlaysEveryFrameAtThatSpeed(_ kind: Backend, rate: Float) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(mono48)
        let log = Recorder(voice)
        try voice.setPlaybackRate(rate)
        try voice.enqueue(try sine(1000, frames: 24_000, format: mono48))
        try voice.start()
        try voice.stop(immediately: false)
        let out = try rig.render(until: { !log.finishes.isEmpty }, limit: 48_000, chunk: 64)
        #expect(log.finishes == ["playedOut"])
        #expect(voice.framesPlayed == 24_000, "every source frame plays")
        let sounding = channel(out, 0)
        let last = (sounding.lastIndex { abs($0) > 1e-3 } ?? 0) + 1
        let expected = 24_000 / Double(rate)
        #expect(abs(Double(last) - expected) <= 64, "sounds for \(last) frames, expected \(expected)")
        let frequency = zeroCrossingFrequency(sounding[1000..<(last - 1000)], rate: 48_000)
        #expect(abs(frequency / (1000 * Double(rate)) - 1) < 0.002, "plays at \(frequency) Hz")
    }

    @Test(arguments: Backend.allCases)
    func aRateChangeWhilePlayingKeepsEveryFrame(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(mono48)
        let log = Recorder(voice)
        try voice.enqueue(try sine(1000, frames: 24_000, format: mono48))
        try voice.start()
        try voice.stop(immediately: false)
        _ = try rig.render(4800)
        try voice.setPlaybackRate(1.5)
        let out = try rig.render(until: { !log.finishes.isEmpty }, limit: 48_000, chunk: 64)
        #expect(log.finishes == ["playedOut"])
        #expect(voice.framesPlayed == 24_000)
        let sounding = channel(out, 0)
        let last = (sounding.lastIndex { abs($0) > 1e-3 } ?? 0) + 1
        // 19 200 source frames at 1.5 after the change (give or take what was converted ahead).
        #expect(abs(Double(last) - 12_800) <= 800, "sounds for \(last) frames after the change")
        let frequency = zeroCrossingFrequency(sounding[2400..<(last - 1000)], rate: 48_000)
        #expect(abs(frequency / 1500 - 1) < 0.002, "plays at \(frequency) Hz")
    }

    @Test(arguments: Backend.allCases)
    func pauseAndResumeUnderConversionLoseNoFrame(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let format = try AudioFormat(sampleRate: 44_100, channelCount: 1)
        let voice = try rig.voice(format)
        let log = Recorder(voice)
        try voice.enqueue(try sine(1000, frames: 22_050, format: format))
        try voice.start()
        try voice.stop(immediately: false)
        var out = channel(try rig.render(9600), 0)
        try voice.pause()
        let silence = channel(try rig.render(4096), 0)
        #expect(silence[512...].allSatisfy { $0 == 0 }, "silent once the fade is over")
        let pausedAt = voice.framesPlayed
        #expect(try rig.render(1024).allSatisfy { $0 == 0 })
        #expect(voice.framesPlayed == pausedAt, "the position holds while paused")
        try voice.start()
        out += channel(try rig.render(until: { !log.finishes.isEmpty }, limit: 48_000), 0)
        #expect(log.finishes == ["playedOut"])
        #expect(voice.framesPlayed == 22_050, "every source frame plays")
        // What sounds, the pause's silence left out, is the whole buffer at 48 kHz (give or
        // take the two fades).
        let sounding = (out + silence).filter { $0 != 0 }.count
        #expect(abs(sounding - 24_000) <= 2 * 256 + 8, "sounds for \(sounding) frames, 24 000 expected")
    }

    // MARK: Underruns

    @Test(arguments: Backend.allCases)
    func anUnderrunIsCountedOnceAndPlayingRecoversWithTheNextBuffer(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(stereo48)
        let log = Recorder(voice)
        try voice.enqueue(try identityBuffer(0..<1000))
        try voice.enqueue(try identityBuffer(1000..<2000))
        try voice.start()
        let dry = try rig.render(3072)
        #expect(Array(dry[0..<4000]) == identityFrames(0..<2000))
        #expect(dry[4000...].allSatisfy { $0 == 0 })
        #expect(voice.underrunCount == 1)
        #expect(voice.isPlaying)
        _ = try rig.render(512)
        #expect(voice.underrunCount == 1, "still the same underrun")
        try voice.enqueue(try identityBuffer(9000..<10_500))
        let resumed = try rig.render(2048)
        #expect(Array(resumed[0..<3000]) == identityFrames(9000..<10_500))
        #expect(voice.underrunCount == 2)
        #expect(voice.framesPlayed == 3500)
        #expect(log.consumed.count == 3)
    }

    @Test(arguments: Backend.allCases)
    func anUnderrunAtAConvertedRateLosesNoFrame(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let format = try AudioFormat(sampleRate: 44_100, channelCount: 1)
        let voice = try rig.voice(format)
        try voice.enqueue(try sine(1000, frames: 4410, format: format))
        try voice.start()
        let first = channel(try rig.render(9600), 0)
        #expect(voice.underrunCount == 1)
        #expect(voice.framesPlayed == 4410, "the whole first buffer played")
        let sounding = (first.lastIndex { abs($0) > 1e-3 } ?? 0) + 1
        #expect(abs(sounding - 4800) <= 24, "the first buffer sounds for \(sounding) frames, 4800 expected")
        try voice.enqueue(try sine(1000, frames: 4410, format: format))
        _ = try rig.render(9600)
        #expect(voice.framesPlayed == 8820)
        #expect(voice.underrunCount == 2)
    }

    @Test(arguments: Backend.allCases, [490, 4410] as [Int])
    func theEndOfADrainedVoiceIsNoUnderrun(_ kind: Backend, frames: Int) throws {
        let rig = try Rig(kind)
        let format = try AudioFormat(sampleRate: 44_100, channelCount: 2)
        let voice = try rig.voice(format)
        let log = Recorder(voice)
        try voice.enqueue(try sine(440, frames: frames, format: format))
        try voice.start()
        try voice.stop(immediately: false)
        _ = try rig.render(12_000)
        #expect(log.finishes == ["playedOut"])
        #expect(voice.underrunCount == 0)
        #expect(voice.framesPlayed == frames)
    }

    // MARK: Ergonomics

    @Test(arguments: Backend.allCases)
    func theShortFormsWorkOnAnyVoice(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let voice: any PlaybackVoice = try rig.voice(stereo48)
        try voice.setVolume(0.5)
        try voice.enqueue(try constant(0.5, frames: 512))
        try voice.start()
        let out = try rig.render(512)
        #expect(out.allSatisfy { abs($0 - 0.25) <= 1e-7 })
        try voice.stop()
        #expect(voice.state == .stopped)
    }
}
