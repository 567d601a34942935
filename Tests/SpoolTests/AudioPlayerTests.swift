import Dispatch
import Foundation
import Spool
import Testing
import SpoolTestSupport

/// `AudioPlayer` on both back-ends, rendered offline: every test compares the rendered frames
/// with the source's own.
@Suite("AudioPlayer on both back-ends")
struct AudioPlayerTests {
    // MARK: Playing

    @Test(arguments: Backend.allCases)
    func playsEveryFrameOnceThenFinishesSuccessfullyOnce(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let (player, log) = try makePlayer(rig, identityBuffer(0..<12_000))
        try player.play()
        #expect(player.isPlaying)
        let out = try rig.render(until: { player.state == .stopped }, limit: 48_000) + rig.render(1024)
        #expect(decodeIdentity(out).compactMap { $0 } == Array(0..<12_000))
        #expect(log.events == ["finished(true)"])
        #expect(player.currentTime == 0, "playing to the end leaves currentTime at 0, as AVAudioPlayer does")
    }

    @Test(arguments: Backend.allCases)
    func playsADecodedFileSampleForSampleAsItsDecoderDecodesIt(_ kind: Backend) throws {
        let path = fixture("wav-48000-stereo-f32.wav")
        let reference = try DecoderRegistry.shared.open(path: path).decodeAll()
        let rig = try Rig(kind)
        let (player, log) = try makePlayer(rig, url: URL(fileURLWithPath: path))
        #expect(player.duration == reference.duration)
        #expect(player.url?.path == path)
        try player.play()
        let out = try rig.render(until: { player.state == .stopped }, limit: 96_000)
        let played = Array(out.prefix(reference.frameCount * 2))
        #expect(out[(reference.frameCount * 2)...].allSatisfy { $0 == 0 }, "nothing after the last frame")
        #expect(snr(played, reference.samples) >= 80, "\(snr(played, reference.samples)) dB")
        #expect(log.events == ["finished(true)"])
    }

    @Test(arguments: Backend.allCases)
    func aTruncatedFilePlaysItsPrefixThenReportsTheDecodeError(_ kind: Backend) throws {
        let path = fixture("broken/truncated.wav")
        let rig = try Rig(kind, rate: 44_100)
        let (player, log) = try makePlayer(rig, url: URL(fileURLWithPath: path))
        try player.play()
        let out = try rig.render(until: { player.state == .stopped }, limit: 44_100) + rig.render(512)
        let last = (0..<(out.count / 2)).last { abs(out[$0 * 2]) > 1e-4 || abs(out[$0 * 2 + 1]) > 1e-4 } ?? 0
        // The manifest: 13225 whole frames survive the cut.
        #expect(abs(last + 1 - 13_225) <= 2, "the prefix played up to frame \(last)")
        #expect(log.events == ["decodeError(truncated)", "finished(false)"])
    }

    @Test(arguments: Backend.allCases)
    func aGaplessMP3LoopsWithoutItsEncoderDelayOrPadding(_ kind: Backend) throws {
        let path = fixture("mp3-44100-stereo.mp3")
        let pass = try DecoderRegistry.shared.open(path: path).decodeAll()
        #expect(pass.frameCount == 22_050, "the decoder trims LAME's delay and padding")
        let rig = try Rig(kind, rate: 44_100)
        let (player, log) = try makePlayer(rig, url: URL(fileURLWithPath: path))
        try player.setNumberOfLoops(1)
        try player.play()
        let out = try rig.render(until: { player.state == .stopped }, limit: 4 * 44_100) + rig.render(1024)
        let twice = pass.samples + pass.samples
        #expect(snr(Array(out.prefix(twice.count)), twice) >= 80, "the seam is the file's end followed by its start")
        #expect(out[twice.count...].allSatisfy { $0 == 0 }, "nothing after the second pass")
        #expect(log.events == ["finished(true)"])
    }

