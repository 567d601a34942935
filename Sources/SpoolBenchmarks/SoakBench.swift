import Foundation
import Spool

#if canImport(Glibc)
import Glibc
#endif

/// `spool bench soak`: Spool run for a long time the way a program uses it, with its resident
/// set, threads and open descriptors sampled every second.
///
/// Over `--minutes` of wall time, at once:
/// - **real time**, on a null device per back-end: a player looping a file, a playlist of
///   every fixture repeating, and a sound effect started every 100 ms;
/// - **offline**, per back-end, as fast as the CPU allows: a looping player and a repeating
///   playlist rendered for as many minutes of audio as the run lasts;
/// - **cycles**: `--threads` threads making players on the real-time back-ends and taking
///   each through play, seek, pause, play, and stop or release, `--cycles` in all, spread
///   over the run.
///
/// A watchdog times every call the soak makes: one that takes more than a second fails the
/// run, and one that has not returned after ten ends the process (a deadlock). After a
/// warm-up (a tenth of the run, at least 20 s), the resident set must grow by no more than
/// 4 MiB and the thread and descriptor counts must end where they were. Growth is the mean of
/// the last window of samples less the mean of the first after the warm-up (each a minute, or
/// a sixth of what follows the warm-up when that is shorter): with players made and released
/// every few milliseconds, one sample swings by megabytes, and a peak against one base sample
/// measures those swings rather than a trend. The peak's growth is reported beside it. The last
/// line sums it up; the exit status is 1 when the run failed.
enum SoakBench {
    struct Sample: Codable {
        let second: Int
        let residentKiB: Int
        /// What the program holds from malloc (`mallinfo2`: in use in every arena and mapped
        /// blocks): growth here is memory still reachable, where growth of the resident set
        /// alone is the allocator's (freed memory kept in arenas, fragmentation).
        let heapInUseKiB: Int
        let threads: Int
        let descriptors: Int
    }

    struct Report: Codable {
        let minutes: Double
        let warmUpSeconds: Int
        let samples: [Sample]
        /// Samples in each window whose means are compared.
        let windowSeconds: Int
        /// The resident set's mean over the last window less over the first after the warm-up.
        let residentGrowthKiB: Int
        /// The largest sample after the warm-up less the first window's mean.
        let residentPeakGrowthKiB: Int
        /// The heap in use, by the same windows.
        let heapGrowthKiB: Int
        let threadsAtWarmUp: Int
        let threadsAtEnd: Int
        let descriptorsAtWarmUp: Int
        let descriptorsAtEnd: Int
        let cycles: Int
        let effectsStarted: Int
        let offlineAudioSeconds: [String: Double]
        let longestCallMs: Double
        let longestCall: String
        let failures: [String]
        let passed: Bool
        var timing = "observed"
    }

    /// Every call the soak makes, timed: the longest, the ones over a second, and a process
    /// that ends itself when a call has not returned after ten (a deadlock would hold the run
    /// forever otherwise).
    final class Watchdog: Sendable {
        private struct State {
            var running: [Int: (name: String, start: UInt64)] = [:]
            var next = 0
            var longest: (name: String, nanoseconds: UInt64) = ("", 0)
            var failures: [String] = []
        }
        private let state = Locked(State())

        /// Runs `body`, timed under `name`; an error it throws is a failure of the run.
        func call(_ name: String, _ body: () throws -> Void) {
            let start = HostTime.now()
            let id = state.withLock { s in
                s.next += 1
                s.running[s.next] = (name, start)
                return s.next
            }
            var failure: String?
            do { try body() } catch { failure = "\(name): \(error)" }
            let took = HostTime.now() &- start
            state.withLock { s in
                s.running[id] = nil
                if took > s.longest.nanoseconds { s.longest = (name, took) }
                if took > 1_000_000_000 { s.failures.append("\(name) took \(took / 1_000_000) ms") }
                if let failure { s.failures.append(failure) }
            }
        }

