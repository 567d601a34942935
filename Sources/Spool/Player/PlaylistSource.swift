import Dispatch
import Foundation
import SpoolCore
import SpoolDecoding
import SpoolResampling

/// One item of a `Playlist`: a file, encoded bytes, PCM, or a stream read once.
public enum PlaylistItem: Sendable, CustomStringConvertible {
    /// A file, or an http(s) URL played while it downloads (the playlist's player buffers a
    /// stall, as `AudioPlayer` does for a URL).
    case file(URL)
    case data(Data, typeHint: String?)
    case buffer(PCMBuffer)
    /// Audio read once, in order, from a pipe or a socket: it plays once, from where it is
    /// when the playlist reaches it (a loop, a jump back or a second pass fails with
    /// `.unsupported`, and the playlist goes on to the next item).
    case stream(PlaylistStream)

    /// A name for messages and displays.
    public var description: String {
        switch self {
        case .file(let url): url.lastPathComponent
        case .data(let data, _): "\(data.count) bytes"
        case .buffer(let buffer): "\(buffer.frameCount) frames of PCM"
        case .stream(let stream): stream.name
        }
    }

    /// What error messages call the item: a file by its path.
    var name: String {
        if case .file(let url) = self { return url.path }
        return description
    }

    /// A decoder of the item at `format`, at output frame `startFrame`; an http(s) URL's reads
    /// ahead as a player's does, waiting for its audio or not as `arrivals` says.
    ///
    /// - Throws: The decoder's error; `.outOfRange` when `startFrame` is at or past the end.
    func open(at format: AudioFormat, startFrame: Int, arrivals: ArrivalHooks) throws -> ConvertingDecoder {
        let decoder: any AudioDecoder = switch self {
        case .file(let url) where RemoteAudio.handles(url): try arrivals.open(url)
        case .file(let url): PrefetchingDecoder(try DecoderRegistry.shared.open(.file(url)))
        case .data(let data, let hint): PrefetchingDecoder(try DecoderRegistry.shared.open(.memory(data, typeHint: hint)))
        case .buffer(let buffer): PCMBufferDecoder(buffer)
        case .stream(let stream): PrefetchingDecoder(try stream.take())
        }
        let converted = try ConvertingDecoder(decoder, to: format)
        if startFrame > 0 {
            guard startFrame < converted.frameCount else {
                throw AudioError(.outOfRange, "\(name): the start time \(Self.seconds(format.seconds(forFrames: startFrame))) s "
                                 + "is past the end (\(Self.seconds(format.seconds(forFrames: converted.frameCount))) s)")
            }
            try converted.seek(toFrame: startFrame)
        }
        return converted
    }

    private static func seconds(_ value: Double) -> String { String(format: "%.2f", value) }
}

/// What a playlist's http(s) items share with the player: whether their reads wait for audio,
/// and whom to tell when a chunk of one arrives.
final class ArrivalHooks: Sendable {
    private struct State {
        var waitsForData = true
        var onChunk: (@Sendable () -> Void)?
    }
    private let state = Locked(State())

    var waitsForData: Bool {
        get { state.withLock { $0.waitsForData } }
        set { state.withLock { $0.waitsForData = newValue } }
    }

    var onChunk: (@Sendable () -> Void)? {
        get { state.withLock { $0.onChunk } }
        set { state.withLock { $0.onChunk = newValue } }
    }

    /// Opens `url` read ahead as a player's URL is, with these hooks.
    func open(_ url: URL) throws -> PrefetchingDecoder {
        let prefetcher = try AudioPlayer.Streaming.open(url)
        prefetcher.waitsForData = waitsForData
        prefetcher.onChunk = { [weak self] in self?.onChunk?() }
        return prefetcher
    }
}

/// A decoder of a stream for a playlist, handed over once (a stream cannot be read twice).
public final class PlaylistStream: Sendable, CustomStringConvertible {
    /// What messages call the stream.
    public let name: String
    /// The PCM the stream decodes to.
    public let format: AudioFormat
    private let decoder: Locked<(any AudioDecoder)?>

