import Foundation
import SpoolBufferQueue
import SoundServerTestSupport
import SpoolCore
import SpoolOutput
import Synchronization
import Testing
@testable import SpoolOpenAL
import SpoolTestSupport

/// Pause and resume under rate conversion (44.1 kHz buffers on a 48 kHz device), offline and
/// on the real-time null devices: the output after the resume continues the converted stream
/// on the frame after the one the pause held, no frame lost and none repeated.
///
/// Identity frames carry their index through the converter: each channel is a linear
/// function of the frame (the left ramps, the right is constant), which a resampler's
/// filters pass unchanged but for a gain both channels share, so left / right read back the
/// fractional source position each output frame was converted from. Across the pause that
/// position must go on advancing by 44 100 / 48 000 per output frame.
@Suite("Seam conformance: pause and resume under rate conversion")
struct PauseResumeTests {
    static let stereo44 = try! AudioFormat(sampleRate: 44_100, channelCount: 2)
    /// Source frames per output frame.
    static let step = 44_100.0 / 48_000

    /// A buffer of identity frames at 44.1 kHz stereo.
    static func identity44(_ range: Range<Int>) throws -> PCMBuffer {
        try PCMBuffer(format: stereo44, samples: identityFrames(range))
    }

    /// The fractional source position each output frame carries, nil where it is silent.
    static func positions(_ samples: [Float]) -> [Double?] {
        stride(from: 0, to: samples.count - 1, by: 2).map { i in
            let right = Double(samples[i + 1])
            guard abs(right) > 1e-9 else { return nil }
            return Double(samples[i]) / right * 65_536 - 1
        }
    }

    /// What the positions show about a run that played source frames `0..<frames`: the
    /// largest departure from the converter's step between neighbouring sounding frames away
    /// from the start and the end (where the filters ring against the silence around the
    /// ramp), and each silence inside the sound with how far the position moved across it.
    struct Continuity {
        /// A tenth of a frame: a lost or repeated frame moves the position by a whole step,
        /// rounding in the converter and in Float32 by under 0.03 frames at 44 100.
        static let tolerance = 0.1
        var worstStepError = 0.0
        var worstStepAt = 0
        var silences: [(frames: Range<Int>, advance: Double)] = []

        init(_ positions: [Double?], frames: Int) {
            let sounding = positions.indices.filter { positions[$0] != nil }
            let margin = 200.0
            for (a, b) in zip(sounding, sounding.dropFirst()) {
                guard let pa = positions[a], let pb = positions[b] else { continue }
                if b - a > 1 {
                    silences.append(((a + 1)..<b, pb - pa))
                } else if pa > margin, pb < Double(frames) - margin, abs(pb - pa - PauseResumeTests.step) > worstStepError {
                    worstStepError = abs(pb - pa - PauseResumeTests.step)
                    worstStepAt = b
                }
            }
        }

        /// Whether the position moved across the silence as across no silence at all (one
        /// step), or by the one frame more that the fade's last frame, at gain 0, took.
        static func resumesOnTheNextFrame(_ advance: Double) -> Bool {
            abs(advance - PauseResumeTests.step) < tolerance || abs(advance - 2 * PauseResumeTests.step) < tolerance
        }
    }

