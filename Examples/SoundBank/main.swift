// The sound tool a game keeps: every sound of a folder loaded once, played by name, with a
// completion when each has played. `swift run SoundBank [FOLDER] [NAME...]`.
import Foundation
import Spool

let arguments = Array(CommandLine.arguments.dropFirst())
let folder = URL(fileURLWithPath: arguments.first ?? "Fixtures")
do {
    let bank = try SoundBank.shared()
    let report = try bank.load(directory: folder)
    print(report)
    let names = arguments.count > 1 ? Array(arguments.dropFirst()) : Array(bank.names.prefix(4))
    let finished = DispatchSemaphore(value: 0)
    for name in names {
        do {
            let sound = try bank.sound(named: name)
            let token = sound.addCompletion { sound in
                print("  \(URL(fileURLWithPath: sound.name).lastPathComponent) played")
                finished.signal()
            }
            try sound.play()
            finished.wait()
            sound.removeCompletion(token)
        } catch let error as AudioError {
            print("  \(error.message)")  // an unknown name lists the nearest ones
        }
    }
    // Overlapping: the first sound three times, 50 ms apart, mixed on the one output.
    if let first = names.first, let sound = try? bank.sound(named: first) {
        for _ in 0..<3 {
            try sound.play()
            Thread.sleep(forTimeInterval: 0.05)
        }
        Thread.sleep(forTimeInterval: sound.buffer.duration + bank.effects.backend.outputLatency)
        print("played \(first) three times, overlapping")
    }
} catch {
    print("SoundBank: \(error)")
    exit(1)
}
