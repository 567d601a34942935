import Foundation
import SpoolCore
import Synchronization
import Testing
import SpoolTestSupport

/// The seam's transport, call by call and state by state, as `PlaybackVoice` documents it:
/// every test runs on every back-end, offline and deterministic.
@Suite("Seam conformance: order, start, pause, stop, dispose")
struct SeamTransportTests {
    // MARK: Order and frame counts

    @Test(arguments: Backend.allCases)
    func buffersPlayInOrderBitExactAndComeBackInOrder(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(stereo48)
        let log = Recorder(voice)
        let buffers = try (0..<3).map { try identityBuffer(($0 * 1000)..<(($0 + 1) * 1000)) }
        for buffer in buffers { try voice.enqueue(buffer) }
        #expect(voice.state == .stopped)
        #expect(voice.queuedBufferCount == 3)
        try voice.start()
        #expect(voice.state == .playing)
        #expect(voice.isPlaying)
        let out = try rig.render(3072)
        #expect(Array(out[0..<6000]) == identityFrames(0..<3000))
        #expect(out[6000...].allSatisfy { $0 == 0 })
        #expect(log.consumed == buffers.map(\.storageIdentifier))
        #expect(voice.framesPlayed == 3000)
        #expect(voice.queuedBufferCount == 0)
        #expect(log.finishes.isEmpty, "running dry is no finish")
        #expect(voice.state == .playing)
        #expect(voice.underrunCount == 1, "it ran dry while playing")
    }

    @Test(arguments: Backend.allCases)
    func aVoiceStartedEmptyPlaysTheFirstBufferOnTheNextFrame(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(stereo48)
        try voice.start()
        #expect(try rig.render(512).allSatisfy { $0 == 0 })
        #expect(voice.underrunCount == 0, "nothing played yet: no underrun")
        try voice.enqueue(try identityBuffer(0..<1000))
        let out = try rig.render(1024)
        #expect(Array(out[0..<2000]) == identityFrames(0..<1000))
        #expect(voice.framesPlayed == 1000)
    }

    @Test(arguments: Backend.allCases)
    func startWhilePlayingAndPauseWhileStoppedChangeNothing(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(stereo48)
        try voice.enqueue(try identityBuffer(0..<2000))
        try voice.pause()
        #expect(voice.state == .stopped)
        try voice.start()
        var out = try rig.render(500)
        try voice.start()
        #expect(voice.state == .playing)
        out += try rig.render(1000)
        #expect(out == identityFrames(0..<1500))
        #expect(voice.framesPlayed == 1500)
    }

    // MARK: Pause and resume

    @Test(arguments: Backend.allCases)
    func pauseHoldsTheFrameItsFadeEndsOnAndStartResumesThere(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(stereo48)
        for i in 0..<4 { try voice.enqueue(try identityBuffer((i * 1000)..<((i + 1) * 1000))) }
        try voice.start()
        let before = try rig.render(1000)
        #expect(before == identityFrames(0..<1000))
        try voice.pause()
        #expect(voice.state == .paused)
        #expect(!voice.isPlaying)
        // The position is the frame the 5 ms fade (240 frames) ends on from the call, before
        // the fade is rendered, and holds.
        let paused = voice.framesPlayed
        #expect(paused == 1000 + 240, "the fade ends after one declick time: \(paused)")
        let fade = try rig.render(512)
        #expect(voice.framesPlayed == paused)
        let silence = try rig.render(512)
        #expect(silence.allSatisfy { $0 == 0 })
        #expect(voice.framesPlayed == paused)
        // The fade carries the frames after 999 in order, at a falling gain, up to the frame
        // the position holds.
        let faded = decodeIdentity(fade).compactMap { $0 }
        #expect(faded == Array(1000..<(1000 + faded.count)))
        #expect(faded.count >= paused - 1000 - 1 && faded.count <= paused - 1000)

        try voice.start()
        #expect(voice.state == .playing)
        let resumed = try rig.render(2000)
        let first = decodeIdentity(resumed).compactMap { $0 }.first
        #expect(first == paused || first == paused + 1, "resumes on frame \(paused), not \(String(describing: first))")
        // Past the fade-in every frame is the next one, bit for bit.
        #expect(Array(resumed[(2 * 256)...]) == identityFrames((paused + 256)..<(paused + 2000)))
        #expect(voice.framesPlayed == paused + 2000)
    }