        /// Records a failure that is not a call's.
        func fail(_ text: String) { state.withLock { $0.failures.append(text) } }

        var failures: [String] { state.withLock { $0.failures } }
        var longest: (name: String, milliseconds: Double) {
            state.withLock { ($0.longest.name, Double($0.longest.nanoseconds) / 1e6) }
        }

        /// The calls running for more than `nanoseconds`, with how long.
        func stuck(over nanoseconds: UInt64) -> [String] {
            state.withLock { s in
                // Read under the lock: a call that began after a clock read outside it would
                // seem to have begun in the future (the difference wrapping round).
                let now = HostTime.now()
                return s.running.values.filter { now > $0.start && now - $0.start > nanoseconds }
                    .map { "\($0.name) (\((now - $0.start) / 1_000_000) ms)" }
            }
        }
    }

    /// Stops the soak's threads.
    final class Flag: Sendable {
        private let value = Locked(false)
        var isSet: Bool { value.withLock { $0 } }
        func set() { value.withLock { $0 = true } }
    }

    static func run(_ words: [String]) throws {
        guard let bench = try BenchInvocation(words, valued: ["minutes", "cycles", "threads", "fixtures", "backends", "parts"]) else {
            return
        }
        let args = bench.arguments
        let minutes = try args.double("minutes", in: 0.1...1_440) ?? 60
        let cycleTarget = try args.int("cycles", in: 0...10_000_000) ?? 10_000
        let threadCount = try args.int("threads", in: 1...64) ?? 4
        let folder = URL(fileURLWithPath: args.string("fixtures") ?? "Fixtures")
        let backends = try bench.backends(allowed: ["queue", "openal"], defaults: ["queue", "openal"])
        let allParts: Set<String> = ["player", "playlist", "effects", "offline", "cycles"]
        let parts = Set((args.string("parts") ?? allParts.sorted().joined(separator: ",")).split(separator: ",").map(String.init))
        guard parts.isSubset(of: allParts), !parts.isEmpty else {
            throw UsageError("--parts lists \(allParts.sorted().joined(separator: ", ")), comma-separated")
        }
        // Everything the soak makes lives in `measure` and is let go when it returns, before the
        // process ends: LeakSanitizer then reports only what was really lost.
        func measure() throws -> Report {
            let files = try fixtures(in: folder)
            let seconds = minutes * 60
            let warmUp = Int(max(20, seconds / 10).rounded())
            let watchdog = Watchdog()
            let stop = Flag()
            print("soak: \(String(format: "%g", minutes)) min; \(files.count) files from \(folder.path); \(threadCount) threads "
                  + "for \(cycleTarget) cycles; warm-up \(warmUp) s")

            // Real time: a player, a playlist and effects on each back-end's null device.
            let configuration = OutputConfiguration(sampleRate: 48_000, channelCount: 2, periodFrames: 512, periodCount: 3)
            var opened: [(String, any PlaybackBackend)] = []
            for name in backends {
                let backend: any PlaybackBackend = name == "queue"
                    ? try BufferQueueBackend.open(.null, configuration: configuration).backend
                    : try OpenALBackend.open(.null, configuration: configuration).backend
                opened.append((name, backend))
            }
            let live = opened
            var keep: [AnyObject] = []
            var effectsList: [(SoundEffects, [SystemSound])] = []
            for (name, backend) in live {
                if parts.contains("player") { watchdog.call("\(name): the looping player") {
                    let player = try AudioPlayer(contentsOf: files[0], backend: backend)
                    try player.setNumberOfLoops(-1)
                    try player.play()
                    keep.append(player)
                } }
                if parts.contains("playlist") { watchdog.call("\(name): the playlist") {
                    let playlist = try Playlist(items: files.map { .file($0) }, backend: backend)
                    playlist.setRepeatMode(.all)
                    try playlist.play()
                    keep.append(playlist)
                } }
                if parts.contains("effects") { watchdog.call("\(name): the effects") {
                    let effects = try SoundEffects(backend: backend)
                    let sounds = try files.prefix(4).map { try SystemSound(contentsOf: $0, effects: effects) }
                    effectsList.append((effects, sounds))
                } }
            }
            let effectsStarted = Locked(0)
            let effectsThread = Thread { [effectsList] in
                var index = 0
                while !stop.isSet {
                    for (_, sounds) in effectsList {
                        watchdog.call("an effect's play") { _ = try sounds[index % sounds.count].play() }
                    }
                    effectsStarted.withLock { $0 += 1 }
                    index += 1
                    Thread.sleep(forTimeInterval: 0.1)
                }
            }
            effectsThread.start()

            // Offline: as many minutes of audio as the run lasts, per back-end, in its own thread.
            let offlineSeconds = Locked<[String: Double]>([:])
            let group = DispatchGroup()
            for name in backends where parts.contains("offline") {
                group.enter()
                Thread {
                    defer { group.leave() }
                    // Its calls are timed one by one inside; the whole render is not a call.
                    do {
                        try renderOffline(name, files: files, audioSeconds: seconds, stop: stop, watchdog: watchdog) { done in
                            offlineSeconds.withLock { $0[name] = done }
                        }
                    } catch {
                        watchdog.fail("\(name) offline: \(error)")
                    }
                }.start()
            }

            // Cycles from several threads, spread over the run.
            let cyclesDone = Locked(0)
            let interval = seconds * 0.9 / Double(max(1, cycleTarget)) * Double(threadCount)
            for worker in 0..<(parts.contains("cycles") ? threadCount : 0) {
                group.enter()
                Thread {
                    defer { group.leave() }
                    var generator = SystemRandomNumberGenerator()
                    var next = Date()
                    while !stop.isSet && cyclesDone.withLock({ $0 < cycleTarget }) {
                        let (name, backend) = live[(worker + cyclesDone.withLock { $0 }) % live.count]
                        let file = files.randomElement(using: &generator) ?? files[0]
                        cycle(name, file, backend, watchdog: watchdog, random: &generator)
                        cyclesDone.withLock { $0 += 1 }
                        next += interval
                        let wait = next.timeIntervalSinceNow
                        if wait > 0 { Thread.sleep(forTimeInterval: min(wait, 1)) }
                    }
                }.start()
            }

            // Every second: the resident set, threads and descriptors; the watchdog's stuck calls.
            var samples: [Sample] = []
            let start = Date()
            var second = 0
            while Date().timeIntervalSince(start) < seconds {
                second += 1
                let due = start.addingTimeInterval(Double(second))
                if due > Date() { Thread.sleep(until: due) }
                let sample = Sample(second: second, residentKiB: PlayerBench.residentKiB(), heapInUseKiB: heapInUseKiB(),
                                    threads: count("/proc/self/task"), descriptors: count("/proc/self/fd"))
                samples.append(sample)
                if second % 60 == 0 {
                    print("soak: \(second / 60) min: resident \(sample.residentKiB / 1024) MiB, heap in use "
                          + "\(sample.heapInUseKiB / 1024) MiB, \(sample.threads) threads, "
                          + "\(sample.descriptors) descriptors, \(cyclesDone.withLock { $0 }) cycles")
                }
                let stuck = watchdog.stuck(over: 10_000_000_000)
                if !stuck.isEmpty {
                    print("soak: FAILED: calls have not returned after 10 s (a deadlock?): \(stuck.joined(separator: ", "))")
                    exit(1)
                }
            }
            stop.set()
            if group.wait(timeout: .now() + 30) == .timedOut { watchdog.fail("the soak's threads did not end within 30 s of the stop") }
            while effectsThread.isExecuting { Thread.sleep(forTimeInterval: 0.01) }
            for (effects, _) in effectsList { effects.stopAll() }
            for object in keep {
                if let player = object as? AudioPlayer { watchdog.call("the looping player's stop") { try player.stop() } }
                if let playlist = object as? Playlist { watchdog.call("the playlist's stop") { try playlist.stop() } }
            }

            return summarize(samples, warmUp: warmUp, minutes: minutes, cycles: cyclesDone.withLock { $0 },
                                   effects: effectsStarted.withLock { $0 }, offline: offlineSeconds.withLock { $0 },
                                   watchdog: watchdog)
        }
        let report = try measure()
        let samples = report.samples
        try bench.writeReport(report)
        for failure in report.failures.prefix(20) { print("soak: failure: \(failure)") }
        let offline = report.offlineAudioSeconds.sorted { $0.key < $1.key }
            .map { "\($0.key) \(String(format: "%.1f", $0.value / 60)) min" }.joined(separator: ", ")
        print("soak: \(report.passed ? "PASSED" : "FAILED") after \(String(format: "%g", minutes)) min: resident set "
              + "\(String(format: "%+.2f", Double(report.residentGrowthKiB) / 1024)) MiB after warm-up "
              + "(last \(report.windowSeconds) s against the first; peak \(String(format: "%+.2f", Double(report.residentPeakGrowthKiB) / 1024)) MiB) "
              + "(\(samples.first.map { $0.residentKiB / 1024 } ?? 0)→\(samples.last.map { $0.residentKiB / 1024 } ?? 0) MiB), "
              + "heap in use \(String(format: "%+.2f", Double(report.heapGrowthKiB) / 1024)) MiB; "
              + "threads \(report.threadsAtWarmUp)→\(report.threadsAtEnd); descriptors \(report.descriptorsAtWarmUp)→"
              + "\(report.descriptorsAtEnd); \(report.cycles) cycles, \(report.effectsStarted) effect rounds, offline \(offline); "
              + "longest call \(String(format: "%.1f", report.longestCallMs)) ms (\(report.longestCall)); "
              + "\(report.failures.count) failures")
        if !report.passed { exit(1) }
    }

