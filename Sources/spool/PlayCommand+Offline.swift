import Foundation
import Spool
import SpoolBenchmarks

extension PlaySession {
    /// Frames rendered between two looks at the player.
    static let offlineChunkFrames = 1024

    /// Renders the files, one after another without a gap, into the WAV file `--output
    /// wav:PATH` names, as fast as the CPU allows.
    ///
    /// Each file gets the frames it plays, converted to the output's rate and the playback
    /// rate: every frame from `--start` to the end, and every loop pass. The device renders in
    /// chunks until the player has stopped (a render or so after the last frame left, when its
    /// voice sees its queue empty); then the file is cut to the frames the playlist fed at the
    /// playback rate, or to its last sounding frame if that comes later. So at equal rates,
    /// converted rates and varispeed — where the length is exact — it holds exactly the frames
    /// played, and a time-stretch that runs longer keeps its tail. A file whose decoding fails
    /// ends where it failed, is reported, and the next joins there.
    func renderOffline() throws {
        guard let offline = output.offline else { return }
        let writer = offline.writer
        let channels = writer.format.channelCount
        var follower = FileFollower()
        func look() {
            reportFailures()
            for change in follower.follow(playlist.passages, underruns: player.underrunCount) where !options.quiet {
                switch change {
                case .started(let file): printError(startLine(file))
                case .moved: break
                case .ended(let file): printError(summaryLine(file))
                }
            }
        }
        try player.play()
        var lastSounding = 0
        // A player that stays silent this long after the last frame it was fed never stops.
        let patience = Int(writer.format.sampleRate * 10)
        while player.state != .stopped {
            let fed = playlist.passages.reduce(0) { $0 + $1.outputFrames }
            guard writer.framesWritten < lastSounding + patience || writer.framesWritten < fed else {
                report(AudioError(.invalidState, "the render is still playing \(writer.framesWritten - lastSounding) frames "
                                  + "after its last sound; it stops here"))
                try? playlist.stop()
                break
            }
            let chunk = try offline.device.render(frames: Self.offlineChunkFrames)
            if let last = chunk.samples.lastIndex(where: { $0 != 0 }) {
                lastSounding = writer.framesWritten + last / channels + 1
            }
            try writer.write(chunk)
            look()
        }
        finish()
        look()
        let fed = playlist.passages.reduce(0) { $0 + $1.outputFrames }
        let expected = Int((Double(fed) / Double(player.rate)).rounded())
        try writer.truncate(toFrames: max(expected, lastSounding))
        if !options.quiet, let last = follower.leave() { printError(summaryLine(last)) }
        try writer.finish()
    }
}
