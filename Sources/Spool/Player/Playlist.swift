import Dispatch
import Foundation
import SpoolCore

/// What a `Playlist` tells its event streams.
public enum PlaylistEvent: Sendable, CustomStringConvertible {
    /// The item at `index` (in `items`) is heard: sent when its first frame is (offline, within
    /// the render call that renders it; in real time within a device period of its being
    /// heard). A move to the item already announced (a seek within it, a stop and play) sends
    /// nothing; each loop pass of an item sends it again.
    case currentItemChanged(index: Int)
    /// An item could not be opened or decoded and was skipped; sent when the place in the
    /// stream where it would have played (or where its damage cut it short) is heard.
    case itemFailed(index: Int, error: AudioError)
    /// The last item played to its end (with repeat off).
    case finished

    public var description: String {
        switch self {
        case .currentItemChanged(let index): "current item \(index)"
        case .itemFailed(let index, let error): "item \(index) failed: \(error.message)"
        case .finished: "finished"
        }
    }
}

/// Items played one after another without a gap: the AVQueuePlayer model, on `AudioPlayer`.
///
/// Every item is converted as it plays to the output's rate and channel layout, and the next
/// item is opened and decoding ahead while the current one plays, so the last frame of one is
/// followed by the first of the next with nothing between, whatever their formats. Next,
/// previous and jump restart the stream at the chosen item (with the player's 5 ms fade).
///
/// The stream is fed to the output about 12 000 frames (0.25 s at 48 kHz) ahead of what is
/// heard, and the item after the current one is chosen when the feed reaches its end: a change
/// to the order, the repeat mode or the items applies from the next item the feed has not
/// reached yet.
///
/// The corresponding Apple class is `AVQueuePlayer` (`advanceToNextItem()`, `insert(_:after:)`,
/// `remove(_:)`, `items()`); previous, jump, repeat and shuffle are what music players add.
public final class Playlist: Sendable {
    /// What follows the last item.
    public enum RepeatMode: Sendable, Equatable {
        /// Stop after the last item.
        case off
        /// Play the current item again and again.
        case one
        /// Go back to the first item.
        case all
    }

    /// The player the items play through (volume, pan, meters, state).
    public let player: AudioPlayer
    private let source: PlaylistSource
    private let listeners = Locked<[Int: AsyncStream<PlaylistEvent>.Continuation]>([:])
    private let nextStream = Locked(0)
    /// In real time, events waiting for the host time they are heard at, in order.
    private let scheduled = Locked<[(due: UInt64, events: [PlaylistEvent])]>([])
    private let monitor: PlaylistMonitor

    /// Makes a playlist.
    ///
    /// - Parameters:
    ///   - items: The items, in order; at least one.
    ///   - backend: Where to play; `nil` for `AudioPlayer.defaultBackend()`.
    ///   - eventQueue: Where events are delivered; `nil` for a serial queue of its own.
    /// - Throws: `.emptyInput` for no items; the first item's error when none opens.
    public init(items: [PlaylistItem], backend: (any PlaybackBackend)? = nil, eventQueue: DispatchQueue? = nil) throws {
        guard !items.isEmpty else { throw AudioError(.emptyInput, "a playlist needs at least one item") }
        let backend = try backend ?? AudioPlayer.defaultBackend()
        var plan = PlaylistPlan()
        for item in items {
            plan.items[plan.nextID] = item
            plan.insertion.append(plan.nextID)
            plan.nextID += 1
        }
        plan.order = plan.insertion
        plan.selected = plan.order.first
        let source = PlaylistSource(format: backend.outputFormat, plan: plan)
        try source.seek(toFrame: 0)
        guard source.frameCount > 0 || source.plan.withLock({ $0.failures.count < items.count }) else {
            throw source.plan.withLock { $0.failures.first?.error } ?? AudioError(.emptyInput, "no item of the playlist opens")
        }
        self.source = source
        let queue = eventQueue ?? DispatchQueue(label: "spool.playlist.events")
        player = try AudioPlayer(source: source, url: nil, data: nil, backend: backend, eventQueue: queue,
                                 streaming: AudioPlayer.Streaming(audio: source))
        monitor = PlaylistMonitor()
        player.delegate = monitor
        monitor.playlist = self
        source.onChange { [weak self] change in self?.schedule(change) }
    }

    // Every stream of its events ends when it goes, after the events already sent (on the
    // event queue, so that none is lost): a `for await` over `events` then returns.
    deinit {
        let continuations = listeners.withLock { l in defer { l.removeAll() }; return Array(l.values) }
        player.eventQueue.async { for continuation in continuations { continuation.finish() } }
    }

