import Dispatch
import Foundation
import SpoolCore
import SpoolDecoding

/// One item of a `Playlist`: a file, encoded bytes, or PCM.
public enum PlaylistItem: Sendable, CustomStringConvertible {
    case file(URL)
    case data(Data, typeHint: String?)
    case buffer(PCMBuffer)

    /// A name for messages and displays.
    public var description: String {
        switch self {
        case .file(let url): url.lastPathComponent
        case .data(let data, _): "\(data.count) bytes"
        case .buffer(let buffer): "\(buffer.frameCount) frames of PCM"
        }
    }

    /// A decoder of the item at `format`, at frame 0.
    func open(at format: AudioFormat) throws -> any AudioDecoder {
        let decoder: any AudioDecoder = switch self {
        case .file(let url): PrefetchingDecoder(try DecoderRegistry.shared.open(.file(url)))
        case .data(let data, let hint): PrefetchingDecoder(try DecoderRegistry.shared.open(.memory(data, typeHint: hint)))
        case .buffer(let buffer): PCMBufferDecoder(buffer)
        }
        return try ConvertingDecoder(decoder, to: format)
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
    /// The item the next seek starts at.
    var selected: Int?
    /// Where each item began in the stream fed since the last seek: (frame, item id).
    var starts: [(frame: Int, id: Int)] = []
    /// Items that could not be opened, skipped, with why.
    var failures: [(id: Int, error: AudioError)] = []
    /// Every item start and failure, in order, for the playlist's events.
    var changes: [PlaylistChange] = []
    /// The item that started last.
    var lastStarted: Int?
    /// Frames of the item the stream started with at the last seek.
    var startFrameCount = 0

    /// The item after `id` in play order under the repeat mode; nil at the end.
    func next(after id: Int) -> Int? {
        if repeatMode == .one, items[id] != nil { return id }
        guard let index = order.firstIndex(of: id) else { return order.first }
        if index + 1 < order.count { return order[index + 1] }
        return repeatMode == .all ? order.first : nil
    }

    /// The item before `id` in play order; the first item stays the first unless repeating all.
    func previous(before id: Int) -> Int? {
        guard let index = order.firstIndex(of: id) else { return order.first }
        if index > 0 { return order[index - 1] }
        return repeatMode == .all ? order.last : id
    }

    /// The item playing at stream frame `frame`.
    func item(atStreamFrame frame: Int) -> (id: Int, start: Int)? {
        starts.last { $0.frame <= frame }.map { ($0.id, $0.frame) }
    }
}

/// An entry of `PlaylistPlan.changes`.
enum PlaylistChange: Sendable {
    case started(Int)
    case failed(Int, AudioError)
}

/// The decoder a playlist's player plays: its items one after another at the output's format,
/// the next opened (and decoding ahead) while the current one plays, so one item's last frame
/// is followed by the next one's first with nothing between.
///
/// A seek starts the stream again at the selected item (frame 0 of the stream is that item's
/// first frame); stream frames count on across the items from there.
final class PlaylistSource: AudioDecoder, @unchecked Sendable {
    // Sendable: `current`, `streamFrames` are touched only by the feeder, under its lock; the
    // plan and the opened next item are in locks of their own.
    let format: AudioFormat
    let plan: Locked<PlaylistPlan>
    private let opened = Locked<OpenedItem?>(nil)

    /// An item opened ahead on the opener queue.
    private struct OpenedItem: @unchecked Sendable {
        // Sendable: made on the opener queue, then used only by the feeder once it takes it.
        let id: Int
        let decoder: any AudioDecoder
    }
    private let opener = DispatchQueue(label: "spool.playlist.open", qos: .userInitiated)
    private var current: (id: Int, decoder: any AudioDecoder)?
    private var streamFrames = 0
    private(set) var position = 0

    /// Called on the feeder's thread each time an item starts or fails, after the plan records it.
    private let changed = Locked<(@Sendable () -> Void)?>(nil)

