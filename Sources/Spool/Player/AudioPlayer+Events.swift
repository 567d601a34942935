import Dispatch
import SpoolCore

/// What an `AudioPlayer` tells its delegate and its event streams.
public enum AudioPlayerEvent: Sendable, CustomStringConvertible {
    /// Playback ended by itself: every frame (and loop) played (`successfully: true`), or a
    /// decode error or the loss of the output ended it early (`false`). A call to `stop()`
    /// or `pause()` sends nothing. The corresponding Apple call is
    /// `audioPlayerDidFinishPlaying(_:successfully:)`.
    case finishedPlaying(successfully: Bool)
    /// The source could not be decoded further (corrupt or truncated data); every frame
    /// decoded before the failure played. `finishedPlaying(successfully: false)` follows.
    /// The corresponding Apple call is `audioPlayerDecodeErrorDidOccur(_:error:)`.
    case decodeError(AudioError)
    /// The back-end took the voice away. When its device was lost (`AudioError.Code.deviceLost`:
    /// the sink or the sound server went away), the player is paused at the frame last heard,
    /// as iOS pauses when headphones are pulled, and the next `play()` goes on from there with
    /// a new voice; otherwise (a voice of higher priority took its source, the device was
    /// closed) `finishedPlaying(successfully: false)` follows.
    case outputLost(AudioError)
    /// Where the player's transport was when the stream was made: the first event of every
    /// stream (only there), so that a stream taken after the player finished, or paused, can
    /// tell at once rather than wait for an event that already happened. The delegate never
    /// receives it.
    case state(AudioPlayer.State)
    /// An http(s) stream's audio ran out before its download (or had not arrived at a
    /// `play()` or a seek): every frame decoded so far played, and the player waits in
    /// `.buffering`. The closest Apple state is AVPlayer's `.waitingToPlayAtSpecifiedRate`.
    case bufferingBegan
    /// Enough of the stream arrived: the player plays on from the next frame (`.playing`).
    case bufferingEnded
    /// How much of an http(s) stream is held ahead, sent as it downloads (at most four times a
    /// second).
    case bufferFill(BufferFill)
    /// A radio station (Icecast/SHOUTcast `icy-metaint` metadata) named what it plays now,
    /// sent as the metadata arrives; `streamTitle` holds the last.
    case streamTitle(String)

    public var description: String {
        switch self {
        case .state(let state): "state: \(state)"
        case .bufferingBegan: "buffering"
        case .bufferingEnded: "buffering ended"
        case .bufferFill(let fill): "buffer: \(fill)"
        case .streamTitle(let title): "title: \(title)"
        case .finishedPlaying(let successfully): "finished playing (successfully: \(successfully))"
        case .decodeError(let error): "decode error: \(error.message)"
        case .outputLost(let error): "output lost: \(error.message)"
        }
    }
}

/// Receives an `AudioPlayer`'s events on the player's `eventQueue`. Every method has an
/// empty default. The corresponding Apple protocol is `AVAudioPlayerDelegate`.
public protocol AudioPlayerDelegate: AnyObject {
    /// Playback ended by itself; see `AudioPlayerEvent.finishedPlaying(successfully:)`.
    func audioPlayerDidFinishPlaying(_ player: AudioPlayer, successfully flag: Bool)
    /// Decoding failed mid-file; see `AudioPlayerEvent.decodeError(_:)`.
    func audioPlayerDecodeErrorDidOccur(_ player: AudioPlayer, error: AudioError)
    /// The output went away; see `AudioPlayerEvent.outputLost(_:)`.
    func audioPlayerOutputDidEnd(_ player: AudioPlayer, error: AudioError)
    /// An http(s) stream began or ended buffering; see `AudioPlayerEvent.bufferingBegan`.
    func audioPlayerBufferingDidChange(_ player: AudioPlayer, isBuffering: Bool)
}

extension AudioPlayerDelegate {
    public func audioPlayerDidFinishPlaying(_ player: AudioPlayer, successfully flag: Bool) {}
    public func audioPlayerDecodeErrorDidOccur(_ player: AudioPlayer, error: AudioError) {}
    public func audioPlayerOutputDidEnd(_ player: AudioPlayer, error: AudioError) {}
    public func audioPlayerBufferingDidChange(_ player: AudioPlayer, isBuffering: Bool) {}
}

