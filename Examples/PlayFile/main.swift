// The shortest program that plays a file: `swift run PlayFile PATH`.
import Foundation
import Spool

guard CommandLine.arguments.count == 2 else {
    print("usage: PlayFile FILE")
    exit(2)
}
final class Done: AudioPlayerDelegate, Sendable {
    let finished = DispatchSemaphore(value: 0)
    func audioPlayerDidFinishPlaying(_ player: AudioPlayer, successfully flag: Bool) { finished.signal() }
}
do {
    let player = try AudioPlayer(contentsOfFile: CommandLine.arguments[1])
    let done = Done()
    player.delegate = done
    try player.play()
    print("playing \(CommandLine.arguments[1]), \(String(format: "%.1f", player.duration)) s")
    done.finished.wait()
    Thread.sleep(forTimeInterval: player.outputLatency)  // what the device still holds
} catch {
    print("PlayFile: \(error)")
    exit(1)
}