    init(format: AudioFormat, plan: PlaylistPlan) {
        self.format = format
        self.plan = Locked(plan)
    }

    /// Sets what to call when an item starts or fails.
    func onChange(_ handler: @escaping @Sendable () -> Void) { changed.withLock { $0 = handler } }

    var info: AudioFileInfo { AudioFileInfo(container: "playlist", codec: "items") }
    var warnings: [DecodeWarning] { current?.decoder.warnings ?? [] }
    /// The frames of the item the stream starts with (any thread may ask: the player clamps
    /// its seeks with it).
    var frameCount: Int { plan.withLock { $0.startFrameCount } }
    var isFrameCountExact: Bool { false }

    func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int {
        while let playing = current {
            let n = try playing.decoder.read(into: buffer)
            if n > 0 {
                streamFrames += n
                position += n
                return n
            }
            // The item ended: the next one joins here.
            let next = plan.withLock { $0.next(after: playing.id) }
            guard let next else {
                current = nil
                return 0
            }
            if next == playing.id {
                // Repeating one item: its decoder rewinds (a kept head, no wait on the disk).
                try playing.decoder.seek(toFrame: 0)
            } else {
                current = take(next)
            }
            let frame = streamFrames
            if let current {
                plan.withLock { p in
                    p.starts.append((frame, current.id))
                    p.changes.append(.started(current.id))
                    p.lastStarted = current.id
                }
            }
            changed.withLock { $0 }?()
            openAhead()
        }
        return 0
    }

    /// Starts the stream again at the selected item's frame `frame`.
    func seek(toFrame frame: Int) throws {
        guard let id = plan.withLock({ $0.selected ?? $0.order.first }) else {
            current = nil
            return
        }
        if let playing = current, playing.id == id {
            try playing.decoder.seek(toFrame: frame)
        } else {
            current = take(id)
            if frame > 0 { try current?.decoder.seek(toFrame: frame) }
        }
        streamFrames = 0
        position = frame
        let started = current?.id
        let count = current?.decoder.frameCount ?? 0
        let isNew = plan.withLock { p -> Bool in
            p.startFrameCount = count
            p.starts = started.map { [(0, $0)] } ?? []
            p.selected = started
            guard let started, started != p.lastStarted else { return false }
            p.changes.append(.started(started))
            p.lastStarted = started
            return true
        }
        if isNew { changed.withLock { $0 }?() }
        openAhead()
    }

    /// Opens `id` (or, if it cannot be opened, the next item that can), from what was opened
    /// ahead if it is that item.
    private func take(_ id: Int) -> (id: Int, decoder: any AudioDecoder)? {
        var candidate: Int? = id
        var tried = Set<Int>()
        while let next = candidate, !tried.contains(next) {
            tried.insert(next)
            if let ready = opened.withLock({ slot -> OpenedItem? in
                guard let o = slot, o.id == next else { return nil }
                slot = nil
                return o
            }) {
                return (ready.id, ready.decoder)
            }
            guard let item = plan.withLock({ $0.items[next] }) else {
                candidate = plan.withLock { $0.next(after: next) }
                continue
            }
            do { return (next, try item.open(at: format)) } catch {
                let failure = error as? AudioError ?? AudioError(.readFailed, "\(item): \(error)", underlying: error)
                candidate = plan.withLock { p in
                    p.failures.append((next, failure))
                    p.changes.append(.failed(next, failure))
                    return p.next(after: next)
                }
            }
        }
        return nil
    }

    /// Opens the item after the current one on a queue of its own, so it decodes ahead.
    private func openAhead() {
        guard let playing = current?.id, let next = plan.withLock({ $0.next(after: playing) }), next != playing,
              let item = plan.withLock({ $0.items[next] }) else { return }
        let format = self.format
        opener.async { [opened] in
            guard let decoder = try? item.open(at: format) else { return }
            let ready = OpenedItem(id: next, decoder: decoder)
            opened.withLock { $0 = ready }
        }
    }
}