    // MARK: Transport

    /// Plays, or resumes. The corresponding Apple call is `play()`.
    ///
    /// - Throws: As `AudioPlayer.play()`.
    public func play() throws { try player.play() }

    /// Pauses. The corresponding Apple call is `pause()`.
    ///
    /// - Throws: As `AudioPlayer.pause()`.
    public func pause() throws { try player.pause() }

    /// Stops; `play()` goes on from the same place in the same item.
    ///
    /// - Throws: As `AudioPlayer.stop()`.
    public func stop() throws {
        let now = heard()
        if !now.stopped {
            source.plan.withLock { p in
                guard let passage = p.passage(atStreamFrame: now.frame) else { return }
                p.selected = passage.id
                p.selectedFrame = min(passage.itemFrames, passage.itemFrame + now.frame - passage.frame)
                p.stopFrame = now.frame
            }
        }
        try player.stop()
    }

    /// Moves to `time` seconds into the item being heard (past its end: to its end): a playing
    /// playlist plays on from there. The corresponding Apple call is `seek(to:)`.
    ///
    /// - Throws: `.invalidParameter` for a negative or non-finite time; the player's error.
    public func seek(to time: TimeInterval) throws {
        guard time.isFinite, time >= 0 else {
            throw AudioError(.invalidParameter, "a seek needs a time of 0 or more seconds, not \(time)")
        }
        let now = heard()
        let format = player.format
        let found = source.plan.withLock { p -> Bool in
            guard let id = currentID(p, now) else { return false }
            let length = p.passage(atStreamFrame: now.frame).flatMap { $0.id == id ? $0.itemFrames : nil }
            let target = min(Double(length ?? Int.max), (time * format.sampleRate).rounded())
            p.selected = id
            p.selectedFrame = Int(target)
            return true
        }
        guard found else { return }
        try player.seek(toFrame: 0)
    }

    /// Moves to the next item in play order (with repeat all, from the last to the first);
    /// after the last, stops. The corresponding Apple call is `advanceToNextItem()`.
    ///
    /// - Throws: The player's or the item's error.
    public func advanceToNextItem() throws {
        let now = heard()
        let next = source.plan.withLock { p -> Int? in
            guard let current = currentID(p, now) else { return p.order.first }
            let index = p.order.firstIndex(of: current) ?? 0
            if index + 1 < p.order.count { return p.order[index + 1] }
            return p.repeatMode == .all ? p.order.first : nil
        }
        guard let next else {
            try player.stop()
            return
        }
        try start(next)
    }

    /// Moves to the item before the current one in play order (the first stays the first,
    /// from its start, unless repeating all).
    ///
    /// - Throws: The player's or the item's error.
    public func previous() throws {
        let now = heard()
        guard let id = source.plan.withLock({ p in currentID(p, now).flatMap { p.previous(before: $0) } ?? p.order.first }) else {
            return
        }
        try start(id)
    }

    /// Moves to the item at `index` of `items`.
    ///
    /// - Throws: `.outOfRange` for an index outside `items`; the player's or the item's error.
    public func jump(to index: Int) throws {
        let id = try source.plan.withLock { p -> Int in
            guard p.insertion.indices.contains(index) else {
                throw AudioError(.outOfRange, "item \(index) is outside the playlist's 0..<\(p.insertion.count)")
            }
            return p.insertion[index]
        }
        try start(id)
    }

    /// Restarts the stream at item `id`: a playing player plays on there, a paused or stopped
    /// one starts there.
    private func start(_ id: Int) throws {
        source.plan.withLock {
            $0.selected = id
            $0.selectedFrame = nil
        }
        try player.seek(toFrame: 0)
    }

    // MARK: Rendering offline

    /// Plays the playlist to the end of its last item, offline, and returns what its back-end
    /// rendered: every item, gapless, and nothing after the last frame; see
    /// `AudioPlayer.renderToEnd(maximumSeconds:)`. Its events come as it renders, each in the
    /// render call of its frame.
    ///
    /// - Parameter maximumSeconds: The most to render, in seconds of output; `nil` for no
    ///   limit. Needed when `numberOfLoops` is −1 or `repeatMode` is not `.off`.
    /// - Returns: The rendered audio, in the back-end's `outputFormat`.
    /// - Throws: `.invalidState` when the back-end renders in real time or the playlist
    ///   repeats for ever with no maximum; `.invalidParameter` for a negative or non-finite
    ///   maximum; as `play()`.
    public func renderToEnd(maximumSeconds: TimeInterval? = nil) throws -> PCMBuffer {
        try player.renderToEnd(maximumSeconds: maximumSeconds, loopsForever: repeatsForever, what: "the playlist")
    }

