import SpoolCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// MARK: - Rate conversion and varispeed (render side)

/// Plays one queue's source frames at the device rate, on the render thread.
///
/// Two lanes, both time-aligned on one count of the source frames (`SourceRing` indices):
/// - at a playback rate of 1 the fixed-ratio lane plays: at `ResamplingQuality.high` libsoxr
///   HQ (`FixedRatioStream`, ~95 dB, about 13 times as fast as the sinc converter), at `balanced`
///   and `fast` libswresample's 32- and 16-tap filters through the same stream; or the source
///   frames themselves when the queue's rate is the device's;
/// - at any other rate the varispeed lane plays: Spool's windowed sinc (`WindowedSincEngine`)
///   over 64 input frames (`high`), 40 (`balanced`) or 32 (`fast`), which glides between ratios
///   at the cost of a fixed one.
///
/// libsoxr reads ahead of what it plays by a number of input frames, which at low source rates
/// is long (180 ms at 8 kHz): a queue must hold that much beyond the period being played. Where
/// its default DFT blocks would read more than `maximumReadAheadSeconds` ahead, it uses short
/// ones (16 to 24 kHz sources); where even those would (8 and 11 kHz), the sinc converter
/// plays the fixed ratio too, as it does varispeed.
///
/// A change of lane crossfades over 5 ms between two outputs that sound the same source
/// instants, so nothing clicks and the position stays exact. Into varispeed, the sinc converter
/// is restarted on the source history so that its next output sounds the fixed lane's next
/// instant. Back out, it first glides to the fixed ratio, then trims its position over 10 ms
/// (a pitch change of at most 0.1 %, about 2 cents; ~0.001 % at 44.1 → 48 kHz) onto an instant
/// the fixed lane can produce, and libsoxr is fed from the input frame that puts one of its
/// outputs exactly there. libsoxr is never cleared (that allocates): the unwanted outputs
/// are skipped.
package final class VoiceResampler {
    /// Reads the queue's next source frames: fills `frames` frames at the pointer and returns
    /// how many, fewer only when a draining queue has ended.
    package typealias SourceReader = (UnsafeMutablePointer<Float>, Int) -> Int

    enum Mode: Equatable {
        /// The fixed-ratio lane plays.
        case fixed
        /// The sinc converter plays, at the playback rate.
        case varispeed
        /// Crossfading from the fixed lane into the sinc converter; frames left.
        case toVarispeed(left: Int)
        /// The sinc converter trims its position onto the fixed lane's next instant; frames left.
        case trimming(left: Int)
        /// Crossfading from the sinc converter into the fixed lane; frames left.
        case toFixed(left: Int)
    }

    /// The most libsoxr may read ahead of what it plays, in seconds of source: 30 ms, a little
    /// under what the sinc converter read ahead at 8 kHz before libsoxr played fixed ratios
    /// (its 48-frame filter plus a 256-frame chunk); 44.1 → 48 kHz reads 26 ms ahead.
    package static let maximumReadAheadSeconds = 0.03

    package let channelCount: Int
    /// Device frames per source frame at a playback rate of 1.
    package let ratio: Double
    /// What it was made for, which a voice that takes it from `VoiceResamplerPool` must match.
    let shape: Shape

    struct Shape: Hashable {
        let channelCount: Int
        let sourceRate: Double
        let ratio: Double
        let maximumFrames: Int
        let declickFrames: Int
    }
    /// The level asked for last (`setQuality`); the lanes move to it at the render thread's
    /// next chance (a crossfade through the varispeed lane, 20 ms, no click).
    package var quality: ResamplingQuality { ResamplingQuality.allCases[requestedLevel.load(ordering: .relaxed)] }
    private let requestedLevel: Atomic<Int>

    /// Moves the conversion to `quality`: real-time safe, from any thread. Every level's
    /// converters were made with the resampler, so the render thread only switches between them.
    package func setQuality(_ quality: ResamplingQuality) {
        requestedLevel.store(ResamplingQuality.allCases.firstIndex(of: quality) ?? 0, ordering: .relaxed)
    }

    /// The converter of the fixed lane at each level (libsoxr HQ at `high`).
    package static func fixedKind(_ quality: ResamplingQuality) -> RateConverterKind {
        switch quality {
        case .fast: .swrFilter16
        case .balanced: .swrFilter32Cutoff85
        case .high: .soxrHQ
        }
    }

    /// The converter of the varispeed lane at each level, 2 to 5 times as fast as the
    /// libsamplerate sinc it replaced. `spool bench resample`: at `balanced` and `high` cleaner
    /// on every figure (worst SNR 110 and 121 dB against 67 and 114, aliasing −107 and −125 dB
    /// against −101 and −118); at `fast` cleaner in the band (97 dB against 67) but with
    /// aliasing near Nyquist let through (−43 dB), as its fixed lane (−9 dB) has.
    package static func varispeedKind(_ quality: ResamplingQuality) -> RateConverterKind {
        switch quality {
        case .fast: .windowedSinc32
        case .balanced: .windowedSinc40
        case .high: .windowedSinc64
        }
    }
    private(set) var mode = Mode.fixed

    /// The fixed lane's stream at each level (in `ResamplingQuality.allCases` order); nil at
    /// equal rates, or where libsoxr would read too far ahead.
    /// Changed only by `renew`, while no voice renders with the resampler.
    private var streams: [FixedRatioStream?]
    /// The varispeed lane's converter at each level.
    private let varispeeds: [StreamingRateConverter<WindowedSincEngine>]
    /// The levels the two lanes are at now (render side).
    private var fixedLevel: Int
    private var varispeedLevel: Int
    private var soxr: FixedRatioStream?
    /// Whether a fixed-ratio lane plays at a playback rate of 1: the source itself or libsoxr.
    private var hasFixedLane: Bool { ratio == 1 || soxr != nil }
    private var varispeed: StreamingRateConverter<WindowedSincEngine>
    private var ring: SourceRing
    /// Frames kept behind the sounding instant: enough to restart either lane there.
    private let historyFrames: Int
    /// Output frames per lane call, which bounds the input a call needs.
    private let blockFrames: Int
    private let declickFrames: Int
    /// 10 ms at 48 kHz: long enough that the largest trim (half a frame) is a 0.1 % pitch change.
    private let trimFrames: Int
    /// Input frames a libsoxr restart may search back for an output that lands exactly: a
    /// rational ratio p/q (in lowest terms) lands exactly within q input frames, and q ≤ 441
    /// for every pair of the usual rates (8 to 192 kHz); other ratios land within a hair.
    private static let searchFrames = 512.0
    private let blend: UnsafeMutablePointer<Float>

    /// Ring index where a draining source ended; `Int.max` while it has not.
    private var sourceEnd = Int.max
    /// Ring index of queue sample time 0.
    private var timelineOrigin = 0.0

    // The fixed lane: the source itself (`soxr == nil`) …
    private var identityPosition = 0
    // … or libsoxr, whose output `k` sounds ring instant `k × inputFramesPerOutput + fixedOrigin`.
    private var fixedOrigin = 0.0
    private var fixedFeedPosition = 0
    private var fixedSkipUntil = 0

    // The varispeed lane.
    private var varispeedFeedPosition = 0
    private var varispeedTarget: Double
    /// Set by `restart` at a playback rate other than 1: the instant the sinc converter is to
    /// start at, on the first render (which may read the source).
    private var pendingVarispeedStart: Double?
    /// Where the fixed lane will take over after a trim.
    private var landing = Landing(instant: 0, outputIndex: 0, feedPosition: 0)

    private struct Landing {
        var instant: Double
        var outputIndex: Int
        var feedPosition: Int
    }

    /// Makes both lanes and warms libsoxr up.
    /// - Parameters:
    ///   - channelCount: Interleaved channels, 1…8.
    ///   - sourceRate: The queue's sample rate.
    ///   - ratio: Device frames per source frame, within `RateConverterKind.supportedRatios`.
    ///   - maximumFrames: The most frames one `render` call asks for.
    ///   - declickFrames: Length of a lane crossfade.
    /// - Throws: A rate-converter error.
    package init(channelCount: Int, sourceRate: Double, ratio: Double, maximumFrames: Int, declickFrames: Int,
                 quality: ResamplingQuality = .default) throws {
        self.channelCount = channelCount
        self.ratio = ratio
        shape = Shape(channelCount: channelCount, sourceRate: sourceRate, ratio: ratio, maximumFrames: maximumFrames,
                      declickFrames: declickFrames)
        let level = ResamplingQuality.allCases.firstIndex(of: quality) ?? 0
        requestedLevel = Atomic(level)
        streams = try ResamplingQuality.allCases.map { try Self.fixedStream($0, channelCount: channelCount, sourceRate: sourceRate, ratio: ratio) }
        // One converter per kind: levels that share a kind share it (one lane plays at a time).
        var byKind: [RateConverterKind: StreamingRateConverter<WindowedSincEngine>] = [:]
        varispeeds = try ResamplingQuality.allCases.map { level in
            let kind = Self.varispeedKind(level)
            if let made = byKind[kind] { return made }
            let made = try makeWindowedSincConverter(kind, channelCount: channelCount, ratio: ratio)
            byKind[kind] = made
            return made
        }
        fixedLevel = level
        varispeedLevel = level
        soxr = streams[level]
        varispeed = varispeeds[level]
        varispeedTarget = ratio
        self.declickFrames = declickFrames
        trimFrames = 2 * declickFrames
        blockFrames = min(maximumFrames, 1024)
        blend = .allocate(capacity: blockFrames * channelCount)

        // The sinc converters' widest reach: at the smallest ratio, a playback rate of 2; and
        // the fixed lanes' (the ring holds what any level's lanes need).
        let slowest = max(ratio / 2, RateConverterKind.supportedRatios.lowerBound)
        let sincReach = varispeeds.map { Int($0.filterReachFrames(atRatio: slowest).rounded(.up)) + 2 }.max() ?? 0
        var history = sincReach
        var fixedNeed = blockFrames
        for case let stream? in streams {
            history = max(history, stream.reachFrames + Int(Self.searchFrames) + 2)
            fixedNeed = max(fixedNeed, Int(Double(blockFrames) * stream.inputFramesPerOutput) + stream.lookaheadFrames + stream.chunkFrames)
        }
        historyFrames = history + 16
        let varispeedNeed = Int(Double(blockFrames) / slowest) + sincReach + 64
        // Slack beyond what must be held, so that sliding the window back is rare.
        let held = historyFrames + max(fixedNeed, varispeedNeed)
        ring = SourceRing(channelCount: channelCount, capacity: held + max(4096, held))
        restart(timeline: 0, playbackRate: 1)
    }

    deinit {
        blend.deallocate()
        ring.deallocate()
    }

    /// The fixed lane's stream at `quality`, nil at equal rates or where it would read ahead
    /// of what plays by more than `maximumReadAheadSeconds`.
    private static func fixedStream(_ quality: ResamplingQuality, channelCount: Int, sourceRate: Double,
                                    ratio: Double) throws -> FixedRatioStream? {
        guard ratio != 1 else { return nil }
        switch quality {
        case .high:
            // The default DFT blocks where their look-ahead fits, else short ones, else none.
            let readAheadLimit = Int(sourceRate * maximumReadAheadSeconds)
            for smallBlocks in [false, true] {
                let stream = try FixedRatioStream(channelCount: channelCount, ratio: ratio, smallBlocks: smallBlocks)
                if stream.lookaheadFrames <= readAheadLimit { return stream }
            }
            return nil
        case .balanced, .fast:
            // libswresample's filters read a few frames ahead at any rate.
            return try FixedRatioStream(kind: fixedKind(quality), channelCount: channelCount, ratio: ratio)
        }
    }

    /// Takes up the level asked for where a lane is idle: the varispeed converter while the
    /// fixed lane plays, the fixed stream while the varispeed lane plays.
    /// - Returns: Whether the fixed lane playing now is at another level than the one asked
    ///   for (the render then passes through the varispeed lane to reach it).
    private func adoptRequestedLevel() -> Bool {
        let want = requestedLevel.load(ordering: .relaxed)
        switch mode {
        case .fixed:
            if varispeedLevel != want {
                varispeed = varispeeds[want]
                varispeedLevel = want
            }
            if fixedLevel != want, soxr == nil, streams[want] == nil {
                fixedLevel = want  // the source itself at every level
            }
            return fixedLevel != want
        case .varispeed:
            if fixedLevel != want {
                soxr = streams[want]
                fixedLevel = want
            }
            return false
        case .toVarispeed, .trimming, .toFixed:
            return false
        }
    }

    /// The queue sample time sounding in the next output frame.
    package var heardTime: Double { outputInstant - timelineOrigin }

    /// Whether the next frames can be read straight from the queued buffers: source and device
    /// rates match, the playback rate is 1, and nothing has been read ahead.
    package func canReadInPlace(playbackRate: Float) -> Bool {
        ratio == 1 && mode == .fixed && playbackRate == 1 && identityPosition == ring.end && sourceEnd == Int.max
    }

    /// Whether the next outputs are the source frames themselves, one source frame each, at
    /// `playbackRate`: a render then reads exactly as many frames as it writes.
    package func copiesSource(playbackRate: Float) -> Bool {
        ratio == 1 && mode == .fixed && playbackRate == 1 && soxr == nil
    }

    /// About how many more source frames a `render` of `frames` frames at `playbackRate`
    /// reads: the source those frames sound, plus what the lanes read ahead of it (libsoxr's
    /// look-ahead and one of its chunks, the sinc converter's reach and fill step; both during
    /// a change of lane), less what is already read. A caller that cannot supply that many
    /// without running dry waits for more (see the OpenAL back-end's streaming source).
    package func sourceFramesNeeded(forOutput frames: Int, playbackRate: Float) -> Int {
        let rate = Double(playbackRate)
        let step = max(rate, 1) / ratio
        var ahead = 0.0
        // The fixed lane plays, or may come back within the call; the sinc converter plays, or
        // takes over within it.
        let fixedPlays = mode != .varispeed || rate == 1
        let sincPlays = mode != .fixed || rate != 1
        if fixedPlays, let soxr { ahead += Double(soxr.lookaheadFrames + soxr.chunkFrames) }
        if sincPlays { ahead += varispeed.filterReachFrames(atRatio: max(ratio / 2, RateConverterKind.supportedRatios.lowerBound)) + 320 }
        let end = outputInstant + Double(frames) * step + ahead
        return max(0, Int(end.rounded(.up)) - ring.end)
    }

    /// Source frames read so far beyond the sounding instant.
    package var framesReadAhead: Double { Double(ring.end) - outputInstant }

    /// Takes note of `frames` source frames played in place (`nil`: silence): the history a
    /// switch into varispeed starts from.
    package func recordHistory(_ frames: UnsafePointer<Float>?, frames count: Int) {
        identityPosition += count
        // Only the history, at a playback rate of 1; during a crossfade also what the sinc
        // converter has yet to read.
        ring.append(frames, count: count, keepingFrom: keepIndex)
    }

    /// Whether a voice that is gone fed a fixed stream, which would then play a new voice only
    /// to within rounding (`FixedRatioStream.wasFed`): `renew` makes it anew first.
    var needsRenewal: Bool { streams.contains { $0?.wasFed ?? false } }

    /// Makes anew the fixed streams a voice fed (see `needsRenewal`); the varispeed
    /// converters and the ring start over exactly as they are. Called off the render thread,
    /// while no voice renders with the resampler.
    /// - Throws: A rate-converter error.
    func renew() throws {
        for level in streams.indices {
            guard let stream = streams[level], stream.wasFed else { continue }
            streams[level] = try Self.fixedStream(ResamplingQuality.allCases[level], channelCount: channelCount,
                                                  sourceRate: shape.sourceRate, ratio: ratio)
        }
        soxr = nil
    }

    /// Readies a resampler a voice that is gone played through for a new voice at `quality`:
    /// what it renders is what a new one renders, sample for sample. Called off the render
    /// thread, before any render of the new voice, after `renew` where it was needed.
    func reuse(quality: ResamplingQuality) {
        setQuality(quality)
        varispeedTarget = ratio
        ring.clear(at: 0)  // the ring's count from where a new one's starts
        restart(timeline: 0, playbackRate: 1)
    }

    /// Starts the source over at queue sample time `timeline`, with silence before it: at a
    /// fresh start and after a reset. Reads nothing; real-time safe.
    package func restart(timeline: Double, playbackRate: Float) {
        let want = requestedLevel.load(ordering: .relaxed)
        fixedLevel = want
        varispeedLevel = want
        soxr = streams[want]
        varispeed = varispeeds[want]
        let start = ring.end + historyFrames
        ring.clear(at: ring.end)
        ring.append(nil, count: historyFrames, keepingFrom: ring.end)
        sourceEnd = Int.max
        timelineOrigin = Double(start) - timeline
        identityPosition = start
        pendingVarispeedStart = nil
        if playbackRate == 1 && hasFixedLane {
            mode = .fixed
            commitFixed(fixedLanding(near: Double(start), searchFrames: Self.searchFrames))
        } else {
            mode = .varispeed
            pendingVarispeedStart = Double(start)
        }
    }

    /// Writes `frames` device frames to `destination`.
    /// - Returns: `frames`, or fewer once a draining source has ended.
    package func render(
        into destination: UnsafeMutablePointer<Float>, frames: Int, playbackRate: Float, source: SourceReader
    ) -> Int {
        let rate = Double(playbackRate)
        let wanted = min(max(ratio / rate, RateConverterKind.supportedRatios.lowerBound),
                         RateConverterKind.supportedRatios.upperBound)
        var done = 0
        while done < frames {
            let out = destination + done * channelCount
            let n = min(frames - done, blockFrames)
            var made = 0
            let switching = adoptRequestedLevel()
            switch mode {
            case .fixed:
                if rate != 1 || switching {
                    startVarispeed(at: fixedInstant, ratio: ratio, source: source)
                    mode = .toVarispeed(left: declickFrames)
                    continue
                }
                made = produceFixed(into: out, frames: n, source: source)
            case .varispeed:
                if let start = pendingVarispeedStart {
                    pendingVarispeedStart = nil
                    if rate == 1 && hasFixedLane {
                        mode = .fixed
                        commitFixed(fixedLanding(near: start, searchFrames: Self.searchFrames))
                    } else {
                        startVarispeed(at: start, ratio: wanted, source: source)
                    }
                    continue
                }
                if wanted != varispeedTarget {
                    varispeedTarget = wanted
                    varispeed.setRatio(wanted)
                }
                if rate == 1 && hasFixedLane && varispeed.ratio == ratio {
                    beginTrim()
                    continue
                }
                made = produceVarispeed(into: out, frames: n, source: source)
            case .trimming(let left):
                if rate != 1 {
                    varispeedTarget = wanted
                    varispeed.setRatio(wanted)
                    mode = .varispeed
                    continue
                }
                made = produceVarispeed(into: out, frames: min(n, left), source: source)
                if made == left {
                    varispeed.jump(to: ratio)
                    varispeedTarget = ratio
                    commitFixed(landing)
                    mode = .toFixed(left: declickFrames)
                } else {
                    mode = .trimming(left: left - made)
                }
            case .toVarispeed(let left):
                made = crossfade(into: out, frames: min(n, left), left: left, intoVarispeed: true, source: source)
                if made == left {
                    varispeedTarget = wanted
                    varispeed.setRatio(wanted)
                    mode = .varispeed
                } else {
                    mode = .toVarispeed(left: left - made)
                }
            case .toFixed(let left):
                made = crossfade(into: out, frames: min(n, left), left: left, intoVarispeed: false, source: source)
                mode = made == left ? .fixed : .toFixed(left: left - made)
            }
            if made == 0 { break }
            done += made
        }
        if done < frames && !hasEnded {
            // A lane stalled (it cannot, short of a bug): silence rather than a stop.
            (destination + done * channelCount).update(repeating: 0, count: (frames - done) * channelCount)
            return frames
        }
        return done
    }

    // MARK: Positions

    /// The ring instant sounding in the next output frame.
    private var outputInstant: Double {
        switch mode {
        case .fixed, .toFixed: fixedInstant
        case .varispeed, .toVarispeed, .trimming: varispeedInstant
        }
    }

    private var fixedInstant: Double {
        guard let soxr else { return Double(identityPosition) }
        return Double(max(soxr.firstBufferedIndex, fixedSkipUntil)) * soxr.inputFramesPerOutput + fixedOrigin
    }

    private var varispeedInstant: Double {
        pendingVarispeedStart ?? Double(varispeedFeedPosition) - varispeed.backlogFrames
    }

    /// Whether a draining source has ended and everything up to its end has been played.
    private var hasEnded: Bool { sourceEnd != Int.max && outputInstant >= Double(sourceEnd) - 1e-9 }

    /// Output frames from `instant` at `ratio` until the end of a draining source.
    private func framesBeforeEnd(from instant: Double, ratio: Double) -> Int {
        guard sourceEnd != Int.max else { return Int.max }
        return max(0, Int(((Double(sourceEnd) - instant) * ratio).rounded(.up)))
    }

    /// Frames older than this may go: the history behind the sounding instant stays.
    private var keepIndex: Int { Int(outputInstant.rounded(.down)) - historyFrames }

    /// Reads the source into the ring until it holds frames up to `index` (exclusive); silence
    /// after a draining source's end.
    @discardableResult
    private func fill(upTo index: Int, source: SourceReader) -> Bool {
        while ring.end < index {
            let room = ring.makeRoom(index - ring.end, keepingFrom: keepIndex)
            guard room > 0 else { return false }
            let destination = ring.pointer(at: ring.end)
            var got = 0
            if ring.end < sourceEnd {
                got = source(destination, room)
                if got < room { sourceEnd = ring.end + got }
            }
            if got < room { (destination + got * channelCount).update(repeating: 0, count: (room - got) * channelCount) }
            ring.didAppend(room)
        }
        return true
    }

    // MARK: The fixed lane

    private func produceFixed(into destination: UnsafeMutablePointer<Float>, frames: Int, source: SourceReader) -> Int {
        guard let soxr else { return produceIdentity(into: destination, frames: frames, source: source) }
        var count = 0
        // Several times the chunks any call needs (its output, libsoxr's look-ahead and a
        // landing's search): the bound only stops a failing libsoxr from reading the whole queue.
        let maximumFeeds = 4 * (frames + soxr.lookaheadFrames + Int(Self.searchFrames)) / soxr.chunkFrames + 16
        var feeds = 0
        while true {
            if soxr.firstBufferedIndex < fixedSkipUntil {
                soxr.consume(min(soxr.bufferedFrames, fixedSkipUntil - soxr.firstBufferedIndex))
            }
            count = min(frames, framesBeforeEnd(from: fixedInstant, ratio: ratio))
            if count == 0 { return 0 }
            if soxr.firstBufferedIndex >= fixedSkipUntil && soxr.bufferedFrames >= count { break }
            feeds += 1
            guard feeds <= maximumFeeds, fill(upTo: fixedFeedPosition + soxr.chunkFrames, source: source) else {
                destination.update(repeating: 0, count: count * channelCount)
                return count
            }
            soxr.feed(ring.pointer(at: fixedFeedPosition))
            fixedFeedPosition += soxr.chunkFrames
        }
        destination.update(from: soxr.bufferedOutput, count: count * channelCount)
        soxr.consume(count)
        return count
    }

    /// The source frames themselves: what the ring holds ahead first, then straight from the
    /// source (keeping its history).
    private func produceIdentity(into destination: UnsafeMutablePointer<Float>, frames: Int, source: SourceReader) -> Int {
        let ahead = max(0, min(frames, ring.end - identityPosition, sourceEnd - identityPosition))
        if ahead > 0 {
            destination.update(from: ring.pointer(at: identityPosition), count: ahead * channelCount)
            identityPosition += ahead
        }
        guard ahead < frames, identityPosition == ring.end, sourceEnd == Int.max else { return ahead }
        let target = destination + ahead * channelCount
        let got = source(target, frames - ahead)
        recordHistory(target, frames: got)
        if got < frames - ahead { sourceEnd = identityPosition }
        return ahead + got
    }

    /// Where libsoxr can next sound an instant near `instant`: its earliest output whose filter
    /// reads only input fed from now on, among `searchFrames` worth of outputs the one that
    /// lands closest (exactly, for the rational ratios libsoxr finds: 44.1 → 48 kHz lands on
    /// every 1/160 of a frame), and the ring frame to feed it from.
    private func fixedLanding(near instant: Double, searchFrames: Double) -> Landing {
        guard let soxr else {
            let index = Int(instant.rounded())
            return Landing(instant: Double(index), outputIndex: 0, feedPosition: index)
        }
        let step = soxr.inputFramesPerOutput
        let fed = Double(soxr.framesFed)
        let first = Int(((fed + Double(soxr.reachFrames)) / step).rounded(.up))
        let candidates = max(1, min(4096, Int(searchFrames / step)))
        var best = Landing(instant: .infinity, outputIndex: first, feedPosition: 0)
        for index in first..<(first + candidates) {
            // Input frames from the next one fed to output `index`'s instant.
            let offset = Double(index) * step - fed
            let feed = (instant - offset).rounded()
            let landed = feed + offset
            if abs(landed - instant) < abs(best.instant - instant) {
                best = Landing(instant: landed, outputIndex: index, feedPosition: Int(feed))
                if abs(landed - instant) < 1e-6 { break }
            }
        }
        return best
    }

    /// Points the fixed lane at `landing`: its next output sounds `landing.instant`.
    private func commitFixed(_ landing: Landing) {
        guard let soxr else {
            identityPosition = landing.feedPosition
            return
        }
        soxr.dropBuffered()
        fixedSkipUntil = landing.outputIndex
        fixedFeedPosition = landing.feedPosition
        fixedOrigin = Double(landing.feedPosition) - Double(soxr.framesFed)
    }

    // MARK: The varispeed lane

    /// Restarts the sinc converter so that its next output sounds `instant`, at `ratio`: it
    /// runs on the history before it at a ratio off by a hair that lands exactly there, and
    /// that output is dropped.
    private func startVarispeed(at instant: Double, ratio: Double, source: SourceReader) {
        let reach = Int(varispeed.filterReachFrames(atRatio: ratio).rounded(.up)) + 2
        let first = Int(instant.rounded(.down)) - reach
        let span = instant - Double(first)
        var left = max(1, Int((span * ratio).rounded(.up)))
        varispeed.restart(ratio: Double(left) / span)
        varispeedFeedPosition = first
        var stalls = 0
        while left > 0 && stalls < 3 {
            let made = runVarispeed(into: blend, frames: min(left, blockFrames), ratio: ratio, source: source)
            left -= made
            stalls = made == 0 ? stalls + 1 : 0
        }
        varispeed.jump(to: ratio)
        varispeedTarget = ratio
    }

    private func produceVarispeed(into destination: UnsafeMutablePointer<Float>, frames: Int, source: SourceReader) -> Int {
        var done = 0, stalls = 0
        while done < frames && stalls < 3 {
            let made = runVarispeed(
                into: destination + done * channelCount, frames: frames - done,
                ratio: min(varispeed.ratio, varispeedTarget), source: source)
            if made == 0 && hasEnded { return done }
            done += made
            stalls = made == 0 ? stalls + 1 : 0
        }
        if done < frames {
            (destination + done * channelCount).update(repeating: 0, count: (frames - done) * channelCount)
        }
        return frames
    }

    /// One sinc converter call on what the ring holds, after reading the input that `frames`
    /// frames at `ratio` need (and a little more when that was not enough); it stops at the end
    /// of a draining source.
    private func runVarispeed(into destination: UnsafeMutablePointer<Float>, frames: Int, ratio: Double, source: SourceReader) -> Int {
        let reach = varispeed.filterReachFrames(atRatio: ratio)
        let need = varispeedInstant + Double(frames) / ratio + reach + 2
        fill(upTo: max(Int(need.rounded(.up)), varispeedFeedPosition + 64), source: source)
        let count = min(frames, framesBeforeEnd(from: varispeedInstant, ratio: varispeed.ratio))
        guard count > 0 else { return 0 }
        let (used, written) = varispeed.process(
            input: ring.pointer(at: varispeedFeedPosition), inputFrames: ring.end - varispeedFeedPosition,
            output: destination, outputCapacity: count)
        varispeedFeedPosition += used
        if written < count { fill(upTo: ring.end + 256, source: source) }
        return written
    }

    /// Plans the return to the fixed lane, the sinc converter being at the fixed ratio: the
    /// instant the fixed lane can take over at after `trimFrames` frames, and the ratio that
    /// brings the sinc converter exactly there.
    private func beginTrim() {
        let now = varispeedInstant
        landing = fixedLanding(near: now + Double(trimFrames) / ratio, searchFrames: Self.searchFrames)
        varispeed.jump(to: Double(trimFrames) / (landing.instant - now))
        mode = .trimming(left: trimFrames)
    }

    // MARK: Crossfades

    /// Plays `frames` frames of both lanes, the one going out into `destination` and the one
    /// coming in into `blend`, and mixes them with the incoming weight rising linearly.
    private func crossfade(
        into destination: UnsafeMutablePointer<Float>, frames: Int, left: Int, intoVarispeed: Bool, source: SourceReader
    ) -> Int {
        let outgoing = intoVarispeed
            ? produceFixed(into: destination, frames: frames, source: source)
            : produceVarispeed(into: destination, frames: frames, source: source)
        guard outgoing > 0 else { return 0 }
        let incoming = intoVarispeed
            ? produceVarispeed(into: blend, frames: outgoing, source: source)
            : produceFixed(into: blend, frames: outgoing, source: source)
        let count = min(outgoing, incoming)
        let q = channelCount
        let step = 1 / Float(declickFrames)
        var weight = Float(declickFrames - left) * step
        for i in 0..<count {
            weight += step
            for c in 0..<q {
                let old = destination[i * q + c]
                destination[i * q + c] = old + (blend[i * q + c] - old) * weight
            }
        }
        return count
    }
}

