// A radio-style player: plays an http(s) URL while it downloads, shows the station's
// now-playing title and how much is buffered, and pauses and resumes on Return.
// `swift run StreamURL http://127.0.0.1:8000/stream.mp3`
import Foundation
import Spool

guard CommandLine.arguments.count == 2, let url = URL(string: CommandLine.arguments[1]) else {
    print("usage: StreamURL URL")
    exit(2)
}

/// Prints a status line for every event, and says when playing ended.
final class Screen: Sendable {
    let ended = DispatchSemaphore(value: 0)

    func show(_ event: AudioPlayerEvent, of player: AudioPlayer) {
        switch event {
        case .state(let state): print("[\(state)]")
        case .streamTitle(let title): print("now playing: \(title)")
        case .bufferingBegan: print("buffering…")
        case .bufferingEnded: print("playing again")
        case .bufferFill(let fill):
            let bar = String(repeating: "#", count: Int(fill.fraction * 20)).padding(toLength: 20, withPad: ".", startingAt: 0)
            let duration = player.isDurationEstimated ? "~\(Int(player.duration)) s" : "\(Int(player.duration)) s"
            print(String(format: "%6.1f s of %@  buffer [%@] %.1f s decoded", player.currentTime, duration, bar, fill.decodedSeconds))
        case .decodeError(let error), .outputLost(let error): print("error: \(error.message)")
        case .finishedPlaying(let successfully):
            print(successfully ? "end of stream" : "stopped early")
            ended.signal()
        }
    }
}

do {
    let player = try AudioPlayer(contentsOf: url)
    let screen = Screen()
    let events = player.events
    Task.detached {
        for await event in events { screen.show(event, of: player) }
    }
    print("\(player.info.container), \(player.info.codec); Return pauses and resumes, q quits")
    try player.play()
    // Standard input on a thread of its own: Return toggles pause, q (or its end) quits.
    Thread.detachNewThread {
        while let line = readLine() {
            if line == "q" { break }
            do {
                if player.state == .paused { try player.play() } else { try player.pause() }
                print("[\(player.state)]")
            } catch {
                print("error: \(error)")
            }
        }
        screen.ended.signal()
    }
    screen.ended.wait()
    try player.stop()
} catch {
    print("StreamURL: \(error)")
    exit(1)
}