    /// Plays the playlist to its end, offline, into a Float32 WAV file; see
    /// `AudioPlayer.renderToEnd(toWAV:maximumSeconds:)`.
    ///
    /// - Parameters:
    ///   - url: The file to create or replace.
    ///   - maximumSeconds: As `renderToEnd(maximumSeconds:)`.
    /// - Returns: Frames written.
    /// - Throws: As `renderToEnd(maximumSeconds:)`; `.invalidParameter` for a URL that is not
    ///   a file's; `.writeFailed` when the file cannot be written.
    @discardableResult
    public func renderToEnd(toWAV url: URL, maximumSeconds: TimeInterval? = nil) throws -> Int {
        try player.renderToEnd(toWAV: url, maximumSeconds: maximumSeconds, loopsForever: repeatsForever, what: "the playlist")
    }

    /// Whether the playlist never ends by itself.
    private var repeatsForever: Bool { source.plan.withLock { $0.repeatMode != .off || $0.numberOfLoops < 0 } }

    // MARK: Items

    /// The items, in the order they were added.
    public var items: [PlaylistItem] {
        source.plan.withLock { p in p.insertion.compactMap { p.items[$0] } }
    }

    /// The index in `items` of the item being heard (nil once the list has finished).
    public var currentIndex: Int? {
        let now = heard()
        return source.plan.withLock { p in currentID(p, now).flatMap { p.insertion.firstIndex(of: $0) } }
    }

    /// The item being heard.
    public var currentItem: PlaylistItem? { currentIndex.map { items[$0] } }

    /// Seconds into the item being heard. The corresponding Apple call is `currentTime()`.
    public var currentTime: TimeInterval { passages.last?.currentTime ?? 0 }

    /// Seconds of the item being heard (nil once the list has finished). The corresponding
    /// Apple property is `AVPlayerItem.duration`.
    public var currentItemDuration: TimeInterval? { passages.last?.duration }

    /// The passes of items heard since the stream last started (a play from the start, a
    /// seek, next, previous or a jump), oldest first: the last is the one being heard. A
    /// stopped playlist lists what was heard up to the stop, or to the end.
    public var passages: [PlaylistPassage] {
        let now = heard()
        let format = player.format
        return source.plan.withLock { p in
            let heard = now.stopped ? (p.endFrame ?? p.stopFrame ?? 0) : now.frame
            let records = p.passages.filter { $0.frame <= heard }
            return records.indices.map { i in
                let r = records[i]
                let end = i + 1 < records.count ? records[i + 1].frame : heard
                let frames = max(0, end - r.frame)
                let ratio = r.sourceFormat.sampleRate / format.sampleRate
                return PlaylistPassage(ordinal: r.ordinal, index: p.insertion.firstIndex(of: r.id), pass: r.pass,
                                       startTime: format.seconds(forFrames: r.itemFrame),
                                       currentTime: format.seconds(forFrames: min(r.itemFrames, r.itemFrame + frames)),
                                       duration: format.seconds(forFrames: r.itemFrames),
                                       outputFrames: frames,
                                       framesPlayed: Int((Double(frames) * ratio).rounded()),
                                       format: r.sourceFormat, info: r.info)
            }
        }
    }

    /// Adds an item at `index` of `items` (also in play order, after the item before it).
    ///
    /// - Throws: `.outOfRange` for an index outside `0...items.count`.
    public func insert(_ item: PlaylistItem, at index: Int) throws {
        try source.plan.withLock { p in
            guard (0...p.insertion.count).contains(index) else {
                throw AudioError(.outOfRange, "cannot insert at \(index) in a playlist of \(p.insertion.count)")
            }
            let id = p.nextID
            p.nextID += 1
            p.items[id] = item
            let after = index > 0 ? p.insertion[index - 1] : nil
            p.insertion.insert(id, at: index)
            let position = after.flatMap { p.order.firstIndex(of: $0) }.map { $0 + 1 } ?? 0
            p.order.insert(id, at: position)
        }
    }

    /// Adds an item at the end.
    public func append(_ item: PlaylistItem) {
        try? insert(item, at: source.plan.withLock { $0.insertion.count })
    }