    /// Bytes the program holds from malloc, in KiB.
    static func heapInUseKiB() -> Int { AllocatorPolicy.bytesInUse / 1024 }

    /// One player's life on a real-time back-end: made, played, moved, paused, played again,
    /// then stopped or simply released; each call timed by the watchdog.
    static func cycle(_ name: String, _ file: URL, _ backend: any PlaybackBackend, watchdog: Watchdog,
                      random: inout SystemRandomNumberGenerator) {
        var made: AudioPlayer?
        watchdog.call("\(name): make a player of \(file.lastPathComponent)") {
            made = try AudioPlayer(contentsOf: file, backend: backend)
        }
        guard let player = made else { return }
        let seek = Double.random(in: 0...max(0.001, player.duration), using: &random)
        let pause = Double.random(in: 0...0.02, using: &random)
        let release = Bool.random(using: &random)
        watchdog.call("\(name): play") { try player.play() }
        Thread.sleep(forTimeInterval: pause)
        watchdog.call("\(name): seek") { try player.setCurrentTime(seek) }
        watchdog.call("\(name): pause") { try player.pause() }
        watchdog.call("\(name): play again") { try player.play() }
        Thread.sleep(forTimeInterval: pause)
        if !release { watchdog.call("\(name): stop") { try player.stop() } }
    }

