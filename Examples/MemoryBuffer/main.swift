// Synthesises PCM in memory and plays it: a rising arpeggio, then the same notes as a chord,
// panned across the stereo field. `swift run MemoryBuffer`.
import Foundation
import Spool

let format = try AudioFormat(sampleRate: 48_000, channelCount: 1)

/// `seconds` of a sine at `frequency` Hz, with a 10 ms fade at each end so it starts and stops
/// without a click.
func tone(_ frequency: Double, seconds: Double, amplitude: Double = 0.2) throws -> PCMBuffer {
    let frames = Int(seconds * format.sampleRate)
    let fade = Int(0.01 * format.sampleRate)
    let samples = (0..<frames).map { i -> Float in
        let edge = min(1, Double(min(i, frames - 1 - i)) / Double(fade))
        return Float(amplitude * edge * sin(2 * .pi * frequency * Double(i) / format.sampleRate))
    }
    return try PCMBuffer(format: format, samples: samples)
}

final class Finish: AudioPlayerDelegate, Sendable {
    let done = DispatchSemaphore(value: 0)
    func audioPlayerDidFinishPlaying(_ player: AudioPlayer, successfully flag: Bool) { done.signal() }
}

do {
    let notes = [261.63, 329.63, 392.00, 523.25]  // C4 E4 G4 C5
    let backend = try AudioPlayer.defaultBackend()
    // One after another, left to right.
    for (index, frequency) in notes.enumerated() {
        let player = try AudioPlayer(buffer: try tone(frequency, seconds: 0.3), backend: backend)
        let finish = Finish()
        player.delegate = finish
        try player.setPan(Float(index) / Float(notes.count - 1) * 2 - 1)
        try player.play()
        finish.done.wait()
    }
    // All at once: four players on the one output, mixed by the back-end.
    let chord = try notes.map { try AudioPlayer(buffer: try tone($0, seconds: 1.2, amplitude: 0.12), backend: backend) }
    let finishes = chord.map { _ in Finish() }
    for (player, finish) in zip(chord, finishes) {
        player.delegate = finish
        try player.prepareToPlay()
    }
    // Prepared players start on the same device period: a chord, not a strum.
    let when = chord[0].deviceCurrentTime + 0.05
    for player in chord { try player.play(atTime: when) }
    for finish in finishes { finish.done.wait() }
    Thread.sleep(forTimeInterval: backend.outputLatency)
    print("played \(notes.count) notes and a chord from memory")
} catch {
    print("MemoryBuffer: \(error)")
    exit(1)
}