    // MARK: stop(immediately: true) in every state

    @Test(arguments: Backend.allCases)
    func stopImmediatelyWhilePlayingFadesHandsBackAndFinishesStopped(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(stereo48)
        let log = Recorder(voice)
        for _ in 0..<4 { try voice.enqueue(try constant(0.5, frames: 4000)) }
        try voice.start()
        _ = try rig.render(2560)
        try voice.stop(immediately: true)
        #expect(voice.state == .stopped)
        #expect(!voice.isPlaying)
        let tail = channel(try rig.render(1024), 0)
        #expect(tail[0] > 0.45, "the fade starts where the audio was")
        #expect(zip(tail, tail.dropFirst()).allSatisfy { $1 <= $0 + 1e-7 }, "falls and never rises")
        #expect(tail[256...].allSatisfy { $0 == 0 }, "silent within one declick time")
        #expect(log.consumed.count == 4)
        #expect(voice.queuedBufferCount == 0)
        #expect(log.finishes == ["stopped"])
        #expect(log.log.last == .finished("stopped"), "every buffer comes back before the finish")
        // Started again, it plays nothing: what was queued is gone.
        try voice.start()
        #expect(try rig.render(512).allSatisfy { $0 == 0 })
        #expect(log.finishes == ["stopped"])
    }

    @Test(arguments: Backend.allCases)
    func stopImmediatelyWhilePausedHandsBackAndFinishesBeforeItReturns(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(stereo48)
        let log = Recorder(voice)
        for _ in 0..<3 { try voice.enqueue(try constant(0.5, frames: 4000)) }
        try voice.start()
        _ = try rig.render(1000)
        try voice.pause()
        _ = try rig.render(512)
        try voice.stop(immediately: true)
        #expect(log.consumed.count == 3)
        #expect(log.finishes == ["stopped"])
        #expect(voice.state == .stopped)
        #expect(voice.queuedBufferCount == 0)
        #expect(try rig.render(512).allSatisfy { $0 == 0 })
        #expect(log.finishes == ["stopped"])
    }

    @Test(arguments: Backend.allCases)
    func stopImmediatelyOnANeverStartedVoiceHandsBackWithoutAFinish(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(stereo48)
        let log = Recorder(voice)
        try voice.enqueue(try constant(0.5, frames: 1000))
        try voice.enqueue(try constant(0.5, frames: 1000))
        try voice.stop(immediately: true)
        #expect(log.consumed.count == 2)
        #expect(voice.queuedBufferCount == 0)
        try voice.start()
        #expect(try rig.render(1024).allSatisfy { $0 == 0 })
        #expect(log.finishes.isEmpty)
    }

    @Test(arguments: Backend.allCases)
    func stopImmediatelyOnAStartedVoiceWithNothingQueuedFinishesStopped(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(stereo48)
        let log = Recorder(voice)
        try voice.start()
        _ = try rig.render(256)
        try voice.stop(immediately: true)
        _ = try rig.render(256)
        #expect(log.finishes == ["stopped"])
        #expect(voice.state == .stopped)
    }

    @Test(arguments: Backend.allCases)
    func stopImmediatelyWhileDrainingFinishesOnceAsStopped(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(stereo48)
        let log = Recorder(voice)
        try voice.enqueue(try constant(0.5, frames: 4000))
        try voice.start()
        try voice.stop(immediately: false)
        _ = try rig.render(1000)
        try voice.stop(immediately: true)
        _ = try rig.render(4096)
        #expect(log.finishes == ["stopped"])
        #expect(log.consumed.count == 1)
        #expect(!voice.isDraining)
    }