    /// Wraps a decoder of a stream, such as a `StreamingDecoder` of standard input.
    public init(name: String, decoder: sending any AudioDecoder) {
        self.name = name
        format = decoder.format
        self.decoder = Locked(decoder)
    }

    public var description: String { name }

    /// The decoder, the first time; `.unsupported` after.
    func take() throws -> any AudioDecoder {
        guard let decoder = decoder.withLock({ slot -> (any AudioDecoder)? in
            let taken = slot
            slot = nil
            return taken
        }) else {
            throw AudioError(.unsupported, "\(name): a stream plays once; it cannot be played again")
        }
        return decoder
    }
}

/// The order a playlist plays in, and where it is: kept by `PlaylistSource` under one lock,
/// changed by `Playlist`.
struct PlaylistPlan: Sendable {
    var items: [Int: PlaylistItem] = [:]
    /// Item ids in insertion order, and in play order (shuffled or not).
    var insertion: [Int] = []
    var order: [Int] = []
    var nextID = 0
    var repeatMode = Playlist.RepeatMode.off
    /// Extra passes of each item before the next: 0 plays each once, −1 repeats the item
    /// until it is moved on from.
    var numberOfLoops = 0
    /// Where each item starts when it is reached (seconds; absent: its first frame).
    var startTimes: [Int: TimeInterval] = [:]
    /// The item the next seek starts at.
    var selected: Int?
    /// The output frame of the selected item the next seek starts at; nil: its start time.
    var selectedFrame: Int?
    /// The stretches of the stream fed since the last seek, one per item pass, oldest first.
    var passages: [PassageRecord] = []
    /// Items that could not be opened or decoded, skipped, with why.
    var failures: [(id: Int, error: AudioError)] = []
    /// Counts the seeks that started the stream somewhere new: a change recorded before the
    /// latest is never heard.
    var generation = 0
    /// The item the playlist last announced as heard (nil once it finished).
    var lastAnnounced: Int?
    /// The stream's length as far as it is known: to the end of the item being fed.
    var knownEnd = 0
    /// The stream frame the stream ended at, once it has.
    var endFrame: Int?
    /// The stream frame heard when the playlist was stopped.
    var stopFrame: Int?

    /// Passages kept: enough for any display; the oldest go first.
    static let passageLimit = 512

    /// The item after `id` in play order under the repeat mode; nil at the end.
    func next(after id: Int) -> Int? {
        if repeatMode == .one, items[id] != nil { return id }
        return following(id)
    }

    /// The item after `id` in play order, whatever the repeat mode says of `id` itself.
    func following(_ id: Int) -> Int? {
        guard let index = order.firstIndex(of: id) else { return order.first }
        if index + 1 < order.count { return order[index + 1] }
        return repeatMode == .off ? nil : order.first
    }

    /// The item before `id` in play order; the first item stays the first unless repeating all.
    func previous(before id: Int) -> Int? {
        guard let index = order.firstIndex(of: id) else { return order.first }
        if index > 0 { return order[index - 1] }
        return repeatMode == .all ? order.last : id
    }

    /// The passage playing at stream frame `frame`.
    func passage(atStreamFrame frame: Int) -> PassageRecord? {
        passages.last { $0.frame <= frame }
    }

    /// Output frame of item `id` at which it starts when reached.
    func startFrame(of id: Int, at format: AudioFormat) -> Int {
        startTimes[id].map { format.frames(forSeconds: $0) } ?? 0
    }

    /// Records that a passage of `id` began at stream frame `frame`.
    mutating func begin(_ record: PassageRecord) {
        var record = record
        record.ordinal = (passages.last?.ordinal ?? -1) + 1
        passages.append(record)
        if passages.count > Self.passageLimit { passages.removeFirst(passages.count - Self.passageLimit) }
        knownEnd = max(knownEnd, record.frame + max(0, record.itemFrames - record.itemFrame))
    }
}

