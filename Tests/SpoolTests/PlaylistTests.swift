import Dispatch
import Foundation
import Spool
import Testing
import SpoolTestSupport

/// `Playlist` on both back-ends, rendered offline: joins compared with the items' own frames.
@Suite("Playlist on both back-ends")
struct PlaylistTests {
    /// Item `k` (0…3) of up to 30 000 frames: identity frames numbered from 40 000 × k (all
    /// below 2^17, so every sample stays within full scale).
    static func item(_ k: Int, frames: Int = 3_000) throws -> PlaylistItem {
        .buffer(try identityBuffer((k * 40_000)..<(k * 40_000 + frames)))
    }

    /// The events told up to and with `.finished`, as text.
    static func told(_ events: AsyncStream<PlaylistEvent>) async -> [String] {
        var told: [String] = []
        for await event in events {
            told.append("\(event)")
            if case .finished = event { break }
        }
        return told
    }

    /// Which items were heard, in order, from the identity numbers of the rendered frames.
    static func heard(_ out: [Float]) -> [Int] {
        var items: [Int] = []
        for index in decodeIdentity(out).compactMap({ $0 }) where items.last != index / 40_000 {
            items.append(index / 40_000)
        }
        return items
    }

    @Test(arguments: Backend.allCases)
    func twoItemsOfOneFormatJoinSampleForSample(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let playlist = try Playlist(items: [Self.item(0, frames: 5_000), Self.item(1, frames: 4_000)], backend: rig.backend)
        try playlist.play()
        let out = try rig.render(until: { playlist.player.state == .stopped }, limit: 48_000) + rig.render(512)
        #expect(runs(decodeIdentity(out).compactMap { $0 }) == "0..<5000 40000..<44000", "nothing between the two")
        let firstSilent = decodeIdentity(out).firstIndex { $0 == nil } ?? 0
        #expect(firstSilent == 9_000, "the second item's first frame follows the first's last at once")
    }

    @Test(arguments: Backend.allCases)
    func itemsOfDifferentFormatsJoinConvertedWithoutAGap(_ kind: Backend) throws {
        // 48 kHz stereo, then 44.1 kHz mono: the second is converted to the output as it plays.
        let rig = try Rig(kind)
        let first = try sine(600, frames: 4_800, format: stereo48, amplitude: 0.4)
        let mono = try AudioFormat(sampleRate: 44_100, channelCount: 1)
        let second = try sine(900, frames: 8_820, format: mono, amplitude: 0.4)
        let playlist = try Playlist(items: [.buffer(first), .buffer(second)], backend: rig.backend)
        try playlist.play()
        let out = try rig.render(until: { playlist.player.state == .stopped }, limit: 48_000)
        let expected = first.samples + (try second.converted(to: stereo48)).samples
        #expect(expected.count / 2 == 4_800 + 9_600)
        let played = Array(out.prefix(expected.count))
        #expect(snr(played, expected) >= 80, "\(snr(played, expected)) dB against the two items joined, converted")
        #expect(out[expected.count...].allSatisfy { $0 == 0 })
    }

    @Test(arguments: Backend.allCases)
    func twoFilesJoinAsTheirDecodersDecodeThem(_ kind: Backend) async throws {
        let rig = try Rig(kind, rate: 44_100)
        let paths = [fixture("wav-44100-stereo-s16.wav"), fixture("flac-44100-stereo-s16.flac")]
        let expected = try paths.flatMap { try DecoderRegistry.shared.open(path: $0).decodeAll().samples }
        let playlist = try Playlist(items: paths.map { .file(URL(fileURLWithPath: $0)) }, backend: rig.backend)
        let events = playlist.events
        try playlist.play()
        let out = try rig.render(until: { playlist.player.state == .stopped }, limit: 4 * 44_100) + rig.render(512)
        #expect(snr(Array(out.prefix(expected.count)), expected) >= 80)
        #expect(out[expected.count...].allSatisfy { $0 == 0 })
        #expect(await Self.told(events) == ["current item 0", "current item 1", "finished"])
    }

