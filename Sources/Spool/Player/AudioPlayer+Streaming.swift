import Dispatch
import Foundation
import SpoolCore

/// How much of an http(s) URL an `AudioPlayer` holds ahead of what plays (the closest Apple
/// property is `AVPlayerItem.loadedTimeRanges`).
public struct BufferFill: Sendable, Equatable, CustomStringConvertible {
    /// Bytes downloaded and not yet decoded.
    public var bytes: Int
    /// The download's read-ahead budget now (`HTTPSource.budgetBytes`): it pauses when
    /// `bytes` reaches it.
    public var budgetBytes: Int
    /// Seconds decoded ahead of the voice.
    public var decodedSeconds: Double

    /// `bytes` over `budgetBytes`, 0…1.
    public var fraction: Double { budgetBytes > 0 ? min(1, Double(bytes) / Double(budgetBytes)) : 0 }

    public var description: String {
        "\(bytes / 1024) KiB of \(budgetBytes / 1024) KiB downloaded ahead, \(String(format: "%.2f", decodedSeconds)) s decoded"
    }
}

/// A player's source whose audio arrives over time (downloading): what its buffering watches.
protocol ArrivingAudio: AnyObject, Sendable {
    /// Frames decoded ahead of the reader now.
    var framesReady: Int { get }
    /// The end is decoded (or decoding failed): reads no longer wait.
    var reachedEnd: Bool { get }
    /// Whether a read with nothing decoded waits (offline) or starves the feed (real time).
    var waitsForData: Bool { get set }
    /// Called (on a worker) each time a chunk is decoded.
    var onChunk: (@Sendable () -> Void)? { get set }
    /// The download read now, for the buffer fill; nil for none.
    var download: HTTPSource? { get }
}

extension AudioPlayer {
    /// What a player of an http(s) URL (or a playlist, whose items may be) keeps besides the
    /// decoder: the audio as it arrives, a station's titles, and the queue on which arrivals
    /// and dry runs are taken in (never the voice's callback thread, never the event queue).
    final class Streaming: Sendable {
        /// Frames per decoded chunk.
        static let chunkFrames = 4096

        let audio: any ArrivingAudio
        let titles: TitleRelay
        let queue = DispatchQueue(label: "spool.player.buffering")
        private let lastFillReport = Locked<UInt64>(0)

        init(audio: any ArrivingAudio, titles: TitleRelay = TitleRelay()) {
            self.audio = audio
            self.titles = titles
        }

        /// A station's titles from the download's queue to the player. Those that came
        /// before the player could take them are not sent again: the last is `last`, which a
        /// new event stream begins with.
        final class TitleRelay: Sendable {
            private struct State {
                var last: String?
                var sink: (@Sendable (String) -> Void)?
            }
            private let state = Locked(State())

            /// The last title received.
            var last: String? { state.withLock { $0.last } }

            func receive(_ title: String) {
                let sink = state.withLock { s -> (@Sendable (String) -> Void)? in
                    s.last = title
                    return s.sink
                }
                sink?(title)
            }

            /// Sends every title from now on to `sink`.
            func deliver(to sink: @escaping @Sendable (String) -> Void) {
                state.withLock { $0.sink = sink }
            }
        }

        /// Opens `url` read ahead as a player's URL is read: `chunksAhead` chunks of
        /// `chunkFrames`, with its download kept for the buffer fill.
        static func open(_ url: URL, onTitle: (@Sendable (String, Int) -> Void)? = nil) throws -> PrefetchingDecoder {
            let (decoder, source) = try RemoteAudio.open(url, onTitle: onTitle)
            return PrefetchingDecoder(decoder, chunkFrames: chunkFrames, chunksAhead: chunksAhead(decoder.format), download: source)
        }

        /// Chunks decoded ahead of the voice: about 2 s of audio, so that a stall of the link
        /// shorter than that is never heard.
        static func chunksAhead(_ format: AudioFormat) -> Int {
            max(4, format.frames(forSeconds: 2) / chunkFrames + 1)
        }

        /// The frames decoded ahead at which a buffering player plays on: about a second, so
        /// that a link slower than the audio stalls now and then rather than at every chunk.
        func resumeFrames(_ format: AudioFormat) -> Int {
            min(format.frames(forSeconds: 1), (Self.chunksAhead(format) - 1) * Self.chunkFrames)
        }

        /// Whether 250 ms have passed since the last fill report (and marks one now if so).
        func fillReportDue() -> Bool {
            let now = HostTime.now()
            return lastFillReport.withLock { last in
                guard last == 0 || now &- last >= 250_000_000 else { return false }
                last = now
                return true
            }
        }
    }
}