/// One pass of one item in the stream: where it began in the stream and in the item.
struct PassageRecord: Sendable {
    /// The stream frame it began at.
    var frame: Int
    var id: Int
    /// The item's output frame at `frame`.
    var itemFrame: Int
    /// 1 for the item's first pass, 2 for its first loop, …
    var pass: Int
    /// The item's length at the output's rate.
    var itemFrames: Int
    /// The item's own format and facts.
    var sourceFormat: AudioFormat
    var info: AudioFileInfo
    /// Its place among the passages since the stream last started, from 0.
    var ordinal = 0
}

/// An item start or failure, where it falls in the stream: what the playlist announces once
/// its frame is heard.
struct PlaylistChange: Sendable {
    enum Kind: Sendable {
        /// Item `id` starts; `restarted` when a seek started the stream at it, which is no news
        /// when it is the item announced last.
        case started(id: Int, restarted: Bool)
        case failed(id: Int, error: AudioError)
    }

    var kind: Kind
    /// The stream frame it falls on.
    var frame: Int
    /// `PlaylistPlan.generation` when it was recorded.
    var generation: Int
}

/// The decoder a playlist's player plays: its items one after another at the output's format,
/// the next opened (and decoding ahead) while the current one plays, so one item's last frame
/// is followed by the next one's first with nothing between.
///
/// A seek starts the stream again at the selected item (at `selectedFrame`, or where the item
/// starts); the stream frame the player seeks to is where that begins, and stream frames count
/// on across the items from there. An item that cannot be opened, or whose decoding fails, is
/// recorded as failed and the next one joins where it stopped.
final class PlaylistSource: ProgressiveDecoder, ArrivingAudio, @unchecked Sendable {
    // Sendable: `current` and `position` are touched only by the feeder, under its lock; the
    // plan and the opened next item are in locks of their own.
    let format: AudioFormat
    let plan: Locked<PlaylistPlan>
    private let opened = Locked<OpenedItem?>(nil)

    /// An item opened ahead on the opener queue, at the frame it starts from.
    private struct OpenedItem: @unchecked Sendable {
        // Sendable: made on the opener queue, then used only by the feeder once it takes it.
        let id: Int
        let startFrame: Int
        let decoder: ConvertingDecoder
    }
    private let opener = DispatchQueue(label: "spool.playlist.open", qos: .userInitiated)
    private var current: (id: Int, decoder: ConvertingDecoder, pass: Int)? {
        didSet { live.withLock { $0 = current?.decoder.source as? PrefetchingDecoder } }
    }
    /// The current item's decoder read ahead, for any thread: what buffering watches.
    private let live = Locked<PrefetchingDecoder?>(nil)
    let arrivals = ArrivalHooks()
    private(set) var position = 0
    /// Whether frames were read since the last seek: a seek to where the stream already stands
    /// before any is read (the player's first prepare after the playlist's own) is no new start.
    private var readSinceSeek = true

    /// Called on the feeder's thread with each item start and failure; the changes recorded
    /// before it is set wait for it.
    private let changed = Locked<(handler: (@Sendable (PlaylistChange) -> Void)?, waiting: [PlaylistChange])>((nil, []))

    init(format: AudioFormat, plan: PlaylistPlan) {
        self.format = format
        self.plan = Locked(plan)
    }

    /// Sets what to call when an item starts or fails, and calls it with the changes so far.
    func onChange(_ handler: @escaping @Sendable (PlaylistChange) -> Void) {
        let waiting = changed.withLock { c in
            defer { c = (handler, []) }
            return c.waiting
        }
        for change in waiting { handler(change) }
    }