    @Test(arguments: Backend.allCases)
    func stopImmediatelyBeforeAScheduledStartPlaysNothing(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(stereo48)
        let log = Recorder(voice)
        try voice.enqueue(try constant(0.5, frames: 2000))
        try voice.start(atHostTime: rig.hostTime(ofFrame: 2000))
        #expect(voice.state == .playing)
        _ = try rig.render(512)
        try voice.stop(immediately: true)
        #expect(try rig.render(4096).allSatisfy { $0 == 0 })
        #expect(log.finishes == ["stopped"])
        #expect(log.consumed.count == 1)
    }

    // MARK: stop(immediately: false) in every state

    @Test(arguments: Backend.allCases)
    func aDrainedStopPlaysEverythingFinishesOnceAndTakesBuffersAgainAfter(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(stereo48)
        let log = Recorder(voice)
        for i in 0..<3 { try voice.enqueue(try identityBuffer((i * 1000)..<((i + 1) * 1000))) }
        try voice.start()
        try voice.stop(immediately: false)
        #expect(voice.isDraining)
        #expect(voice.state == .playing)
        expectError(.invalidState, "enqueue while draining") { try voice.enqueue(try identityBuffer(0..<10)) }
        try voice.stop(immediately: false)  // a second one changes nothing
        let out = try rig.render(4096)
        #expect(Array(out[0..<6000]) == identityFrames(0..<3000))
        #expect(out[6000...].allSatisfy { $0 == 0 })
        #expect(log.finishes == ["playedOut"])
        #expect(voice.state == .stopped)
        #expect(!voice.isDraining)
        #expect(voice.underrunCount == 0, "playing out the end is no underrun")
        #expect(voice.framesPlayed == 3000)

        try voice.enqueue(try identityBuffer(5000..<5500))
        try voice.start()
        try voice.stop(immediately: false)
        let again = try rig.render(1024)
        #expect(Array(again[0..<1000]) == identityFrames(5000..<5500))
        #expect(voice.framesPlayed == 500, "a start from stopped counts from 0")
        #expect(log.finishes == ["playedOut", "playedOut"])
    }

    @Test(arguments: Backend.allCases)
    func aDrainedStopOnAStartedVoiceThatNeverHadABufferFinishes(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(stereo48)
        let log = Recorder(voice)
        try voice.start()
        _ = try rig.render(256)
        try voice.stop(immediately: false)
        _ = try rig.render(512)
        #expect(log.finishes == ["playedOut"])
        #expect(voice.state == .stopped)
    }

    @Test(arguments: Backend.allCases)
    func aDrainedStopWhilePausedWaitsForTheResumeThenPlaysOut(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(stereo48)
        let log = Recorder(voice)
        for i in 0..<2 { try voice.enqueue(try identityBuffer((i * 1000)..<((i + 1) * 1000))) }
        try voice.start()
        _ = try rig.render(512)
        try voice.pause()
        _ = try rig.render(512)
        try voice.stop(immediately: false)
        #expect(voice.state == .paused)
        #expect(voice.isDraining)
        #expect(try rig.render(1024).allSatisfy { $0 == 0 })
        #expect(log.finishes.isEmpty)
        let paused = voice.framesPlayed
        try voice.start()
        let out = try rig.render(2048)
        #expect(log.finishes == ["playedOut"])
        #expect(log.consumed.count == 2)
        #expect(voice.framesPlayed == 2000)
        #expect(voice.state == .stopped)
        let resumed = decodeIdentity(out).compactMap { $0 }
        #expect(resumed.last == 1999)
        #expect(resumed.first.map { $0 - paused } ?? -1 >= 0)
        #expect(voice.underrunCount == 0)
    }

    @Test(arguments: Backend.allCases)
    func aDrainedStopBeforeStartMarksTheEnd(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(stereo48)
        let log = Recorder(voice)
        try voice.enqueue(try identityBuffer(0..<1000))
        try voice.enqueue(try identityBuffer(1000..<2000))
        try voice.stop(immediately: false)
        #expect(voice.state == .stopped)
        #expect(voice.isDraining)
        #expect(voice.queuedBufferCount == 2, "nothing is dropped")
        expectError(.invalidState, "enqueue after the end was marked") { try voice.enqueue(try identityBuffer(0..<10)) }
        #expect(try rig.render(512).allSatisfy { $0 == 0 })
        try voice.start()
        let out = try rig.render(2048)
        #expect(Array(out[0..<4000]) == identityFrames(0..<2000))
        #expect(out[4000...].allSatisfy { $0 == 0 })
        #expect(log.finishes == ["playedOut"])
        #expect(voice.underrunCount == 0)
    }

