import Foundation
import Spool

extension PlaySession {
    /// Frames rendered between two looks at the player.
    static let offlineChunkFrames = 1024

    /// Renders every file, one after another, into the WAV file `--output wav:PATH` names,
    /// as fast as the CPU allows.
    ///
    /// Each file gets exactly the frames it plays, converted to the output's rate and the
    /// playback rate: every frame from `--start` to the end, and every loop pass, no more. The
    /// device renders in chunks until the player has stopped; a player that stops early at
    /// equal or converted rates (its last frames are still in the converter) gets the rest
    /// rendered, one that runs on (the time-stretch's length is not exact) is rendered until
    /// it stops. A decode error ends the file where it stopped and is reported.
    func renderOffline() throws {
        guard let render = output.renderOffline else { return }
        let outputRate = output.backend.outputFormat.sampleRate
        for index in paths.indices {
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
                try render(frames)
                rendered += frames
            }
            if let error = track.events.ending?.error { report(error) }
            if !options.quiet { printError(track.summaryLine(seconds: HostTime.seconds(from: start, to: HostTime.now()))) }
        }
        try output.finish?()
    }
}
