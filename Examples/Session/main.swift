// An audio session in a program: its category, an interruption by another session of the
// process and how the program answers it, a route change, and what the output really runs
// with. On a desktop a call in another program (a `phone` stream) interrupts it the same way.
//
//     swift run Session
import Foundation
import Spool

let music = AudioSession.shared
try music.setCategory(.playback)
try music.setPreferredIOBufferDuration(0.005)
let format = try AudioFormat(sampleRate: 48_000, channelCount: 2)
// Two seconds of a 440 Hz tone.
let tone = try PCMBuffer(format: format, samples: (0..<96_000).flatMap { i -> [Float] in
    let v = Float(sin(2 * Double.pi * 440 * Double(i) / 48_000)) * 0.3
    return [v, v]
})
let player = try AudioPlayer(buffer: tone)  // on the shared session's output
music.setEventHandler { event in
    print("music session: \(event)")
    // As on iOS, the program decides whether to play again when an interruption ends.
    if case .interruption(.ended(shouldResume: true)) = event {
        try? player.play()
        print("  resumed at \(String(format: "%.3f", player.currentTime)) s")
    }
}
print("output \(music.currentRoute): \(music.sampleRate) Hz, I/O buffer \(String(format: "%.1f", music.ioBufferDuration * 1000)) ms "
      + "(asked 5.0 ms), output latency \(String(format: "%.1f", music.outputLatency * 1000)) ms")

try player.play()
Thread.sleep(forTimeInterval: 0.5)

// Another non-mixable session of the process takes the audio: the music pauses.
let call = AudioSession(backend: try music.backend())
try call.setCategory(.playback)
try call.setActive(true)
Thread.sleep(forTimeInterval: 0.1)
print("while the other session is active the player is \(player.state), at \(String(format: "%.3f", player.currentTime)) s")
Thread.sleep(forTimeInterval: 0.4)
// It gives the audio back and tells the others they may resume.
try call.setActive(false, options: .notifyOthersOnDeactivation)
Thread.sleep(forTimeInterval: 0.5)

// A category change is a route change; ambient mixes with everything.
try music.setCategory(.ambient)
Thread.sleep(forTimeInterval: 1.2)
print("the player is \(player.state)")