    /// Expects the positions of a run with one pause to be continuous, and the pause to have
    /// lasted at least `pauseFrames` output frames. `underrunGaps` more silences are allowed,
    /// each of which must lose no frame (a voice that ran dry plays on where it stopped).
    static func expectContinuous(_ samples: [Float], pauseFrames: Int, underrunGaps: Int = 0,
                                 sourceLocation: SourceLocation = #_sourceLocation) {
        let continuity = Continuity(positions(samples), frames: 44_100)
        #expect(continuity.worstStepError < Continuity.tolerance,
                "the position jumps by \(continuity.worstStepError) frames off the converter's step at output frame \(continuity.worstStepAt)",
                sourceLocation: sourceLocation)
        #expect((1...(1 + underrunGaps)).contains(continuity.silences.count),
                "one silence, the pause's, and at most \(underrunGaps) from underruns: \(continuity.silences)",
                sourceLocation: sourceLocation)
        guard let pause = continuity.silences.max(by: { $0.frames.count < $1.frames.count }) else { return }
        for gap in continuity.silences where gap.frames != pause.frames {
            #expect(abs(gap.advance - step) < Continuity.tolerance,
                    "an underrun's silence at \(gap.frames) skipped \((gap.advance / step - 1).rounded()) output frames",
                    sourceLocation: sourceLocation)
        }
        #expect(pause.frames.count >= pauseFrames, "the pause lasted \(pause.frames.count) output frames", sourceLocation: sourceLocation)
        #expect(Continuity.resumesOnTheNextFrame(pause.advance),
                "across the pause the position moved \(pause.advance) source frames, \((pause.advance / step - 1).rounded()) output frames skipped",
                sourceLocation: sourceLocation)
    }

    // MARK: Offline

    @Test(arguments: Backend.allCases)
    func offlineAPauseUnderConversionResumesOnTheNextConvertedFrame(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let voice = try rig.voice(Self.stereo44)
        let log = Recorder(voice)
        for i in 0..<4 { try voice.enqueue(try Self.identity44((i * 11_025)..<((i + 1) * 11_025))) }
        try voice.start()
        try voice.stop(immediately: false)
        var out = try rig.render(9_600)
        try voice.pause()
        out += try rig.render(4_096)
        let held = voice.framesPlayed
        let paused = try rig.render(1_024)
        #expect(paused.allSatisfy { $0 == 0 }, "silent while paused")
        #expect(voice.framesPlayed == held, "the position holds while paused")
        out += paused
        try voice.start()
        out += try rig.render(until: { !log.finishes.isEmpty }, limit: 96_000)
        #expect(log.finishes == ["playedOut"])
        #expect(voice.framesPlayed == 44_100, "every source frame plays")

        Self.expectContinuous(out, pauseFrames: 1_024)
    }

    // MARK: Real time

    /// Collects what a device renders.
    final class Capture: Sendable {
        private let samples = Locked<[Float]>([])
        init() { samples.withLock { $0.reserveCapacity(48_000 * 2 * 4) } }
        func append(_ pointer: UnsafePointer<Float>, count: Int) {
            samples.withLock { $0.append(contentsOf: UnsafeBufferPointer(start: pointer, count: count)) }
        }
        var all: [Float] { samples.withLock { $0 } }
    }

    /// A null device whose renderer's output the test sees, period by period.
    final class TappedNullDevice: OutputDevice {
        let inner: NullDevice
        let capture: Capture
        init(configuration: OutputConfiguration, capture: Capture) throws {
            inner = try NullDevice(configuration: configuration)
            self.capture = capture
        }
        var name: String { inner.name }
        var format: AudioFormat { inner.format }
        var periodFrames: Int { inner.periodFrames }
        var periodCount: Int { inner.periodCount }
        var isRunning: Bool { inner.isRunning }
        var xrunCount: Int { inner.xrunCount }
        var queuedFrames: Int { inner.queuedFrames }
        func start(renderer: any AudioRenderer) throws {
            try inner.start(renderer: Tap(renderer: renderer, capture: capture, channels: format.channelCount))
        }
        func stop() { inner.stop() }
        func setEventHandler(_ handler: (@Sendable (OutputDeviceEvent) -> Void)?) { inner.setEventHandler(handler) }

        final class Tap: AudioRenderer {
            let renderer: any AudioRenderer
            let capture: Capture
            let channels: Int
            init(renderer: any AudioRenderer, capture: Capture, channels: Int) {
                self.renderer = renderer
                self.capture = capture
                self.channels = channels
            }
            func render(into buffer: UnsafeMutablePointer<Float>, frames: Int, timestamp: RenderTimestamp) {
                renderer.render(into: buffer, frames: frames, timestamp: timestamp)
                capture.append(buffer, count: frames * channels)
            }
        }
    }

    /// A back-end on its real-time null device (48 kHz, 256 × 2), with what it renders captured.
    static func tappedBackend(_ kind: Backend, capture: Capture) throws -> any PlaybackBackend {
        let configuration = OutputConfiguration(sampleRate: 48_000, periodFrames: 256, periodCount: 2)
        switch kind {
        case .queue:
            return try BufferQueueBackend(device: TappedNullDevice(configuration: configuration, capture: capture))
        case .openAL:
            let backend = try OpenALBackend(.null(configuration))
            backend.device.renderTap.withLock { $0 = { capture.append($0, count: $1 * 2) } }
            return backend
        }
    }

    /// Plays the identity ramp on `kind`'s null device with a pause of 0.25 s after 0.3 s;
    /// `afterPause` runs right after `pause()` returns. Checks the position, the finish and the
    /// continuity across the pause.
    func playWithPause(_ kind: Backend, afterPause: (any PlaybackBackend) throws -> Void = { _ in }) throws {
        let capture = Capture()
        let backend = try Self.tappedBackend(kind, capture: capture)
        let voice = try backend.makeVoice(format: Self.stereo44)
        let log = Recorder(voice)
        let done = DispatchSemaphore(value: 0)
        voice.addFinishedHandler { _ in done.signal() }
        for i in 0..<4 { try voice.enqueue(try Self.identity44((i * 11_025)..<((i + 1) * 11_025))) }
        try voice.start()
        try voice.stop(immediately: false)
        Thread.sleep(forTimeInterval: 0.3)
        try voice.pause()
        try afterPause(backend)
        Thread.sleep(forTimeInterval: 0.1)
        let held = voice.framesPlayed
        Thread.sleep(forTimeInterval: 0.15)
        #expect(voice.framesPlayed == held, "the position holds while paused")
        #expect(voice.state == .paused)
        try voice.start()
        #expect(done.wait(timeout: .now() + 5) == .success, "no finish within 5 s of the resume")
        Thread.sleep(forTimeInterval: 0.05)
        voice.dispose()
        #expect(log.finishes == ["playedOut"])
        #expect(voice.framesPlayed == 44_100, "every source frame plays")
        // A sanitizer's slow-down can hold the refilling thread off long enough for the voice to
        // run dry; then its silence must lose no frame. The plain run allows none.
        let underruns = voice.underrunCount
        if !SoundServer.underSanitizer { #expect(underruns == 0, "the voice ran dry \(underruns) times") }

        // 0.25 s between the calls; the output is silent for at least 0.2 s of it.
        Self.expectContinuous(capture.all, pauseFrames: 9_600, underrunGaps: SoundServer.underSanitizer ? underruns : 0)
    }

    @Test(arguments: Backend.allCases)
    func onTheNullDeviceAPauseUnderConversionResumesOnTheNextConvertedFrame(_ kind: Backend) throws {
        try playWithPause(kind)
    }

    /// OpenAL Soft's mixer goes on at gain 0 until the pump pauses the source: here the pump
    /// is held off for more than a period after the glide (the test holds the device's lock, which
    /// the null device's clock does not need), and the pause still moves the source back to
    /// the frame after the glide.
    @Test func onTheNullDeviceAnOpenALPauseThePumpReachesLateLosesNoFrame() throws {
        try playWithPause(.openAL) { backend in
            let device = try #require(backend as? OpenALBackend).device
            try device.perform { _ in Thread.sleep(forTimeInterval: 0.009) }
        }
    }
}