    @Test(arguments: Backend.allCases)
    func nextPreviousAndJumpMoveToTheirItems(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let playlist = try Playlist(items: (0..<4).map { try Self.item($0, frames: 10_000) }, backend: rig.backend)
        try playlist.play()
        var out = try rig.render(2_048)
        #expect(playlist.currentIndex == 0)
        try playlist.advanceToNextItem()
        out += try rig.render(2_048)
        #expect(playlist.currentIndex == 1)
        try playlist.jump(to: 3)
        out += try rig.render(2_048)
        #expect(playlist.currentIndex == 3)
        try playlist.previous()
        out += try rig.render(2_048)
        #expect(playlist.currentIndex == 2)
        #expect(Self.heard(out) == [0, 1, 3, 2])
        // Each move starts its item at its first frame.
        let starts = decodeIdentity(out).compactMap { $0 }.filter { $0 % 40_000 < 3 }
        #expect(starts.filter { $0 % 40_000 == 0 }.count >= 3, "items started from frame 0: \(starts)")
        expectError(.outOfRange, "jump to item 9") { try playlist.jump(to: 9) }
    }

    @Test(arguments: Backend.allCases)
    func repeatAllOneAndOff(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let playlist = try Playlist(items: [Self.item(0, frames: 1_000), Self.item(1, frames: 1_000)], backend: rig.backend)
        playlist.setRepeatMode(.all)
        try playlist.play()
        let all = try rig.render(5_000)
        #expect(runs(decodeIdentity(all).compactMap { $0 }.prefix(4_000).map { $0 })
                == "0..<1000 40000..<41000 0..<1000 40000..<41000", "repeat all joins without a gap")