    /// A looping player and a repeating playlist on an offline device, rendered until
    /// `audioSeconds` of audio or the stop; `progress` is told the seconds rendered.
    static func renderOffline(_ name: String, files: [URL], audioSeconds: Double, stop: Flag, watchdog: Watchdog,
                              progress: (Double) -> Void) throws {
        let configuration = OutputConfiguration(sampleRate: 48_000, channelCount: 2, periodFrames: 1024, periodCount: 2)
        let (backend, renderer) = try OfflineBackend.open(name, configuration)
        var made: (AudioPlayer, Playlist)?
        watchdog.call("\(name): the offline player and playlist") {
            let player = try AudioPlayer(contentsOf: files[files.count / 2], backend: backend)
            try player.setNumberOfLoops(-1)
            let playlist = try Playlist(items: files.map { .file($0) }, backend: backend)
            playlist.setRepeatMode(.all)
            try player.play()
            try playlist.play()
            made = (player, playlist)
        }
        guard let (player, playlist) = made else { return }
        let chunk = 4096
        let out = UnsafeMutableBufferPointer<Float>.allocate(capacity: chunk * 2)
        defer { out.deallocate() }
        var rendered = 0
        while Double(rendered) < audioSeconds * 48_000 && !stop.isSet {
            watchdog.call("\(name): an offline render") { try renderer.render(frames: chunk, into: out) }
            rendered += chunk
            if rendered % (chunk * 64) == 0 { progress(Double(rendered) / 48_000) }
        }
        progress(Double(rendered) / 48_000)
        watchdog.call("\(name): the offline stop") {
            try player.stop()
            try playlist.stop()
        }
    }