    /// Tells of `kind` at stream frame `frame`, of the current generation.
    private func tell(_ kind: PlaylistChange.Kind, at frame: Int) {
        let change = PlaylistChange(kind: kind, frame: frame, generation: plan.withLock { $0.generation })
        let handler = changed.withLock { c -> (@Sendable (PlaylistChange) -> Void)? in
            if c.handler == nil { c.waiting.append(change) }
            return c.handler
        }
        handler?(change)
    }

    // MARK: Audio arriving (http(s) items)

    /// The current item's: an http(s) item whose audio has not arrived.
    var wouldWait: Bool { live.withLock { $0 }?.wouldWait ?? false }
    var framesReady: Int { live.withLock { $0 }?.framesReady ?? 0 }
    var reachedEnd: Bool { live.withLock { $0 }?.reachedEnd ?? true }
    var download: HTTPSource? { live.withLock { $0 }?.download }
    var onChunk: (@Sendable () -> Void)? {
        get { arrivals.onChunk }
        set { arrivals.onChunk = newValue }
    }
    /// For the http(s) items opened from now on, and the current one and the one opened ahead
    /// if they are such items. (A file item always waits: its bytes are on the disk, and no
    /// arrival would wake a feed it starved.)
    var waitsForData: Bool {
        get { arrivals.waitsForData }
        set {
            arrivals.waitsForData = newValue
            for prefetcher in [live.withLock { $0 }, opened.withLock { $0 }?.decoder.source as? PrefetchingDecoder] {
                if let prefetcher, prefetcher.download != nil { prefetcher.waitsForData = newValue }
            }
        }
    }

    var info: AudioFileInfo { AudioFileInfo(container: "playlist", codec: "items") }
    /// None: an item's warnings are reported as that item's failure when it ends.
    var warnings: [DecodeWarning] { [] }
    /// The stream's length as far as it is known (any thread may ask: the player clamps its
    /// position and seeks with it).
    var frameCount: Int { plan.withLock { $0.knownEnd } }
    var isFrameCountExact: Bool { false }

    func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int {
        while let playing = current {
            var failed = false
            do {
                let n = try playing.decoder.read(into: buffer)
                if n > 0 {
                    position += n
                    readSinceSeek = true
                    let frame = position
                    plan.withLock { $0.knownEnd = max($0.knownEnd, frame) }
                    return n
                }
                // Damage decoded past: the item played what it could, and that is told once.
                if playing.pass == 1, let warning = playing.decoder.warnings.first {
                    let name = plan.withLock { $0.items[playing.id]?.name ?? "item" }
                    record(failure: AudioPlayer.error(for: warning, in: name), of: playing.id)
                }
            } catch {
                failed = true
                record(failure: error, of: playing.id)
            }
            // The item ended: its next pass, or the next item, joins here.
            let (again, next, start) = plan.withLock { p -> (Bool, Int?, Int) in
                let loops = p.numberOfLoops
                if !failed, p.items[playing.id] != nil,
                   p.repeatMode == .one || loops < 0 || playing.pass <= loops { return (true, playing.id, 0) }
                let next = failed ? p.following(playing.id) : p.next(after: playing.id)
                return (false, next, next.map { p.startFrame(of: $0, at: format) } ?? 0)
            }
            switch next {
            case playing.id? where again:
                // A loop pass: the decoder rewinds (a kept head, no wait on the disk).
                try playing.decoder.seek(toFrame: 0)
                current = (playing.id, playing.decoder, playing.pass + 1)
            case playing.id? where !failed:
                // The only item, repeated with the rest: it starts where items start.
                try playing.decoder.seek(toFrame: start)
                current = (playing.id, playing.decoder, 1)
            case let next? where next != playing.id:
                current = take(next, at: nil)
            default:
                current = nil
            }
            guard let current else {
                let end = position
                plan.withLock { $0.endFrame = end }
                break
            }
            let record = PassageRecord(frame: position, id: current.id, itemFrame: current.decoder.position,
                                       pass: current.pass, itemFrames: current.decoder.frameCount,
                                       sourceFormat: current.decoder.sourceFormat, info: current.decoder.info)
            plan.withLock { $0.begin(record) }
            tell(.started(id: record.id, restarted: false), at: record.frame)
            openAhead()
        }
        return 0
    }

