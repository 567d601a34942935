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

    @Test(arguments: Backend.allCases)
    func aRealTimeOutputHasNoOfflineRenderer(_ kind: Backend) throws {
        let backend = try Self.open(kind, .null)
        #expect(backend.offlineRenderer == nil)
    }
}