/// Source frames by index, for the lanes of a `VoiceResampler`: a linear buffer that keeps a
/// window `[base, end)` of the frames read so far, sliding back to its start when it fills.
struct SourceRing {
    let channelCount: Int
    let capacity: Int
    private let storage: UnsafeMutablePointer<Float>
    /// Index of the first frame held.
    private(set) var base = 0
    private(set) var count = 0

    init(channelCount: Int, capacity: Int) {
        self.channelCount = channelCount
        self.capacity = capacity
        storage = .allocate(capacity: capacity * channelCount)
        storage.initialize(repeating: 0, count: capacity * channelCount)
    }

    func deallocate() { storage.deallocate() }

    /// One past the last frame held.
    var end: Int { base + count }

    /// Where frame `index` is (or goes, for `end`); `index` within `base...end`.
    func pointer(at index: Int) -> UnsafeMutablePointer<Float> { storage + (index - base) * channelCount }

    /// Holds nothing, the next frame to come being `index`.
    mutating func clear(at index: Int) {
        base = index
        count = 0
    }

    /// Makes room for up to `frames` more frames at the end, letting frames before `keep` go.
    /// - Returns: The room made, `frames` unless the frames to keep fill the storage.
    mutating func makeRoom(_ frames: Int, keepingFrom keep: Int) -> Int {
        if count + frames > capacity {
            let drop = min(max(0, keep - base), count)
            if drop > 0 {
                storage.update(from: storage + drop * channelCount, count: (count - drop) * channelCount)
                base += drop
                count -= drop
            }
        }
        return min(frames, capacity - count)
    }

    /// Counts `frames` frames written at `pointer(at: end)`.
    mutating func didAppend(_ frames: Int) { count += frames }

    /// Appends `count` frames (`nil`: silence), letting frames before `keep` go.
    mutating func append(_ frames: UnsafePointer<Float>?, count: Int, keepingFrom keep: Int) {
        var source = frames
        var remaining = count
        let newEnd = end + count
        if keep >= end {
            // Nothing held is kept: start over with the part of the new frames to keep.
            let skip = min(count, keep - end)
            clear(at: end + skip)
            source = source.map { $0 + skip * channelCount }
            remaining -= skip
        }
        while remaining > 0 {
            let room = makeRoom(remaining, keepingFrom: max(keep, newEnd - capacity))
            let target = pointer(at: end)
            if let s = source {
                target.update(from: s, count: room * channelCount)
                source = s + room * channelCount
            } else {
                target.update(repeating: 0, count: room * channelCount)
            }
            didAppend(room)
            remaining -= room
        }
    }
}