    @Test
    func bothBackEndsPlayAConvertedMonoFileToTheSameSamples() throws {
        // 22.05 kHz mono into 48 kHz stereo: each back-end converts, and they agree.
        let path = fixture("mp3-22050-mono-vbr.mp3")
        var outputs: [[Float]] = []
        for kind in Backend.allCases {
            let rig = try Rig(kind)
            let (player, log) = try makePlayer(rig, url: URL(fileURLWithPath: path))
            try player.play()
            let out = try rig.render(until: { player.state == .stopped }, limit: 4 * 48_000) + rig.render(4096)
            #expect(log.events == ["finished(true)"], "\(kind)")
            outputs.append(out)
        }
        let frames = Int((Double(11_025) * 48_000 / 22_050).rounded())
        for out in outputs {
            let last = ((0..<(out.count / 2)).last { abs(out[$0 * 2]) > 1e-3 } ?? 0) + 1
            #expect(abs(last - frames) <= 48, "\(last) frames sound, \(frames) expected")
            #expect(channel(out, 0) == channel(out, 1), "a mono source at pan 0 plays the same on both channels")
        }
        let n = min(outputs[0].count, outputs[1].count)
        #expect(snr(Array(outputs[1].prefix(n)), Array(outputs[0].prefix(n))) >= 80,
                "queue and OpenAL agree: \(snr(Array(outputs[1].prefix(n)), Array(outputs[0].prefix(n)))) dB")
    }

    @Test(arguments: Backend.allCases)
    func encodedBytesInMemoryAndACachedFilePlayTheSameFrames(_ kind: Backend) throws {
        let path = fixture("flac-44100-stereo-s16.flac")
        let reference = try DecoderRegistry.shared.open(path: path).decodeAll()
        let cache = try BufferCache(budgetBytes: 16 << 20)
        let rig = try Rig(kind, rate: 44_100)
        let queue = DispatchQueue(label: "test.player.events")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let fromMemory = try AudioPlayer(data: bytes, typeHint: "flac", backend: rig.backend, eventQueue: queue)
        let fromCache = try AudioPlayer(contentsOf: URL(fileURLWithPath: path), cache: cache, backend: rig.backend,
                                        eventQueue: queue)
        #expect(fromMemory.data == bytes && fromMemory.url == nil)
        #expect(fromCache.url?.path == path && cache.stats.itemCount == 1)
        for player in [fromMemory, fromCache] {
            try player.setPan(player === fromMemory ? -1 : 1)
            try player.play()
        }
        // Hard left and hard right: each channel pair carries one player.
        let out = try rig.render(until: { !fromMemory.isPlaying && !fromCache.isPlaying }, limit: 4 * 44_100)
        let left = Array(channel(out, 0).prefix(reference.frameCount))
        let right = Array(channel(out, 1).prefix(reference.frameCount))
        // A stereo source is balanced by PanLaw: hard left keeps its left channel alone.
        #expect(snr(left, channel(reference.samples, 0)) >= 80, "the player from memory, on the left")
        #expect(snr(right, channel(reference.samples, 1)) >= 80, "the player from the cache, on the right")
    }

    @Test(arguments: Backend.allCases)
    func anEventStreamReceivesWhatTheDelegateReceives(_ kind: Backend) async throws {
        let rig = try Rig(kind)
        let (player, log) = try makePlayer(rig, identityBuffer(0..<2_000))
        let stream = player.events
        try player.play()
        _ = try rig.render(until: { player.state == .stopped }, limit: 48_000)
        var received: [String] = []
        for await event in stream {
            received.append("\(event)")
            if case .finishedPlaying = event { break }
        }
        #expect(received == ["state: stopped", "finished playing (successfully: true)"])
        #expect(log.events == ["finished(true)"])
    }

    /// A stream taken after the player finished begins with its state, so a loop over it
    /// learns at once that the end already came, instead of waiting for ever.
    @Test(arguments: Backend.allCases)
    func aStreamTakenLateBeginsWithTheStateThePlayerIsIn(_ kind: Backend) async throws {
        let rig = try Rig(kind)
        let (player, log) = try makePlayer(rig, identityBuffer(0..<2_400))
        try player.play()
        let playing = player.events
        _ = try rig.render(until: { player.state == .stopped }, limit: 48_000)
        #expect(log.events == ["finished(true)"])
        let late = player.events
        var first: AudioPlayerEvent?
        for await event in late {
            first = event
            break
        }
        guard case .state(.stopped)? = first else {
            Issue.record("the late stream began with \(first.map { "\($0)" } ?? "nothing")")
            return
        }
        for await event in playing {
            guard case .state(.playing) = event else {
                Issue.record("a stream taken while playing began with \(event)")
                return
            }
            break
        }
    }

    // MARK: Transport

    @Test(arguments: Backend.allCases)
    func pauseHoldsTheFrameItEndsOnAndPlayResumesThere(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let (player, log) = try makePlayer(rig, identityBuffer(0..<20_000))
        try player.play()
        var out = try rig.render(4800)
        try player.pause()
        out += try rig.render(1024)
        #expect(player.state == .paused)
        let held = player.currentFrame
        let silence = try rig.render(2048)
        #expect(silence.allSatisfy { $0 == 0 }, "a paused player plays silence")
        #expect(player.currentFrame == held)
        try Self.expectResumeOnTheHeldFrame(player, rig, before: out, held: held, frames: 20_000)
        #expect(log.events == ["finished(true)"])
    }

    /// Resumes a paused player and expects every one of its `frames` identity frames to play
    /// once across the pause: the fade-out ends on the `held` frame at gain 0 and the fade-in
    /// starts there at gain 0, so that frame itself may not be seen; none other is lost.
    static func expectResumeOnTheHeldFrame(_ player: AudioPlayer, _ rig: Rig, before out: [Float], held: Int, frames: Int,
                                           sourceLocation: SourceLocation = #_sourceLocation) throws {
        try player.play()
        let resumed = try rig.render(until: { player.state == .stopped }, limit: 2 * frames)
        let before = runs(decodeIdentity(out).compactMap { $0 }), after = runs(decodeIdentity(resumed).compactMap { $0 })
        #expect(before == "0..<\(held)" || before == "0..<\(held - 1)", "before the pause: \(before); held at \(held)",
                sourceLocation: sourceLocation)
        #expect(after == "\(held + 1)..<\(frames)" || after == "\(held)..<\(frames)", "after it: \(after); held at \(held)",
                sourceLocation: sourceLocation)
    }

    /// From the moment `pause()` returns, `currentTime` reads the frame play resumes on, and
    /// holds it; both back-ends fade out over the same 5 ms (220 frames at 44.1 kHz) whatever
    /// the device's period. (It read the pause's frame, then moved on by the fade once that
    /// was rendered: 1.004989 s on the queue, 1.011610 s on OpenAL, whose fade was one mixer
    /// update of 512 frames.)
    @Test(arguments: Backend.allCases)
    func currentTimeWhilePausedIsTheFrameItResumesOnFromThePause(_ kind: Backend) throws {
        let rig = try Rig(kind, rate: 44_100, periodFrames: 512)
        let format = try AudioFormat(sampleRate: 44_100, channelCount: 2)
        let (player, _) = try makePlayer(rig, try PCMBuffer(format: format, samples: identityFrames(0..<88_200)))
        try player.play()
        var out = try rig.render(44_100)
        try player.pause()
        let held = player.currentFrame, time = player.currentTime
        #expect(held == 44_100 + 220, "\(kind): the pause holds the frame its 5 ms fade ends on, not \(held)")
        out += try rig.render(1_000)
        #expect(player.currentFrame == held && player.currentTime == time, "steady while the fade and the pause render")
        let silence = try rig.render(2_048)
        #expect(silence.allSatisfy { $0 == 0 })
        #expect(player.currentFrame == held)
        let fade = decodeIdentity(Array(out.dropFirst(44_100 * 2))).compactMap { $0 }
        #expect((219...220).contains(fade.count), "\(kind): the fade-out sounds \(fade.count) frames")
        try Self.expectResumeOnTheHeldFrame(player, rig, before: out, held: held, frames: 88_200)
    }

    @Test(arguments: Backend.allCases)
    func seekingWhilePlayingPlaysOnFromTheExactFrame(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let (player, _) = try makePlayer(rig, identityBuffer(0..<30_000))
        try player.play()
        _ = try rig.render(4800)
        try player.setCurrentTime(Double(20_000) / 48_000)
        #expect(player.currentFrame == 20_000)
        let out = try rig.render(until: { player.state == .stopped }, limit: 48_000)
        let indices = decodeIdentity(out).compactMap { $0 }
        guard let jump = indices.firstIndex(where: { $0 >= 20_000 }) else {
            Issue.record("the seek target never played")
            return
        }
        #expect(Array(indices[jump...]) == Array(20_000..<30_000))
        #expect(indices[..<jump].allSatisfy { $0 < 20_000 }, "only the fade-out of the old position comes first")
    }

    @Test(arguments: Backend.allCases)
    func seekingWhilePausedOrStoppedStartsThereOnPlay(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let (player, _) = try makePlayer(rig, identityBuffer(0..<30_000))
        try player.play()
        _ = try rig.render(4800)
        try player.pause()
        _ = try rig.render(1024)
        try player.seek(toFrame: 15_000)
        #expect(player.currentFrame == 15_000)
        #expect(player.state == .paused)
        _ = try rig.render(1024)
        try player.play()
        let resumed = decodeIdentity(try rig.render(2048)).compactMap { $0 }
        #expect(resumed.first == 15_000)
        #expect(resumed == Array(15_000..<(15_000 + resumed.count)))

        try player.stop()
        _ = try rig.render(1024)
        let stoppedAt = player.currentFrame
        #expect(player.state == .stopped)
        #expect(stoppedAt > 15_000, "stop keeps currentTime, as AVAudioPlayer does")
        try player.seek(toFrame: 25_000)
        try player.play()
        let again = decodeIdentity(try rig.render(2048)).compactMap { $0 }
        #expect(again.first == 25_000)
    }

    @Test(arguments: Backend.allCases)
    func playAtTimeIsHeardOnItsFrame(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let (player, _) = try makePlayer(rig, identityBuffer(0..<4_800))
        try player.prepareToPlay()
        #expect(player.state == .prepared)
        try player.play(atTime: Double(rig.hostTime(ofFrame: 3_000)) / 1e9)
        let out = try rig.render(9_600)
        #expect(firstSoundingFrame(out) == 3_000)
        #expect(decodeIdentity(out).compactMap { $0 } == Array(0..<4_800))
    }

    @Test(arguments: Backend.allCases)
    func aPlayerLetGoWhilePlayingFadesOutAndFreesItsVoice(_ kind: Backend) throws {
        let rig = try Rig(kind)
        var player: AudioPlayer? = try AudioPlayer(buffer: constant(0.5, frames: 48_000), backend: rig.backend)
        weak let gone = player
        try player?.play()
        let before = try rig.render(2_400)
        #expect(channel(before, 0).allSatisfy { abs($0 - 0.5) < 1e-4 })
        player = nil
        #expect(gone == nil, "nothing keeps a player its program let go of")
        let after = channel(try rig.render(4_800), 0)
        #expect(after.allSatisfy { $0 <= 0.5 + 1e-4 })
        #expect(after[480...].allSatisfy { $0 == 0 }, "silent within 10 ms")
        // Its voice went back to the back-end: a new one plays on the same rig.
        let next = try AudioPlayer(buffer: constant(0.25, frames: 4_800), backend: rig.backend)
        try next.play()
        #expect(channel(try rig.render(1_000), 0).allSatisfy { abs($0 - 0.25) < 1e-4 })
    }

    @Test
    func aVoiceTakenAwayEndsThePlayUnsuccessfullyAndTheNextPlayGetsANewOne() throws {
        // OpenAL with one source: a voice of higher priority takes the player's.
        let device = try OpenALDevice(.loopback(OutputConfiguration(sampleRate: 48_000, channelCount: 2,
                                                                    periodFrames: 256, periodCount: 2)), sourceLimit: 1)
        let backend = OpenALBackend(device: device)
        let queue = DispatchQueue(label: "test.player.events")
        let player = try AudioPlayer(buffer: constant(0.5, frames: 48_000), backend: backend, eventQueue: queue)
        let log = PlayerEventLog(queue: queue)
        player.delegate = log
        try player.play()
        _ = try device.render(frames: 1_024)
        let thief = try backend.makeVoice(format: stereo48, priority: 10)
        _ = try device.render(frames: 1_024)
        let events = log.events
        #expect(events.count == 2 && events.first?.hasPrefix("outputLost(") == true && events.last == "finished(false)",
                "\(events)")
        #expect(player.state == .stopped)
        thief.dispose()
        try player.play()
        #expect(channel(try device.render(frames: 1_024).samples, 0).allSatisfy { abs($0 - 0.5) < 1e-4 },
                "a new voice plays from the start")
    }

    // MARK: Loops

    @Test(arguments: Backend.allCases)
    func loopsJoinEndToStartWithNothingBetween(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let (player, log) = try makePlayer(rig, identityBuffer(0..<5_000))
        try player.setNumberOfLoops(2)
        try player.play()
        let out = try rig.render(until: { player.state == .stopped }, limit: 48_000) + rig.render(512)
        let pass = Array(0..<5_000)
        #expect(decodeIdentity(out).prefix(15_000).map { $0 ?? -1 } == pass + pass + pass, "three passes, seams exact")
        #expect(decodeIdentity(out).compactMap { $0 }.count == 15_000)
        #expect(log.events == ["finished(true)"])
    }

    @Test(arguments: Backend.allCases)
    func endlessLoopsRunUntilStoppedWithEverySeamExact(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let (player, log) = try makePlayer(rig, identityBuffer(0..<3_000))
        try player.setNumberOfLoops(-1)
        try player.play()
        let out = try rig.render(4 * 3_000 + 100)
        #expect(player.isPlaying)
        #expect(player.currentFrame == 100, "currentTime counts within the pass playing")
        try player.stop()
        _ = try rig.render(1024)
        let pass = Array(0..<3_000)
        #expect(decodeIdentity(out).prefix(12_000).map { $0 ?? -1 } == pass + pass + pass + pass)
        #expect(log.events.isEmpty, "stop sends no event")
    }

    // MARK: Volume, rate, meters

    @Test(arguments: Backend.allCases)
    func aVolumeFadeFallsSmoothlyOverItsDuration(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let (player, _) = try makePlayer(rig, constant(0.5, frames: 48_000))
        try player.play()
        _ = try rig.render(2_400)
        try player.setVolume(0, fadeDuration: 0.1)
        #expect(player.volume == 0)
        let left = channel(try rig.render(9_600), 0)
        let steps = zip(left, left.dropFirst()).map { $1 - $0 }
        #expect(steps.allSatisfy { $0 <= 1e-6 }, "the fade never rises")
        // 0.5 over 4800 frames, with room for a back-end that ramps in mixer-update steps.
        #expect((steps.map { -$0 }.max() ?? 1) <= 0.5 / 4_800 * 20, "largest step \(steps.map { -$0 }.max() ?? 1)")
        #expect(left[2_400] > 0.1 && left[2_400] < 0.4, "half-way through, \(left[2_400])")
        #expect(left[6_000...].allSatisfy { abs($0) < 1e-4 }, "silent once the fade is over")
    }

    @Test(arguments: Backend.allCases)
    func varispeedScalesTheFrequencyAndTheDuration(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let (player, _) = try makePlayer(rig, sine(1_000, frames: 24_000, format: stereo48))
        try player.setRateMode(.varispeed)
        try player.setEnableRate(true)
        try player.setRate(1.5)
        try player.play()
        let out = try rig.render(until: { player.state == .stopped }, limit: 48_000)
        let left = channel(out, 0)
        let sounding = (left.lastIndex { abs($0) > 1e-3 } ?? 0) + 1
        #expect(abs(Double(sounding) - 16_000) <= 160, "\(sounding) frames for 24000 at 1.5×")
        let frequency = zeroCrossingFrequency(left[2_000..<14_000], rate: 48_000)
        #expect(abs(frequency - 1_500) <= 15, "\(frequency) Hz")
    }

    @Test(arguments: [(Backend.queue, 0.5), (.queue, 2.0), (.openAL, 0.5), (.openAL, 2.0)])
    func timeStretchScalesTheDurationAndKeepsThePitch(_ kind: Backend, _ rate: Double) throws {
        let rig = try Rig(kind)
        let (player, log) = try makePlayer(rig, sine(1_000, frames: 48_000, format: stereo48))
        #expect(player.rateMode == .timeStretch, "pitch kept by default, as in AVAudioPlayer")
        try player.setEnableRate(true)
        try player.setRate(Float(rate))
        try player.play()
        let expected = 48_000 / rate
        var out = try rig.render(Int(expected / 2))
        // Half-way through the output, the position is half-way through the source (within
        // the stretcher's own tolerance of a few tens of milliseconds).
        #expect(abs(Double(player.currentFrame) - 24_000) <= 0.04 * 48_000 + 256, "\(player.currentFrame) at half-way")
        out += try rig.render(until: { player.state == .stopped }, limit: 4 * 48_000)
        let left = channel(out, 0)
        let sounding = (left.lastIndex { abs($0) > 1e-3 } ?? 0) + 1
        #expect(abs(Double(sounding) - expected) <= expected * 0.01, "\(sounding) frames for \(expected)")
        let middle = left[Int(expected * 0.2)..<Int(expected * 0.8)]
        let frequency = zeroCrossingFrequency(middle, rate: 48_000)
        #expect(abs(frequency - 1_000) <= 10, "\(frequency) Hz at rate \(rate)")
        #expect(log.events == ["finished(true)"])
    }

    @Test(arguments: Backend.allCases)
    func changingTheRateWhilePlayingGoesOnFromWhereItWas(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let (player, _) = try makePlayer(rig, identityBuffer(0..<48_000))
        try player.setEnableRate(true)
        try player.play()
        _ = try rig.render(9_600)
        let before = player.currentFrame
        try player.setRate(1.5)  // in goes the stretcher: the stream restarts at the frame playing
        let after = player.currentFrame
        #expect(abs(after - before) <= 1, "\(before) → \(after)")
        _ = try rig.render(9_600)
        #expect(abs(Double(player.currentFrame - after) - 9_600 * 1.5) <= 0.04 * 48_000 + 256,
                "1.5× through the source: \(player.currentFrame - after) frames")
        try player.setRate(1)  // and out again
        let plain = decodeIdentity(try rig.render(4_800)).compactMap { $0 }
        #expect(plain.count > 4_000 && zip(plain, plain.dropFirst()).allSatisfy { $1 == $0 + 1 }, "plain playback again")
    }

    @Test(arguments: Backend.allCases)
    func metersReadThePowerOfTheWindowEndingAtTheFramePlaying(_ kind: Backend) throws {
        let rig = try Rig(kind)
        // 0.25 then 0.75, a different level on each channel: the window's place shows.
        var samples: [Float] = []
        for i in 0..<48_000 {
            let a: Float = i < 12_000 ? 0.25 : 0.75
            let v = a * Float(sin(2 * Double.pi * 750 * Double(i) / 48_000))
            samples += [v, v * 0.5]
        }
        let (player, _) = try makePlayer(rig, try PCMBuffer(format: stereo48, samples: samples))
        player.updateMeters()
        #expect(try player.averagePower(forChannel: 0) == -160, "nothing measured yet")
        player.setMeteringEnabled(true)
        try player.play()
        var rendered = 0
        for target in [6_000, 12_800, 30_000] {
            _ = try rig.render(target - rendered)
            rendered = target
            try Self.expectMetersReadTheWindowAtThePlayPosition(player, samples)
        }
        expectError(.invalidParameter, "channel 2 of a stereo source") { _ = try player.peakPower(forChannel: 2) }
    }

    /// After a seek the meters measure the frames heard from the seek on, in the same window
    /// as without one: the whole 256-frame blocks of the source that end at the frame playing.
    /// (They measured blocks counted from the seek's frame, up to a block off the play
    /// position, and the seek's first block as if it were whole: 0.04 to 0.3 dB off on this
    /// 20 dB/s ramp.)
    @Test(arguments: Backend.allCases)
    func metersAfterASeekReadTheFramesAtThePlayPosition(_ kind: Backend) throws {
        let rig = try Rig(kind)
        // A 750 Hz tone rising 20 dB a second, from -40 dBFS: every frame has its own level.
        var samples: [Float] = []
        for i in 0..<96_000 {
            let t = Double(i) / 48_000
            let v = Float(pow(10, (-40 + 20 * t) / 20) * sin(2 * Double.pi * 750 * t))
            samples += [v, v * 0.5]
        }
        let (player, _) = try makePlayer(rig, try PCMBuffer(format: stereo48, samples: samples))
        player.setMeteringEnabled(true)
        try player.play()
        _ = try rig.render(4_800)
        // Targets off the 256-frame grid, one while playing, one while paused.
        try player.setCurrentTime(Double(30_100) / 48_000)
        for _ in 0..<4 {
            _ = try rig.render(1_000)
            try Self.expectMetersReadTheWindowAtThePlayPosition(player, samples, heardFrom: 30_100)
        }
        try player.pause()
        _ = try rig.render(1_024)
        try player.seek(toFrame: 60_170)
        try player.play()
        for _ in 0..<4 {
            _ = try rig.render(1_000)
            try Self.expectMetersReadTheWindowAtThePlayPosition(player, samples, heardFrom: 60_170)
        }
    }

    /// Updates the meters and expects them to read the power of `samples` (stereo) over the
    /// `meteringWindowFrames` frames of whole 256-frame blocks that end at the frame playing,
    /// or over those heard since frame `heardFrom` (where playback started or a seek landed).
    static func expectMetersReadTheWindowAtThePlayPosition(_ player: AudioPlayer, _ samples: [Float], heardFrom: Int = 0,
                                                           sourceLocation: SourceLocation = #_sourceLocation) throws {
        player.updateMeters()
        let end = player.currentFrame / 256 * 256
        let window = max(heardFrom, end - player.meteringWindowFrames)..<end
        for c in 0..<2 {
            let values = window.map { samples[$0 * 2 + c] }
            let average = Float(10 * log10(values.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(values.count)))
            let peak = 20 * log10(values.map(abs).max() ?? 0)
            let (measuredAverage, measuredPeak) = (try player.averagePower(forChannel: c), try player.peakPower(forChannel: c))
            #expect(abs(measuredAverage - average) < 0.01, "channel \(c) at \(end): average \(measuredAverage), not \(average) dB",
                    sourceLocation: sourceLocation)
            #expect(abs(measuredPeak - peak) < 0.01, "channel \(c) at \(end): peak \(measuredPeak), not \(peak) dB",
                    sourceLocation: sourceLocation)
        }
    }

    // MARK: Bad calls

    @Test(arguments: Backend.allCases)
    func invalidParametersAreErrorsThatChangeNothing(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let (player, _) = try makePlayer(rig, identityBuffer(0..<4_800))
        expectError(.invalidParameter, "rate 5") { try player.setRate(5) }
        expectError(.invalidParameter, "rate NaN") { try player.setRate(.nan) }
        expectError(.invalidParameter, "volume -1") { try player.setVolume(-1) }
        expectError(.invalidParameter, "volume NaN") { try player.setVolume(.nan) }
        expectError(.invalidParameter, "a negative fade") { try player.setVolume(0.5, fadeDuration: -1) }
        expectError(.invalidParameter, "pan 2") { try player.setPan(2) }
        expectError(.invalidParameter, "numberOfLoops -2") { try player.setNumberOfLoops(-2) }
        expectError(.invalidParameter, "currentTime -1") { try player.setCurrentTime(-1) }
        expectError(.invalidParameter, "currentTime NaN") { try player.setCurrentTime(.nan) }
        expectError(.invalidParameter, "frame -1") { try player.seek(toFrame: -1) }
        expectError(.invalidParameter, "play at infinity") { try player.play(atTime: .infinity) }
        #expect(player.rate == 1 && player.volume == 1 && player.pan == 0 && player.numberOfLoops == 0)
        #expect(player.currentFrame == 0 && player.state == .stopped)
    }

    @Test(arguments: Backend.allCases)
    func callsThatMeanNothingInAStateDoNothing(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let (player, log) = try makePlayer(rig, identityBuffer(0..<9_600))
        try player.pause()
        try player.stop()
        #expect(player.state == .stopped)
        try player.prepareToPlay()
        try player.prepareToPlay()
        #expect(player.state == .prepared)
        try player.play()
        let first = try rig.render(2_400)
        try player.play()
        try player.prepareToPlay()
        let rest = try rig.render(until: { player.state == .stopped }, limit: 48_000)
        #expect(decodeIdentity(first + rest).compactMap { $0 } == Array(0..<9_600), "a second play neither restarts nor skips")
        try player.pause()
        #expect(player.state == .stopped)
        #expect(log.events == ["finished(true)"])
        // Past the end is clamped to the end: a playing player then finishes at once.
        try player.setCurrentTime(1_000)
        #expect(player.currentFrame == 9_600)
    }

    @Test(arguments: Backend.allCases)
    func sourcesThatCannotPlayAreClearErrors(_ kind: Backend) throws {
        let rig = try Rig(kind)
        expectError(.emptyInput, "an empty buffer") { _ = try AudioPlayer(buffer: .empty(stereo48), backend: rig.backend) }
        expectError(.fileNotFound, "a missing file") {
            _ = try AudioPlayer(contentsOfFile: "/nonexistent/sound.mp3", backend: rig.backend)
        }
        expectError(.unsupportedFormat, "a text file") {
            _ = try AudioPlayer(data: Data("not audio at all, just words".utf8), backend: rig.backend)
        }
    }
}

