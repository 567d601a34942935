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

    // MARK: renderToEnd

    /// What the multi-call method renders for `player` (made by `make` on a new offline
    /// back-end): render calls of the renderer's chunk until the player stops, then one more.
    static func renderedByCalls(_ kind: Backend, _ make: (any PlaybackBackend) throws -> AudioPlayer) throws -> [Float] {
        let backend = try open(kind, .offline)
        let renderer = try #require(backend.offlineRenderer)
        let player = try make(backend)
        try player.play()
        var out: [Float] = []
        while player.isPlaying, out.count < 44_100 * 2 * 60 {
            out += try renderer.render(frames: renderer.renderChunkFrames).samples
        }
        return out + (try renderer.render(frames: renderer.renderChunkFrames).samples)
    }

    /// Expects `rendered` to be the first samples of `byCalls` exactly, with nothing but
    /// silence after them there.
    static func expectPrefix(_ rendered: [Float], of byCalls: [Float], _ label: String,
                             sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(byCalls.count >= rendered.count, "\(label)", sourceLocation: sourceLocation)
        let mismatch = zip(rendered, byCalls).enumerated().first { $0.element.0 != $0.element.1 }?.offset
        #expect(mismatch == nil, "\(label): first sample that differs: \(mismatch ?? -1)", sourceLocation: sourceLocation)
        #expect(byCalls.dropFirst(rendered.count).allSatisfy { $0 == 0 }, "\(label): sound after the end",
                sourceLocation: sourceLocation)
        #expect(rms(rendered) > 0.01, "\(label): not silent", sourceLocation: sourceLocation)
    }

    /// One call renders a file to its last frame, not to the end of the render call that
    /// rendered it: exactly its frames, sample for sample what render calls give.
    @Test(arguments: Backend.allCases)
    func renderToEndIsTheFileExactly(_ kind: Backend) throws {
        let path = fixture("flac-44100-stereo-s16.flac")
        let reference = try DecoderRegistry.shared.open(path: path).decodeAll()
        let player = try AudioPlayer(contentsOfFile: path, backend: Self.open(kind, .offline))
        let rendered = try player.renderToEnd()
        #expect(rendered.frameCount == reference.frameCount, "\(kind)")
        #expect(rendered.format == (try AudioFormat(sampleRate: 44_100, channelCount: 2)))
        #expect(player.state == .stopped)
        let byCalls = try Self.renderedByCalls(kind) { try AudioPlayer(contentsOfFile: path, backend: $0) }
        Self.expectPrefix(rendered.samples, of: byCalls, "\(kind)")
        #expect(snr(rendered.samples, reference.samples) >= 80, "\(kind): against the decode")
    }

    /// Loops and rate are the player's: three passes of a tone at rate 1 are three times its
    /// frames; at varispeed 1.5 two thirds of that, to the converter's rounding.
    @Test(arguments: Backend.allCases)
    func renderToEndHonoursLoopsAndRate(_ kind: Backend) throws {
        let tone = try sine(440, frames: 10_000, format: AudioFormat(sampleRate: 44_100, channelCount: 2))
        let looped = { (backend: any PlaybackBackend) throws -> AudioPlayer in
            let player = try AudioPlayer(buffer: tone, backend: backend)
            try player.setNumberOfLoops(2)
            return player
        }
        let rendered = try looped(Self.open(kind, .offline)).renderToEnd()
        #expect(rendered.frameCount == 30_000, "\(kind)")
        Self.expectPrefix(rendered.samples, of: try Self.renderedByCalls(kind, looped), "\(kind), loops")

        let fast = { (backend: any PlaybackBackend) throws -> AudioPlayer in
            let player = try looped(backend)
            try player.setRateMode(.varispeed)
            try player.setRate(1.5)
            try player.setEnableRate(true)
            return player
        }
        let quick = try fast(Self.open(kind, .offline)).renderToEnd()
        #expect(abs(quick.frameCount - 20_000) <= 2, "\(kind): \(quick.frameCount) frames at rate 1.5")
        Self.expectPrefix(quick.samples, of: try Self.renderedByCalls(kind, fast), "\(kind), rate 1.5")
    }

    /// The WAV file holds what the PCM call returns, and the count returned is its frames.
    @Test(arguments: Backend.allCases)
    func renderToEndWritesTheSameFramesToAWAVFile(_ kind: Backend) throws {
        let path = fixture("flac-44100-stereo-s16.flac")
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("spool-render-\(kind)-\(getpid()).wav")
        defer { try? FileManager.default.removeItem(at: url) }
        let written = try AudioPlayer(contentsOfFile: path, backend: Self.open(kind, .offline)).renderToEnd(toWAV: url)
        let inMemory = try AudioPlayer(contentsOfFile: path, backend: Self.open(kind, .offline)).renderToEnd()
        let file = try DecoderRegistry.shared.open(path: url.path).decodeAll()
        #expect(written == inMemory.frameCount)
        #expect(file.frameCount == written)
        #expect(file.samples == inMemory.samples, "\(kind): the file's samples")
    }

    /// A playlist renders every item, gapless, in order, and ends on the last frame of the
    /// last one (identity frames: each output frame names its item and frame).
    @Test(arguments: Backend.allCases)
    func aPlaylistRendersToTheEndOfItsLastItem(_ kind: Backend) async throws {
        let rig = try Rig(kind)
        let playlist = try Playlist(items: [.buffer(identityBuffer(0..<5_000)), .buffer(identityBuffer(40_000..<44_000))],
                                    backend: rig.backend)
        let events = playlist.events
        let rendered = try playlist.renderToEnd()
        #expect(rendered.frameCount == 9_000, "\(kind)")
        let frames = decodeIdentity(rendered.samples)
        let expected = (Array(0..<5_000) + Array(40_000..<44_000)).map { Optional($0) }
        let first = zip(frames, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset
        #expect(first == nil && frames.count == expected.count, "\(kind): every frame, in order; first wrong: \(first ?? -1)")
        // Every event came within the call: the stream holds them all already.
        var told: [String] = []
        for await event in events {
            told.append("\(event)")
            if case .finished = event { break }
        }
        #expect(told == ["current item 0", "current item 1", "finished"])
    }

    /// Where nothing renders on demand, or nothing would end, the call is refused and nothing
    /// plays; a maximum that is not a duration is refused too.
    @Test(arguments: Backend.allCases)
    func renderToEndRefusesWhatCannotEnd(_ kind: Backend) throws {
        let tone = try sine(440, frames: 4_000, format: AudioFormat(sampleRate: 44_100, channelCount: 2))
        let realTime = try AudioPlayer(buffer: tone, backend: Self.open(kind, .null))
        expectError(.invalidState, "a real-time output") { try realTime.renderToEnd() }
        expectError(.invalidState, "a real-time output, to WAV") {
            try realTime.renderToEnd(toWAV: URL(fileURLWithPath: "/tmp/spool-never-\(getpid()).wav"))
        }
        #expect(realTime.state == .stopped)
        let list = try Playlist(items: [.buffer(tone)], backend: Self.open(kind, .null))
        expectError(.invalidState, "a playlist on a real-time output") { try list.renderToEnd() }

        let player = try AudioPlayer(buffer: tone, backend: Self.open(kind, .offline))
        for bad in [Double.nan, .infinity, -.infinity, -1] {
            expectError(.invalidParameter, "maximumSeconds \(bad)") { try player.renderToEnd(maximumSeconds: bad) }
        }
        try player.setNumberOfLoops(-1)
        expectError(.invalidState, "endless loops") { try player.renderToEnd() }
        #expect(player.state == .stopped)
        let playlist = try Playlist(items: [.buffer(tone)], backend: Self.open(kind, .offline))
        playlist.setRepeatMode(.all)
        expectError(.invalidState, "a playlist repeating all") { try playlist.renderToEnd() }
        expectError(.invalidParameter, "a playlist, maximumSeconds NaN") { try playlist.renderToEnd(maximumSeconds: .nan) }
    }

    /// Endless loops with a maximum render exactly the maximum and leave the player playing:
    /// a second call goes on from the next frame, as one long render would.
    @Test(arguments: Backend.allCases)
    func endlessLoopsRenderTheMaximumAndPlayOn(_ kind: Backend) throws {
        let tone = try sine(440, frames: 3_000, format: AudioFormat(sampleRate: 44_100, channelCount: 2))
        let player = try AudioPlayer(buffer: tone, backend: Self.open(kind, .offline))
        try player.setNumberOfLoops(-1)
        let first = try player.renderToEnd(maximumSeconds: 0.5)
        #expect(first.frameCount == 22_050)
        #expect(player.isPlaying)
        let second = try player.renderToEnd(maximumSeconds: 0.25)
        #expect(second.frameCount == 11_025)
        let whole = try AudioPlayer(buffer: tone, backend: Self.open(kind, .offline))
        try whole.setNumberOfLoops(-1)
        let once = try whole.renderToEnd(maximumSeconds: 0.75)
        #expect(first.samples + second.samples == once.samples, "\(kind): two calls are one")
    }
}