    /// Removes the item at `index` of `items`. Removing the item being heard moves to the
    /// next one first, as AVQueuePlayer does.
    ///
    /// - Throws: `.outOfRange` for an index outside `items`; `.invalidState` for the last item.
    public func remove(at index: Int) throws {
        let now = heard()
        let (id, isCurrent) = try source.plan.withLock { p -> (Int, Bool) in
            guard p.insertion.indices.contains(index) else {
                throw AudioError(.outOfRange, "item \(index) is outside the playlist's 0..<\(p.insertion.count)")
            }
            guard p.insertion.count > 1 else { throw AudioError(.invalidState, "a playlist keeps at least one item") }
            let id = p.insertion[index]
            return (id, currentID(p, now) == id)
        }
        if isCurrent { try advanceToNextItem() }
        source.plan.withLock { p in
            p.items[id] = nil
            p.startTimes[id] = nil
            p.insertion.removeAll { $0 == id }
            p.order.removeAll { $0 == id }
            if p.selected == id { p.selected = p.order.first }
        }
    }

    /// Where item `index` starts when it is reached (by joining, next, previous or a jump);
    /// its loop passes play whole. An item whose start time is past its end is skipped as
    /// failed. The corresponding Apple call is `AVPlayerItem.seek(to:)` before it plays.
    ///
    /// - Parameters:
    ///   - time: Seconds into the item, 0 or more.
    ///   - index: An index of `items`.
    /// - Throws: `.outOfRange` for an index outside `items`; `.invalidParameter` for a
    ///   negative or non-finite time.
    public func setStartTime(_ time: TimeInterval, forItemAt index: Int) throws {
        guard time.isFinite, time >= 0 else {
            throw AudioError(.invalidParameter, "a start time must be a finite number of seconds, 0 or more, not \(time)")
        }
        try source.plan.withLock { p in
            guard p.insertion.indices.contains(index) else {
                throw AudioError(.outOfRange, "item \(index) is outside the playlist's 0..<\(p.insertion.count)")
            }
            p.startTimes[p.insertion[index]] = time > 0 ? time : nil
        }
    }

    // MARK: Order

    /// Extra passes of each item before the next: 0 plays each once (the default), n plays
    /// each n + 1 times, −1 repeats the item being heard until it is moved on from. A change
    /// applies from the end of the pass being fed. The corresponding Apple property is
    /// `AVAudioPlayer.numberOfLoops`, per item.
    public var numberOfLoops: Int { source.plan.withLock { $0.numberOfLoops } }

    /// Sets the extra passes of each item.
    ///
    /// - Throws: `.invalidParameter` below −1.
    public func setNumberOfLoops(_ loops: Int) throws {
        guard loops >= -1 else { throw AudioError(.invalidParameter, "numberOfLoops is -1 or more, not \(loops)") }
        source.plan.withLock { $0.numberOfLoops = loops }
    }

    /// What follows the last item.
    public var repeatMode: RepeatMode { source.plan.withLock { $0.repeatMode } }

    /// Sets what follows the last item; it applies from the current item on.
    public func setRepeatMode(_ mode: RepeatMode) { source.plan.withLock { $0.repeatMode = mode } }

    /// Whether play order is shuffled.
    public var isShuffled: Bool { source.plan.withLock { $0.order != $0.insertion } }

    /// Shuffles play order (the item being heard stays current, the rest follow it in a random
    /// order from `seed`), or puts it back in the order of `items`.
    ///
    /// - Parameters:
    ///   - shuffled: On or off.
    ///   - seed: The same seed gives the same order.
    public func setShuffle(_ shuffled: Bool, seed: UInt64 = UInt64.random(in: 0...UInt64.max)) {
        let now = heard()
        source.plan.withLock { p in
            guard shuffled else {
                p.order = p.insertion
                return
            }
            var generator = SplitMix(seed: seed)
            let current = currentID(p, now)
            var rest = p.insertion.filter { $0 != current }
            rest.shuffle(using: &generator)
            p.order = (current.map { [$0] } ?? []) + rest
        }
    }

    /// The items in play order, as indices of `items`.
    public var playOrder: [Int] {
        source.plan.withLock { p in p.order.compactMap { p.insertion.firstIndex(of: $0) } }
    }

    // MARK: Events

    /// A new stream of this playlist's events, from now on. It ends when the playlist goes.
    public var events: AsyncStream<PlaylistEvent> {
        let (stream, continuation) = AsyncStream<PlaylistEvent>.makeStream(bufferingPolicy: .bufferingNewest(64))
        let id = nextStream.withLock { n -> Int in
            n += 1
            return n
        }
        listeners.withLock { $0[id] = continuation }
        continuation.onTermination = { [weak self] _ in _ = self?.listeners.withLock { $0.removeValue(forKey: id) } }
        return stream
    }

