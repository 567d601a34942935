import Foundation
import Spool
import Testing
import SpoolTestSupport

/// Rendering offline, the one shape the README shows: open either back-end on `.offline`, play,
/// and render its `offlineRenderer` until the player stops.
@Suite("Offline rendering through either back-end's offlineRenderer")
struct OfflineRenderingTests {
    static func open(_ kind: Backend, _ target: OutputTarget) throws -> any PlaybackBackend {
        let configuration = OutputConfiguration(sampleRate: 44_100)
        switch kind {
        case .queue: return try BufferQueueBackend.open(target, configuration: configuration).backend
        case .openAL: return try OpenALBackend.open(target, configuration: configuration).backend
        }
    }

    @Test(arguments: Backend.allCases)
    func aPlayerRenderedOfflinePlaysTheFileSampleForSample(_ kind: Backend) throws {
        let backend = try Self.open(kind, .offline)
        let renderer = try #require(backend.offlineRenderer, "an offline back-end has a renderer")
        let path = fixture("flac-44100-stereo-s16.flac")
        let reference = try DecoderRegistry.shared.open(path: path).decodeAll()
        let player = try AudioPlayer(contentsOfFile: path, backend: backend)
        try player.play()
        var out: [Float] = []
        while player.isPlaying, out.count < reference.samples.count * 2 {
            out += try renderer.render(frames: 1_024).samples
        }
        #expect(!player.isPlaying, "the player stopped at its end")
        #expect(out.count >= reference.samples.count)
        let played = Array(out.prefix(reference.samples.count))
        #expect(snr(played, reference.samples) >= 80, "\(kind): \(snr(played, reference.samples)) dB against the decode")
        #expect(out.dropFirst(reference.samples.count).allSatisfy { $0 == 0 }, "silence after the last frame")
    }

    /// Offline, `finishedPlaying` reaches the delegate and the streams within the render call
    /// that renders the last frame: a loop that renders until it comes stops there, whatever
    /// the load. (Delivered after the fact, it came up to seconds of audio late.)
    @Test(arguments: Backend.allCases)
    func offlineTheEndEventComesInTheRenderCallOfTheLastFrame(_ kind: Backend) async throws {
        let backend = try Self.open(kind, .offline)
        let renderer = try #require(backend.offlineRenderer)
        let queue = DispatchQueue(label: "test.offline.events")
        let tone = try sine(440, frames: 10_000, format: AudioFormat(sampleRate: 44_100, channelCount: 2))
        for trial in 0..<3 {
            let player = try AudioPlayer(buffer: tone, backend: backend, eventQueue: queue)
            let log = PlayerEventLog(queue: queue)
            player.delegate = log
            let events = player.events
            try player.play()
            var frames = 0, calls = 0
            while log.names.withLock({ $0.isEmpty }), calls < 100 {
                _ = try renderer.render(frames: 512)
                frames += 512
                calls += 1
            }
            #expect(log.names.withLock { $0 } == ["finished(true)"], "trial \(trial)")
            // 10 000 frames end in render call 20 (frames 9728..<10240).
            #expect(frames == 10_240, "trial \(trial): the event came after \(frames) frames")
            var received: [String] = []
            for await event in events {
                received.append("\(event)")
                if case .finishedPlaying = event { break }
            }
            #expect(received.last == "finished playing (successfully: true)")
        }
    }

    /// A render loop that runs on the event queue itself (so a delivery cannot wait for the
    /// queue) still gets the event in the render call of the last frame.
    @Test(arguments: Backend.allCases)
    func aRenderLoopOnTheEventQueueGetsTheEventInline(_ kind: Backend) throws {
        let backend = try Self.open(kind, .offline)
        let renderer = try #require(backend.offlineRenderer)
        let queue = DispatchQueue(label: "test.offline.inline")
        let tone = try sine(440, frames: 4_000, format: AudioFormat(sampleRate: 44_100, channelCount: 2))
        let frames = try queue.sync { () throws -> Int in
            let player = try AudioPlayer(buffer: tone, backend: backend, eventQueue: queue)
            let log = PlayerEventLog(queue: queue)
            player.delegate = log
            try player.play()
            var frames = 0
            while log.names.withLock({ $0.isEmpty }), frames < 48_000 {
                _ = try renderer.render(frames: 512)
                frames += 512
            }
            return frames
        }
        #expect(frames == 4_096)
    }

    @Test(arguments: Backend.allCases)
    func aRealTimeOutputHasNoOfflineRenderer(_ kind: Backend) throws {
        let backend = try Self.open(kind, .null)
        #expect(backend.offlineRenderer == nil)
    }
}