        // Long items, so a change lands while the feed is still inside the item playing.
        let rig2 = try Rig(kind)
        let long = try Playlist(items: [Self.item(0, frames: 30_000), Self.item(1, frames: 30_000)], backend: rig2.backend)
        long.setRepeatMode(.one)
        try long.play()
        let one = decodeIdentity(try rig2.render(70_000)).compactMap { $0 }
        #expect(runs(one) == "0..<30000 0..<30000 0..<10000", "repeat one plays its item again and again")
        long.setRepeatMode(.off)
        let rest = decodeIdentity(try rig2.render(until: { long.player.state == .stopped }, limit: 200_000)).compactMap { $0 }
        #expect(runs(rest) == "10000..<30000 40000..<70000", "repeat off: the rest of the item, the next, then the end")
    }

    @Test
    func shuffleIsSeededAndKeepsTheCurrentItemFirst() throws {
        let rig = try Rig(.queue)
        let playlist = try Playlist(items: (0..<8).map { try Self.item($0, frames: 500) }, backend: rig.backend)
        playlist.setShuffle(true, seed: 42)
        let order = playlist.playOrder
        #expect(order.first == 0 && Set(order) == Set(0..<8) && order != Array(0..<8))
        playlist.setShuffle(false)
        #expect(playlist.playOrder == Array(0..<8))
        playlist.setShuffle(true, seed: 42)
        #expect(playlist.playOrder == order, "the same seed, the same order")
        try playlist.play()
        let out = try rig.render(until: { playlist.player.state == .stopped }, limit: 48_000)
        #expect(Self.heard(out) == order, "played in the shuffled order")
    }

    @Test(arguments: Backend.allCases)
    func removingThePlayingItemMovesToTheNextAndInsertingAddsOne(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let playlist = try Playlist(items: (0..<3).map { try Self.item($0, frames: 30_000) }, backend: rig.backend)
        try playlist.play()
        var out = try rig.render(1_024)
        try playlist.remove(at: 0)
        #expect(playlist.items.count == 2)
        out += try rig.render(1_024)
        #expect(playlist.currentIndex == 0, "the old item 1 is now item 0")
        try playlist.insert(try Self.item(3, frames: 1_000), at: 1)
        out += try rig.render(until: { playlist.player.state == .stopped }, limit: 192_000)
        #expect(Self.heard(out) == [0, 1, 3, 2])
        expectError(.outOfRange, "remove item 5") { try playlist.remove(at: 5) }
    }

    @Test(arguments: Backend.allCases)
    func startTimesAndLoopsPlayEachItemFromItsStartThenWhole(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let playlist = try Playlist(items: [Self.item(0, frames: 3_000), Self.item(1, frames: 2_000)], backend: rig.backend)
        try playlist.setStartTime(1_000 / 48_000, forItemAt: 0)
        try playlist.setStartTime(500 / 48_000, forItemAt: 1)
        try playlist.setNumberOfLoops(1)
        try playlist.play()
        let out = try rig.render(until: { playlist.player.state == .stopped }, limit: 48_000)
        #expect(runs(decodeIdentity(out).compactMap { $0 }) == "1000..<3000 0..<3000 40500..<42000 40000..<42000",
                "each item from its start time, its loop pass whole, with nothing between")
        let passages = playlist.passages
        #expect(passages.map(\.index) == [0, 0, 1, 1] && passages.map(\.pass) == [1, 2, 1, 2])
        #expect(passages.map(\.outputFrames) == [2_000, 3_000, 1_500, 2_000], "\(passages)")
        #expect(passages.map(\.framesPlayed) == [2_000, 3_000, 1_500, 2_000])
        #expect(abs(passages[0].startTime - 1_000 / 48_000) < 1e-9 && passages[1].startTime == 0)
        expectError(.invalidParameter, "a negative start time") { try playlist.setStartTime(-1, forItemAt: 0) }
        expectError(.outOfRange, "a start time for item 5") { try playlist.setStartTime(0, forItemAt: 5) }
        expectError(.invalidParameter, "numberOfLoops -2") { try playlist.setNumberOfLoops(-2) }
    }

    @Test(arguments: Backend.allCases)
    func aStartTimePastTheEndSkipsTheItemAsFailed(_ kind: Backend) async throws {
        let rig = try Rig(kind)
        let playlist = try Playlist(items: [Self.item(0, frames: 1_000), Self.item(1, frames: 500), Self.item(2, frames: 1_000)],
                                    backend: rig.backend)
        try playlist.setStartTime(1, forItemAt: 1)
        let events = playlist.events
        try playlist.play()
        let out = try rig.render(until: { playlist.player.state == .stopped }, limit: 48_000)
        #expect(runs(decodeIdentity(out).compactMap { $0 }) == "0..<1000 80000..<81000")
        let told = await Self.told(events)
        #expect(told.contains("item 1 failed: 500 frames of PCM: the start time 1.00 s is past the end (0.01 s)"), "\(told)")
    }

    @Test(arguments: Backend.allCases)
    func aSeekMovesWithinTheItemBeingHeardAndTheNextStillJoins(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let playlist = try Playlist(items: [Self.item(0, frames: 30_000), Self.item(1, frames: 2_000)], backend: rig.backend)
        try playlist.play()
        _ = try rig.render(4_096)
        try playlist.seek(to: 20_000 / 48_000)
        let out = try rig.render(until: { playlist.player.state == .stopped }, limit: 96_000)
        let heard = decodeIdentity(out).compactMap { $0 }
        // The seek fades out where it was (5 ms) and in at frame 20 000.
        let after = try #require(heard.firstIndex { $0 >= 20_000 && $0 < 40_000 })
        #expect(heard[after] == 20_000, "the item plays on from the seek: \(heard[after])")
        #expect(runs(Array(heard[after...])) == "20000..<30000 40000..<42000", "then the next joins")
        let passages = playlist.passages
        #expect(passages.count == 2 && abs(passages[0].startTime - 20_000 / 48_000) < 1e-9, "\(passages)")
        expectError(.invalidParameter, "a negative seek") { try playlist.seek(to: -1) }
    }

    @Test(arguments: Backend.allCases)
    func stopThenPlayGoesOnInTheItemBeingHeard(_ kind: Backend) throws {
        let rig = try Rig(kind)
        let playlist = try Playlist(items: [Self.item(0, frames: 2_000), Self.item(1, frames: 30_000)], backend: rig.backend)
        try playlist.play()
        _ = try rig.render(6_144)
        #expect(playlist.currentIndex == 1)
        let time = playlist.currentTime
        try playlist.stop()
        #expect(playlist.currentIndex == 1 && abs(playlist.currentTime - time) < 0.01, "\(playlist.currentTime) s")
        try playlist.play()
        let heard = decodeIdentity(try rig.render(2_048)).compactMap { $0 }
        let first = try #require(heard.first)
        #expect(first >= 40_000 && abs(Double(first - 40_000) / 48_000 - time) < 0.01, "resumed at \(first)")
    }

    @Test(arguments: Backend.allCases)
    func aDamagedItemPlaysWhatDecodesIsReportedAndTheNextJoins(_ kind: Backend) async throws {
        // The truncated WAV decodes 13 225 of its frames (at 44.1 kHz, converted to the output).
        let rig = try Rig(kind)
        let truncated = fixture("broken/truncated.wav")
        let prefix = try DecoderRegistry.shared.open(path: truncated).decodeAll()
        let notAudio = URL(fileURLWithPath: fixture("broken/text.mp3"))
        let playlist = try Playlist(items: [.file(URL(fileURLWithPath: truncated)), .file(notAudio), Self.item(1, frames: 1_000)],
                                    backend: rig.backend)
        let events = playlist.events
        try playlist.play()
        let out = try rig.render(until: { playlist.player.state == .stopped }, limit: 4 * 44_100)
        let converted = try prefix.converted(to: stereo48)
        #expect(snr(Array(out.prefix(converted.samples.count)), converted.samples) >= 80, "every frame that decodes plays")
        let rest = Array(out[converted.samples.count...])
        #expect(runs(decodeIdentity(rest).compactMap { $0 }) == "40000..<41000", "the item after the two joins at once")
        #expect(decodeIdentity(Array(rest.prefix(2))).first == 40_000)
        let told = await Self.told(events)
        try #require(told.count == 5, "\(told)")
        #expect(told[0] == "current item 0")
        #expect(told[1].hasPrefix("item 0 failed: ") && told[1].contains("data ends early"), "\(told)")
        #expect(told[2].hasPrefix("item 1 failed: ") && told[2].contains("text.mp3"), "\(told)")
        #expect(told[3] == "current item 2" && told[4] == "finished", "\(told)")
        #expect(playlist.passages.map(\.framesPlayed) == [prefix.frameCount, 1_000])
    }
}

