import Dispatch
import Foundation
import Spool

/// What the listener set, carried from one file to the next: a volume turned down on the first
/// file stays down on the second.
struct PlaySettings {
    var volume: Float = 1
    var pan: Float = 0
    var rate: Float = 1
    var rateMode = AudioPlayer.RateMode.timeStretch
    var numberOfLoops = 0
    var startSeconds: Double = 0
    var metering = false
}

/// The files of the command line as the listener hears them, followed from the playlist's
/// passages: when a file starts, where it stands, and when it ends, with the frames it played
/// over all its passes and across seeks.
struct FileFollower {
    /// The file being heard.
    struct Heard {
        /// Its index in the playlist's items.
        let index: Int
        /// Its passage last seen.
        var passage: PlaylistPassage
        /// Frames (at the file's rate) heard in its passages before `passage`.
        var framesBefore = 0
        /// When it was first heard, and the player's underruns then.
        let startedAt: UInt64
        let underrunsAtStart: Int

        /// Frames of the file heard, at its own rate.
        var frames: Int { framesBefore + passage.framesPlayed }
        /// Whether its last pass reached the end.
        var reachedTheEnd: Bool { passage.currentTime >= passage.duration }
    }

    /// What a look at the passages found, in order.
    enum Change {
        case started(Heard)
        /// The file being heard moved on (its position, or a new pass).
        case moved(Heard)
        case ended(Heard)
    }

    private(set) var heard: Heard?
    /// Whether the next passage list starts over (after a seek, next, previous) and its first
    /// passage goes on with the file being heard.
    private var continuing = false

    /// Folds in the playlist's passages, as `Playlist.passages` lists them now.
    /// - Parameter underruns: The player's underruns so far.
    mutating func follow(_ passages: [PlaylistPassage], underruns: Int) -> [Change] {
        var changes: [Change] = []
        for passage in passages {
            guard let index = passage.index else { continue }
            guard var file = heard else {
                begin(passage, index, underruns, &changes)
                continue
            }
            let isNew = continuing || passage.ordinal > file.passage.ordinal
            if !isNew {
                guard passage.ordinal == file.passage.ordinal else { continue }  // folded in already
            } else if index == file.index, continuing || passage.pass > 1 {
                // The file's next pass, or where a seek within it landed: the same file goes on.
                file.framesBefore += file.passage.framesPlayed
            } else {
                changes.append(.ended(file))
                begin(passage, index, underruns, &changes)
                continue
            }
            continuing = false
            file.passage = passage
            heard = file
            changes.append(.moved(file))
        }
        return changes
    }

    private mutating func begin(_ passage: PlaylistPassage, _ index: Int, _ underruns: Int, _ changes: inout [Change]) {
        continuing = false
        let file = Heard(index: index, passage: passage, startedAt: HostTime.now(), underrunsAtStart: underruns)
        heard = file
        changes.append(.started(file))
    }

    /// The passages start over (a seek within the file being heard): the file goes on.
    mutating func seekedWithinFile() { continuing = heard != nil }

    /// The passages start over at another file (next, previous): the file heard ends here.
    mutating func leave() -> Heard? {
        defer { heard = nil }
        continuing = false
        return heard
    }
}

/// The playlist's events, kept for the command's loop to read.
final class PlaylistReports: Sendable {
    private struct Heard: Sendable {
        var failures: [AudioError] = []
        var finished = false
    }

    private let heard = Locked(Heard())
    private let finishedSignal = DispatchSemaphore(value: 0)

    /// Starts listening to `playlist`'s events (from now on).
    init(_ playlist: Playlist) {
        let events = playlist.events
        Task.detached { [heard, finishedSignal] in
            for await event in events {
                switch event {
                case .itemFailed(_, let error): heard.withLock { $0.failures.append(error) }
                case .finished:
                    heard.withLock { $0.finished = true }
                    finishedSignal.signal()
                case .currentItemChanged: break
                }
            }
        }
    }

    /// The items' errors told since the last call.
    func takeFailures() -> [AudioError] {
        heard.withLock { h in
            defer { h.failures = [] }
            return h.failures
        }
    }

    /// Whether the playlist has played to its end.
    var finished: Bool { heard.withLock { $0.finished } }

    /// Waits up to `seconds` for the end.
    /// - Returns: Whether it has come.
    func waitForEnd(seconds: Double) -> Bool {
        guard finishedSignal.wait(timeout: .now() + seconds) == .success else { return false }
        finishedSignal.signal()  // it stays come for the next wait
        return true
    }
}
