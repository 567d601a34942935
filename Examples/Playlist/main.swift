// Files played back to back without a gap, whatever their formats, with repeat and shuffle.
// `swift run Playlist FILE...` (default: three fixtures of three formats and rates).
import Foundation
import Spool

let files = CommandLine.arguments.count > 1 ? Array(CommandLine.arguments.dropFirst())
    : ["Fixtures/mp3-44100-stereo.mp3", "Fixtures/vorbis-22050-mono.ogg", "Fixtures/flac-48000-mono-s24.flac"]
do {
    let playlist = try Playlist(items: files.map { .file(URL(fileURLWithPath: $0)) })
    let events = playlist.events
    if CommandLine.arguments.contains("--shuffle") { playlist.setShuffle(true) }
    try playlist.play()
    for await event in events {
        switch event {
        case .currentItemChanged(let index): print("now: \(playlist.items[index])")
        case .itemFailed(let index, let error): print("skipped \(playlist.items[index]): \(error.message)")
        case .finished:
            print("played \(files.count) items")
            try await Task.sleep(for: .seconds(playlist.player.outputLatency))
            exit(0)
        }
    }
} catch {
    print("Playlist: \(error)")
    exit(1)
}