/// A playlist announces each item when its first frame is heard: offline in the render call
/// that renders it, in real time within a device period of it. (Item 0 was announced only
/// when item 1 was queued, the later items when they were queued, about 0.2 s early, and a
/// jump before play announced item 0 as well.)
@Suite("Playlist items announced when heard")
struct PlaylistAnnouncementTests {
    /// What a playlist's events stream has told so far, read on a task of its own.
    final class Told: Sendable {
        let events = Locked<[String]>([])
        private let reader: Task<Void, Never>

        init(_ stream: AsyncStream<PlaylistEvent>) {
            let events = self.events
            reader = Task { for await event in stream { events.withLock { $0.append("\(event)") } } }
        }

        deinit { reader.cancel() }

        /// The events once `count` have come, or what came within 5 s.
        func waitFor(_ count: Int) async -> [String] {
            let deadline = ContinuousClock.now + .seconds(5)
            while events.withLock({ $0.count < count }), ContinuousClock.now < deadline {
                try? await Task.sleep(for: .milliseconds(2))
            }
            return events.withLock { $0 }
        }

        /// The events after a pause long enough for any already sent to have been read: offline,
        /// nothing else sends one while the test renders nothing.
        func settled() async -> [String] {
            try? await Task.sleep(for: .milliseconds(100))
            return events.withLock { $0 }
        }
    }

    @Test(arguments: Backend.allCases)
    func eachItemIsAnnouncedInTheRenderCallThatRendersItsFirstFrame(_ kind: Backend) async throws {
        let rig = try Rig(kind)
        let playlist = try Playlist(items: [PlaylistTests.item(0, frames: 5_000), PlaylistTests.item(1, frames: 4_000),
                                            PlaylistTests.item(2, frames: 3_000)], backend: rig.backend)
        let told = Told(playlist.events)
        try playlist.play()
        #expect(await told.settled() == [], "nothing is heard before the first render")
        var rendered = 0
        var expected: [String] = []
        for (index, first) in [0, 5_000, 9_000].enumerated() {
            _ = try rig.render(first - rendered)
            rendered = first
            #expect(await told.settled() == expected, "item \(index) is not announced before frame \(first) renders")
            _ = try rig.render(1)
            rendered += 1
            expected.append("current item \(index)")
            #expect(await told.waitFor(expected.count) == expected, "item \(index) is announced with its first frame, \(first)")
        }
        _ = try rig.render(until: { playlist.player.state == .stopped }, limit: 48_000)
        #expect(await told.waitFor(4) == expected + ["finished"])
    }

    @Test(arguments: Backend.allCases)
    func aJumpBeforePlayAnnouncesOnlyTheItemJumpedTo(_ kind: Backend) async throws {
        let rig = try Rig(kind)
        let playlist = try Playlist(items: (0..<4).map { try PlaylistTests.item($0, frames: 3_000) }, backend: rig.backend)
        let told = Told(playlist.events)
        try playlist.jump(to: 2)
        try playlist.play()
        _ = try rig.render(1)
        #expect(await told.waitFor(1) == ["current item 2"])
        #expect(await told.settled() == ["current item 2"], "item 0 is never heard, nor announced")
        let out = try rig.render(until: { playlist.player.state == .stopped }, limit: 48_000)
        #expect(PlaylistTests.heard(out) == [2, 3])
        #expect(await told.waitFor(3) == ["current item 2", "current item 3", "finished"])
    }