    /// Has `change` announced once it is heard (see `AudioPlayer.whenPlayed`): an item's start
    /// with its first frame, a failure with the last frame before it (the stream may end there).
    private func schedule(_ change: PlaylistChange) {
        let upTo = if case .started = change.kind { change.frame + 1 } else { change.frame }
        player.whenPlayed(upTo: upTo) { [weak self] heardAt in self?.announce(change, heardAt: heardAt) }
    }

    /// Sends the event `change` stands for, unless a seek since means it was never heard or it
    /// is no news.
    private func announce(_ change: PlaylistChange, heardAt: UInt64) {
        let event = source.plan.withLock { p -> PlaylistEvent? in
            guard change.generation == p.generation else { return nil }
            switch change.kind {
            case .started(let id, let restarted):
                if restarted, p.lastAnnounced == id { return nil }
                p.lastAnnounced = id
                return p.insertion.firstIndex(of: id).map { .currentItemChanged(index: $0) }
            case .failed(let id, let error):
                return .itemFailed(index: p.insertion.firstIndex(of: id) ?? -1, error: error)
            }
        }
        if let event { send([event], at: heardAt) }
    }

    /// Sends `.finished`: the last item played to its end.
    func reportFinished() {
        source.plan.withLock { $0.lastAnnounced = nil }
        send([.finished], at: HostTime.now())
    }

    /// Gives `events` to every stream: offline at once, on the thread that rendered (or primed)
    /// them, within that call; in real time on the event queue at `heardAt`, after the events
    /// sent before them. A yield runs no user code, so offline this needs no hop to the event
    /// queue, which might wait on a lock the caller holds.
    private func send(_ events: [PlaylistEvent], at heardAt: UInt64) {
        guard player.backend.offlineRenderer == nil else { return yield(events) }
        let due = scheduled.withLock { s -> UInt64 in
            let due = max(heardAt, s.last?.due ?? 0)
            s.append((due, events))
            return due
        }
        EventDelivery.run(on: player.eventQueue, atHostTime: due) { [weak self] in
            guard let self else { return }
            yield(scheduled.withLock { s in
                let count = s.prefix { $0.due <= due }.count
                defer { s.removeFirst(count) }
                return s.prefix(count).flatMap(\.events)
            })
        }
    }

    private func yield(_ events: [PlaylistEvent]) {
        let continuations = listeners.withLock { Array($0.values) }
        for event in events { for continuation in continuations { continuation.yield(event) } }
    }

    /// Where the player is, read before the plan's lock is taken (the player's feeder takes
    /// the plan's lock inside the player's: never the other way round).
    private func heard() -> (stopped: Bool, frame: Int) {
        let stopped = player.state == .stopped
        return (stopped, stopped ? 0 : player.currentFrame)
    }

    /// The item being heard, in the plan.
    private func currentID(_ p: PlaylistPlan, _ heard: (stopped: Bool, frame: Int)) -> Int? {
        if heard.stopped { return p.selected }
        return p.passage(atStreamFrame: heard.frame)?.id ?? p.selected
    }
}

/// One pass of one item as it was heard: what `Playlist.passages` lists.
public struct PlaylistPassage: Sendable, Equatable {
    /// Its place among the passes since the stream last started, from 0.
    public var ordinal: Int
    /// The item's index in `items` (nil once it has been removed).
    public var index: Int?
    /// 1 for the item's first pass, 2 for its first loop, …
    public var pass: Int
    /// Seconds into the item where the pass began (its start time, or where a seek landed).
    public var startTime: TimeInterval
    /// Seconds into the item heard so far, or where the pass ended.
    public var currentTime: TimeInterval
    /// Seconds of the item.
    public var duration: TimeInterval
    /// Frames heard, at the output's rate.
    public var outputFrames: Int
    /// Frames heard, at the item's own rate.
    public var framesPlayed: Int
    /// The item's own format, before it is converted to the output's.
    public var format: AudioFormat
    /// The item's container, codec and tags.
    public var info: AudioFileInfo
}

/// Hears the playlist's player finish.
private final class PlaylistMonitor: AudioPlayerDelegate, @unchecked Sendable {
    // Sendable: `playlist` is set once, before the player can call.
    weak var playlist: Playlist?

    func audioPlayerDidFinishPlaying(_ player: AudioPlayer, successfully flag: Bool) {
        playlist?.reportFinished()
    }
}