    // MARK: dispose in every state

    @Test(arguments: Backend.allCases)
    func disposeMidPlayHandsBackFinishesAndEndsTheVoice(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(stereo48)
        let log = Recorder(voice)
        for _ in 0..<3 { try voice.enqueue(try constant(0.5, frames: 4000)) }
        try voice.start()
        _ = try rig.render(1000)
        voice.dispose()
        #expect(log.consumed.count == 3, "handed back before dispose returns")
        #expect(log.finishes == ["disposed"])
        #expect(voice.state == .stopped)
        #expect(voice.queuedBufferCount == 0)
        #expect(try rig.render(512).allSatisfy { $0 == 0 })
        expectError(.invalidState, "enqueue") { try voice.enqueue(try constant(0.5, frames: 10)) }
        expectError(.invalidState, "start") { try voice.start() }
        expectError(.invalidState, "pause") { try voice.pause() }
        expectError(.invalidState, "stop") { try voice.stop(immediately: true) }
        expectError(.invalidState, "setVolume") { try voice.setVolume(0.5) }
        expectError(.invalidState, "setPan") { try voice.setPan(0.5) }
        expectError(.invalidState, "setPlaybackRate") { try voice.setPlaybackRate(1.5) }
        voice.dispose()
        #expect(log.finishes == ["disposed"])
        #expect(log.consumed.count == 3)
    }

    @Test(arguments: Backend.allCases)
    func disposeWhilePausedOrDrainingFinishesOnce(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let paused = try rig.voice(stereo48), draining = try rig.voice(stereo48)
        let pausedLog = Recorder(paused), drainingLog = Recorder(draining)
        for voice in [paused, draining] {
            try voice.enqueue(try constant(0.25, frames: 4000))
            try voice.start()
        }
        _ = try rig.render(512)
        try paused.pause()
        try draining.stop(immediately: false)
        _ = try rig.render(512)
        paused.dispose()
        draining.dispose()
        #expect(pausedLog.finishes == ["disposed"])
        #expect(drainingLog.finishes == ["disposed"])
        #expect(pausedLog.consumed.count == 1)
        #expect(drainingLog.consumed.count == 1)
    }

    @Test(arguments: Backend.allCases)
    func disposeBeforeStartHandsBackWithoutAFinish(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(stereo48)
        let log = Recorder(voice)
        try voice.enqueue(try constant(0.5, frames: 100))
        try voice.enqueue(try constant(0.5, frames: 100))
        voice.dispose()
        #expect(log.consumed.count == 2)
        #expect(log.finishes.isEmpty)
        expectError(.invalidState, "start") { try voice.start() }
    }

    // MARK: Scheduled start

    @Test(arguments: Backend.allCases)
    func aScheduledStartLandsOnItsFrame(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(stereo48)
        try voice.enqueue(try constant(0.25, frames: 2000))
        _ = try rig.render(300)
        try voice.start(atHostTime: rig.hostTime(ofFrame: 1000))
        #expect(voice.isPlaying)
        let out = channel(try rig.render(1024), 0)
        #expect(out[0..<700].allSatisfy { $0 == 0 })
        #expect(out[700..<1024].allSatisfy { $0 == 0.25 })
    }

    @Test(arguments: Backend.allCases)
    func pauseBeforeAScheduledStartCancelsIt(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(stereo48)
        try voice.enqueue(try identityBuffer(0..<2000))
        try voice.start(atHostTime: rig.hostTime(ofFrame: 1000))
        _ = try rig.render(500)
        try voice.pause()
        #expect(voice.state == .paused)
        #expect(try rig.render(2000).allSatisfy { $0 == 0 }, "the scheduled start was cancelled")
        #expect(voice.framesPlayed == 0)
        try voice.start()
        let out = try rig.render(1024)
        #expect(decodeIdentity(out).compactMap { $0 }.first == 0, "resumes from the first frame")
    }
}