    /// On the real-time null devices each item comes within a device period (21 ms here) of
    /// when it is heard: item 1 comes as long after item 0 as item 0 lasts.
    @Test(arguments: Backend.allCases)
    func inRealTimeEachItemIsAnnouncedWithinADevicePeriodOfBeingHeard(_ kind: Backend) async throws {
        let configuration = OutputConfiguration(sampleRate: 48_000, periodFrames: 1_024, periodCount: 3)
        let backend: any PlaybackBackend = switch kind {
        case .queue:
            // Starting behind the buffer, as OpenAL does, so that both are heard the output
            // latency after play() (a rewind would start the first item within 1 ms).
            try BufferQueueBackend.open(.null, configuration: configuration).backend.withRewindsOff()
        case .openAL: try OpenALBackend.open(.null, configuration: configuration).backend
        }
        let playlist = try Playlist(items: [.buffer(try sine(440, frames: 14_400, format: stereo48)),
                                            .buffer(try sine(660, frames: 4_800, format: stereo48))], backend: backend)
        let arrivals = Locked<[(String, UInt64)]>([])
        let events = playlist.events
        // Read on a queue of the test's own: other tests' offline renders may hold every thread
        // of the cooperative pool, and the reading would come late.
        let reader = Task(executorPreference: QueueExecutor()) {
            for await event in events {
                arrivals.withLock { $0.append(("\(event)", HostTime.now())) }
                if case .finished = event { break }
            }
        }
        let played = HostTime.now()
        try playlist.play()
        await reader.value
        let told = arrivals.withLock { $0 }
        try #require(told.map(\.0) == ["current item 0", "current item 1", "finished"], "\(told.map(\.0))")
        let period = 1_024.0 / 48_000
        let first = HostTime.seconds(from: played, to: told[0].1)
        #expect(first >= backend.outputLatency - period - 0.005, "item 0 came \(first) s after play(), before it was heard")
        let gap = HostTime.seconds(from: told[0].1, to: told[1].1)
        #expect(abs(gap - 0.3) < period + 0.01, "item 1 came \(gap) s after item 0, which lasts 0.3 s")
    }
}

/// Runs the jobs of the tasks that prefer it on a dispatch queue rather than on the
/// cooperative pool.
final class QueueExecutor: TaskExecutor {
    let queue = DispatchQueue(label: "test.playlist.arrivals")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

/// A playlist's event streams end when it goes, as a player's do.
@Suite("Playlist events end with the playlist")
struct PlaylistEventStreamTests {
    @Test(arguments: Backend.allCases)
    func aStreamOfEventsFinishesOnceThePlaylistIsReleased(_ kind: Backend) async throws {
        let rig = try Rig(kind)
        var playlist: Playlist? = try Playlist(
            items: [.buffer(try sine(440, frames: 4_800, format: stereo48))], backend: rig.backend)
        let events = try #require(playlist).events
        let names = Locked<[String]>([])
        let seen = Task {
            for await event in events { names.withLock { $0.append("\(event)") } }
        }
        try playlist?.play()
        _ = try rig.render(until: { playlist?.player.state == .stopped }, limit: 48_000)
        let heard = ContinuousClock.now + .seconds(5)
        while !names.withLock({ $0.contains("finished") }), ContinuousClock.now < heard {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(names.withLock { $0.last } == "finished", "\(names.withLock { $0 })")
        weak let gone = playlist
        playlist = nil
        #expect(gone == nil, "nothing else holds the playlist")
        // The stream ends: the loop above returns.
        let ended = await withTaskGroup(of: Bool.self) { group in
            group.addTask { await seen.value; return true }
            group.addTask { try? await Task.sleep(for: .seconds(5)); return false }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        #expect(ended, "the stream did not end within 5 s of the playlist going")
    }
}

extension BufferQueueBackend {
    /// The back-end, its starts waiting behind the device's buffer.
    func withRewindsOff() -> BufferQueueBackend {
        engine.startsBelowFloor = false
        return self
    }
}