// MARK: - Helpers

/// Collects a player's events, as short names, in the order the delegate receives them.
final class PlayerEventLog: AudioPlayerDelegate, Sendable {
    let names = Locked<[String]>([])
    let queue: DispatchQueue

    init(queue: DispatchQueue) { self.queue = queue }

    /// The events so far, once everything delivered before this call has arrived.
    var events: [String] {
        queue.sync {}
        return names.withLock { $0 }
    }

    func audioPlayerDidFinishPlaying(_ player: AudioPlayer, successfully flag: Bool) {
        names.withLock { $0.append("finished(\(flag))") }
    }

    func audioPlayerDecodeErrorDidOccur(_ player: AudioPlayer, error: AudioError) {
        names.withLock { $0.append("decodeError(\(error.code))") }
    }

    func audioPlayerOutputDidEnd(_ player: AudioPlayer, error: AudioError) {
        names.withLock { $0.append("outputLost(\(error.code))") }
    }

    func audioPlayerBufferingDidChange(_ player: AudioPlayer, isBuffering: Bool) {
        names.withLock { $0.append(isBuffering ? "buffering" : "buffered") }
    }
}

/// A player on the rig's back-end, its events logged.
func makePlayer(_ rig: Rig, _ buffer: PCMBuffer? = nil, url: URL? = nil) throws -> (AudioPlayer, PlayerEventLog) {
    let queue = DispatchQueue(label: "test.player.events")
    let player: AudioPlayer
    if let buffer {
        player = try AudioPlayer(buffer: buffer, backend: rig.backend, eventQueue: queue)
    } else {
        player = try AudioPlayer(contentsOf: url ?? URL(fileURLWithPath: "/"), backend: rig.backend, eventQueue: queue)
    }
    let log = PlayerEventLog(queue: queue)
    player.delegate = log
    return (player, log)
}

/// The path of a committed fixture.
func fixture(_ name: String) -> String {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures").appendingPathComponent(name).path
}

/// A sequence of frame indexes as its runs, e.g. `0..<4800 5056..<20000`, for messages.
func runs(_ indices: [Int]) -> String {
    var parts: [String] = []
    var start = indices.first, previous = indices.first
    for index in indices.dropFirst() + [Int.min] {
        if let p = previous, index == p + 1 {
            previous = index
            continue
        }
        if let s = start, let p = previous { parts.append(s == p ? "\(s)" : "\(s)..<\(p + 1)") }
        start = index
        previous = index
    }
    return parts.joined(separator: " ")
}
