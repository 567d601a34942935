import Dispatch
import Foundation
@testable import Spool
import SpoolCore
import SpoolOutput
import SpoolTestSupport
import Testing

/// A decoder that stalls while the player plays in real time, on the null device: a stall the player's read-ahead covers is not heard; a longer one runs the voice
/// dry, which counts it and plays silence meanwhile, and once the decoder answers, playing
/// goes on from the next frame and the feed catches up (no second dry spell). Every frame
/// plays once, in order. Runs in the real-time pass; under a sanitizer only what plays is
/// checked, not how often it ran dry.
@Suite("A decoder slower than a period", .serialized)
struct SlowDecoderTests {
    static let underSanitizer = TestEnvironment.underSanitizer

    /// `inner`, but the read that reaches `stallFrame` first sleeps `stall` seconds.
    final class StallingDecoder: AudioDecoder {
        let inner: PCMBufferDecoder
        let stallFrame: Int
        let stall: TimeInterval
        private(set) var stalled = false

        init(_ inner: PCMBufferDecoder, stallFrame: Int, stall: TimeInterval) {
            self.inner = inner
            self.stallFrame = stallFrame
            self.stall = stall
        }

        var format: AudioFormat { inner.format }
        var frameCount: Int { inner.frameCount }
        var position: Int { inner.position }
        var info: AudioFileInfo { inner.info }
        var warnings: [DecodeWarning] { [] }

        func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int {
            if !stalled && inner.position + buffer.count / format.channelCount > stallFrame {
                stalled = true
                Thread.sleep(forTimeInterval: stall)
            }
            return try inner.read(into: buffer)
        }

        func seek(toFrame frame: Int) throws { try inner.seek(toFrame: frame) }
    }

    /// A stall of 100 ms, 3 s in, is absorbed by the three 4096-frame buffers (256 ms) the
    /// player keeps queued on its voice: no dry spell. One of 1 s outlasts them: one dry spell
    /// of about 0.75 s, then the feed catches up.
    /// On the null device in real time; the buffer queue's device copies what it plays, which
    /// is checked frame by frame (the OpenAL back-end's null device keeps no copy).
    @Test("a decoder stall: absorbed by the read-ahead when shorter, one dry spell and no frame lost when longer",
          arguments: Backend.allCases, [0.1, 1.0])
    func aStallIsAbsorbedOrIsOneUnderrunAndLosesNoFrame(_ kind: Backend, _ stall: Double) throws {
        let frames = 48_000 * 5
        let decoder = StallingDecoder(PCMBufferDecoder(try identityBuffer(0..<frames)), stallFrame: 48_000 * 3, stall: stall)
        let configuration = OutputConfiguration(sampleRate: 48_000, channelCount: 2, periodFrames: 256, periodCount: 3)
        let backend: any PlaybackBackend
        var capture: OutputCapture?
        switch kind {
        case .queue:
            let device = try NullDevice(configuration: configuration)
            capture = device.capture(frames: 48_000 * 12)
            backend = try BufferQueueBackend(device: device)
        case .openAL:
            backend = try OpenALBackend.open(.null, configuration: configuration).backend
        }
        let player = try AudioPlayer(source: decoder, url: nil, data: nil, backend: backend, eventQueue: nil)
        try player.play()
        let deadline = Date().addingTimeInterval(15)
        while player.state != .stopped, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        #expect(player.state == .stopped, "the player played to its end")
        var gaps: [Int] = []
        if let capture {
            Thread.sleep(forTimeInterval: 0.1)  // the last periods leave the device's window
            let indices = decodeIdentity(capture.frames)
            let heard = indices.compactMap { $0 }
            #expect(heard == Array(0..<frames), "every frame once, in order: \(heard.count) heard of \(frames)")
            // The silent runs between the first frame heard and the last.
            let first = indices.firstIndex { $0 != nil } ?? 0, last = indices.lastIndex { $0 != nil } ?? 0
            var run = 0
            for index in indices[first...last] {
                if index == nil { run += 1 } else if run > 0 { gaps.append(run); run = 0 }
            }
        }
        guard !Self.underSanitizer else { return }
        if stall < 0.2 {
            #expect(player.underrunCount == 0, "the queued buffers cover a 100 ms stall")
            #expect(gaps.isEmpty, "silent runs \(gaps)")
        } else {
            #expect(player.underrunCount == 1, "the stall ran the voice dry once")
            if capture != nil {
                #expect(gaps.count == 1, "one dry spell, then the feed caught up: silent runs \(gaps)")
                #expect(gaps.first.map { $0 >= 48_000 / 2 } ?? false, "the stall is heard as silence: \(gaps)")
            }
        }
    }
}