    /// Starts the stream again at the selected item: stream frame `frame` is where it begins.
    func seek(toFrame frame: Int) throws {
        let (id, itemFrame) = plan.withLock { p -> (Int?, Int?) in
            defer { p.selectedFrame = nil }
            return (p.selected ?? p.order.first, p.selectedFrame)
        }
        let standing = !readSinceSeek && frame == position && itemFrame == nil && current?.id == id
        readSinceSeek = false
        if !standing { plan.withLock { $0.generation += 1 } }
        guard let id else {
            current = nil
            return
        }
        position = frame
        if let playing = current, playing.id == id {
            try playing.decoder.seek(toFrame: itemFrame ?? plan.withLock { $0.startFrame(of: id, at: format) })
            current = (id, playing.decoder, 1)
        } else {
            current = take(id, at: itemFrame)
        }
        let record = current.map {
            PassageRecord(frame: frame, id: $0.id, itemFrame: $0.decoder.position, pass: 1,
                          itemFrames: $0.decoder.frameCount, sourceFormat: $0.decoder.sourceFormat, info: $0.decoder.info)
        }
        plan.withLock { p in
            p.passages = []
            p.knownEnd = frame
            p.endFrame = nil
            p.stopFrame = nil
            if let record { p.begin(record) }
            p.selected = record?.id
        }
        if let started = record?.id, !standing { tell(.started(id: started, restarted: true), at: frame) }
        openAhead()
    }

    /// Records that item `id` failed with `error`, where the stream stands.
    private func record(failure error: any Error, of id: Int) {
        let failure = plan.withLock { p in
            let name = p.items[id]?.name ?? "item"
            let failure = error as? AudioError ?? AudioError(.readFailed, "\(name): \(error)", underlying: error)
            p.failures.append((id, failure))
            return failure
        }
        tell(.failed(id: id, error: failure), at: position)
    }

    /// Opens `id` at output frame `frame` (nil: where it starts), or, if it cannot be opened,
    /// the next item that can; from what was opened ahead if that is it.
    private func take(_ id: Int, at frame: Int?) -> (id: Int, decoder: ConvertingDecoder, pass: Int)? {
        var candidate: Int? = id
        var wanted = frame
        var tried = Set<Int>()
        while let next = candidate, !tried.contains(next) {
            tried.insert(next)
            let (item, start) = plan.withLock { p in (p.items[next], wanted ?? p.startFrame(of: next, at: format)) }
            wanted = nil
            if let ready = opened.withLock({ slot -> OpenedItem? in
                guard let o = slot, o.id == next, o.startFrame == start else { return nil }
                slot = nil
                return o
            }) {
                return (ready.id, ready.decoder, 1)
            }
            guard let item else {
                candidate = plan.withLock { $0.following(next) }
                continue
            }
            do { return (next, try item.open(at: format, startFrame: start, arrivals: arrivals), 1) } catch {
                record(failure: error, of: next)
                candidate = plan.withLock { $0.following(next) }
            }
        }
        return nil
    }

    /// Opens the item after the current one on a queue of its own, so it decodes ahead.
    private func openAhead() {
        let format = self.format
        guard let playing = current?.id,
              let (next, item, start) = plan.withLock({ p -> (Int, PlaylistItem, Int)? in
                  guard let next = p.next(after: playing), next != playing, let item = p.items[next] else { return nil }
                  return (next, item, p.startFrame(of: next, at: format))
              }) else { return }
        opener.async { [opened, arrivals] in
            guard let decoder = try? item.open(at: format, startFrame: start, arrivals: arrivals) else { return }
            let ready = OpenedItem(id: next, startFrame: start, decoder: decoder)
            opened.withLock { $0 = ready }
        }
    }
}