    static func summarize(_ samples: [Sample], warmUp: Int, minutes: Double, cycles: Int, effects: Int,
                          offline: [String: Double], watchdog: Watchdog) -> Report {
        let after = samples.filter { $0.second >= warmUp }
        let base = after.first ?? samples.last ?? Sample(second: 0, residentKiB: 0, heapInUseKiB: 0, threads: 0, descriptors: 0)
        let end = samples.last ?? base
        let window = max(1, min(60, after.count / 6))
        func mean(_ run: ArraySlice<Sample>, _ value: (Sample) -> Int) -> Int {
            run.isEmpty ? 0 : run.reduce(0) { $0 + value($1) } / run.count
        }
        let first = after.prefix(window), last = after.suffix(window)
        let growth = mean(last, \.residentKiB) - mean(first, \.residentKiB)
        let peakGrowth = (after.map(\.residentKiB).max() ?? 0) - mean(first, \.residentKiB)
        var failures = watchdog.failures
        if growth > 4 * 1024 {
            failures.append("the resident set grew \(growth) KiB after the warm-up, the mean of the last \(window) s "
                            + "against the first \(window) s (limit 4096)")
        }
        // A cycle's player may be between its threads' start and end at either sample.
        if end.threads > base.threads + 4 { failures.append("threads grew from \(base.threads) to \(end.threads)") }
        if end.descriptors > base.descriptors + 4 {
            failures.append("descriptors grew from \(base.descriptors) to \(end.descriptors)")
        }
        let longest = watchdog.longest
        return Report(minutes: minutes, warmUpSeconds: warmUp, samples: samples, windowSeconds: window,
                      residentGrowthKiB: growth, residentPeakGrowthKiB: peakGrowth,
                      heapGrowthKiB: mean(last, \.heapInUseKiB) - mean(first, \.heapInUseKiB),
                      threadsAtWarmUp: base.threads, threadsAtEnd: end.threads, descriptorsAtWarmUp: base.descriptors,
                      descriptorsAtEnd: end.descriptors, cycles: cycles, effectsStarted: effects,
                      offlineAudioSeconds: offline, longestCallMs: longest.milliseconds, longestCall: longest.name,
                      failures: failures, passed: failures.isEmpty)
    }

    /// The audio files directly in `folder` that Spool opens, sorted (at least one).
    static func fixtures(in folder: URL) throws -> [URL] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        let files = names.sorted().map { folder.appendingPathComponent($0) }.filter { url in
            ["wav", "mp3", "ogg", "opus", "flac", "aiff", "aifc", "caf"].contains(url.pathExtension)
                && (try? DecoderRegistry.shared.open(path: url.path)) != nil
        }
        guard !files.isEmpty else { throw UsageError("soak: no audio file in \(folder.path) (--fixtures DIR)") }
        return files
    }

    /// Entries in a /proc folder.
    static func count(_ folder: String) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: folder).count) ?? -1
    }
}
