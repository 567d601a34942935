import Foundation
import Spool

extension PlaySession {
    /// Frames rendered between two looks at the player.
    static let offlineChunkFrames = 1024

    /// Renders every file, one after another, into the WAV file `--output wav:PATH` names,
    /// as fast as the CPU allows.
    ///
    /// Each file gets the frames it plays, converted to the output's rate and the playback
    /// rate: every frame from `--start` to the end, and every loop pass. The device renders in
    /// chunks until the player has stopped (it stops a render or so after its last frame left,
    /// when its voice sees its queue empty). Up to the expected length every frame is written,
    /// past it only up to the last sounding frame, so at equal rates, converted rates and
    /// varispeed — where the length is exact — the file holds exactly the expected frames, and
    /// a time-stretch that runs longer keeps its tail. A decode error ends the file where the
    /// player stopped and is reported.
    func renderOffline() throws {
        guard let offline = output.offline else { return }
        let outputRate = output.backend.outputFormat.sampleRate
        for index in playable {
            guard let track = reporting({ try makeTrack(index) }) else { continue }
            if !options.quiet { printError(track.startLine(on: output.description)) }
            let player = track.player
            // --loops -1 is refused for a WAV output, so the frames left are known.
            let sourceFrames = track.framesLeft ?? 0
            let expected = Int((Double(sourceFrames) * outputRate / player.format.sampleRate / Double(player.rate)).rounded())
            // Far past the expected length: a player that has not stopped by then never will.
            let limit = 2 * expected + Int(outputRate * 10)
            let start = HostTime.now()
            guard reporting({ try player.play() }) != nil else { continue }
            var tail = SoundingTail(writer: offline.writer)
            var rendered = 0
            while true {
                if player.state == .stopped {
                    eventQueue.sync {}  // the events of the render that stopped it
                    guard track.events.ending?.successfully == true, rendered < expected else { break }
                }
                guard rendered < limit else {
                    report(AudioError(.invalidState, "\(track.path): still playing after \(rendered) frames, "
                                      + "\(expected) expected; the render stops here"))
                    try? player.stop()
                    break
                }
                let frames = rendered < expected ? min(Self.offlineChunkFrames, expected - rendered) : Self.offlineChunkFrames
                let chunk = try offline.device.render(frames: frames)
                if rendered < expected { try offline.writer.write(chunk) } else { try tail.add(chunk) }
                rendered += frames
            }
            // The delivery that told of the end holds the player until it returns; let it return,
            // so the player goes here, on this thread.
            eventQueue.sync {}
            if let error = track.events.ending?.error { report(error) }
            if !options.quiet { printError(track.summaryLine(seconds: HostTime.seconds(from: start, to: HostTime.now()))) }
        }
        try offline.writer.finish()
    }
}

/// Writes frames rendered past a file's expected length up to the last one that sounds:
/// silence is held back until sound follows it, and what is held at the end is dropped.
struct SoundingTail {
    let writer: WAVFileWriter
    private var heldSilentFrames = 0

    init(writer: WAVFileWriter) { self.writer = writer }

    mutating func add(_ chunk: PCMBuffer) throws {
        let channels = chunk.format.channelCount
        let samples = chunk.samples
        guard let last = samples.lastIndex(where: { $0 != 0 }) else {
            heldSilentFrames += chunk.frameCount
            return
        }
        let frames = last / channels + 1
        if heldSilentFrames > 0 {
            try [Float](repeating: 0, count: heldSilentFrames * channels).withUnsafeBufferPointer { try writer.write($0) }
        }
        try samples.withUnsafeBufferPointer { try writer.write(UnsafeBufferPointer(rebasing: $0[0..<(frames * channels)])) }
        heldSilentFrames = chunk.frameCount - frames
    }
}