/// How a player's and a playlist's events reach their event queue. In real time, after the
/// fact (`async`): the voice's callback thread never waits for a program's handler. Offline,
/// within the render call in which they happen (`sync`, or at once when the render call runs
/// on the event queue itself), as `AudioQueueOfflineRender` calls back: a loop that renders
/// until `finishedPlaying` stops at the render call that played the last frame, every time.
enum EventDelivery {
    /// Tells a queue apart: set on every event queue, so that a delivery knows when it is
    /// already running on it (a `sync` there would never return).
    private final class Marker: Sendable {}
    private static let key = DispatchSpecificKey<Marker>()

    /// Marks `queue` as an event queue (once; a queue shared by several players keeps one mark).
    static func mark(_ queue: DispatchQueue) {
        if queue.getSpecific(key: key) == nil { queue.setSpecific(key: key, value: Marker()) }
    }

    /// Runs `body` on `queue` at `hostTime` (`HostTime`), or at once when that has passed: an
    /// event timed to when a frame is heard, in real time.
    static func run(on queue: DispatchQueue, atHostTime hostTime: UInt64, _ body: @escaping @Sendable () -> Void) {
        let now = HostTime.now()
        guard hostTime > now else { return queue.async(execute: body) }
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(clamping: hostTime - now)), execute: body)
    }

    /// Runs `body` on `queue`: later in real time, before returning offline.
    static func run(on queue: DispatchQueue, offline: Bool, _ body: @escaping @Sendable () -> Void) {
        guard offline else { return queue.async(execute: body) }
        if let mark = queue.getSpecific(key: key), DispatchQueue.getSpecific(key: key) === mark {
            body()
        } else {
            queue.sync(execute: body)
        }
    }
}

/// The player's delegate, held weakly, and its event streams' continuations.
struct PlayerListeners: @unchecked Sendable {
    // Sendable: kept in the player's `listeners` lock; the delegate is only called on the
    // player's event queue, as its documentation promises.
    weak var delegate: (any AudioPlayerDelegate)?
    var continuations: [Int: AsyncStream<AudioPlayerEvent>.Continuation] = [:]
    var nextStream = 0
}

extension AudioPlayer {
    /// A new stream of this player's events: first `.state(_:)`, the transport as it is now
    /// (and a radio station's `.streamTitle(_:)` as it is now, when it has one), then every
    /// event from now on, in the order the delegate receives them. Each access
    /// makes a stream of its own. It ends when the player goes, not when it finishes playing
    /// (a finished player can play again): a loop that waits for the end breaks out of it at
    /// `.finishedPlaying`, or at a first `.state(.stopped)`.
    public var events: AsyncStream<AudioPlayerEvent> {
        let (stream, continuation) = AsyncStream<AudioPlayerEvent>.makeStream(bufferingPolicy: .bufferingNewest(64))
        continuation.yield(.state(state))
        if let title = streamTitle { continuation.yield(.streamTitle(title)) }
        let id = listeners.withLock { l -> Int in
            l.nextStream += 1
            l.continuations[l.nextStream] = continuation
            return l.nextStream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.listeners.withLock { $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    /// Delivers `events`, in order, on the event queue: to the delegate, then to every stream.
    func deliver(_ events: [AudioPlayerEvent]) {
        EventDelivery.run(on: eventQueue, offline: backend.offlineRenderer != nil) { [self] in
            let (delegate, continuations) = listeners.withLock { ($0.delegate, Array($0.continuations.values)) }
            for event in events {
                switch event {
                case .finishedPlaying(let successfully): delegate?.audioPlayerDidFinishPlaying(self, successfully: successfully)
                case .decodeError(let error): delegate?.audioPlayerDecodeErrorDidOccur(self, error: error)
                case .outputLost(let error): delegate?.audioPlayerOutputDidEnd(self, error: error)
                case .bufferingBegan: delegate?.audioPlayerBufferingDidChange(self, isBuffering: true)
                case .bufferingEnded: delegate?.audioPlayerBufferingDidChange(self, isBuffering: false)
                case .state, .bufferFill, .streamTitle: break
                }
                for continuation in continuations { continuation.yield(event) }
            }
        }
    }
}
