// Starts the same sound on each back-end and prints how long each took to be heard and how
// much audio each keeps queued ahead of the speaker.
//
//     swift run CompareLatency [default|null]
import Foundation
import Spool

let output = CommandLine.arguments.dropFirst().first ?? "null"
let configuration = OutputConfiguration(sampleRate: 48_000, channelCount: 2, periodFrames: 256, periodCount: 3)
let format = try AudioFormat(sampleRate: 48_000, channelCount: 2)
// 0.2 s of a 440 Hz tone.
let tone = try PCMBuffer(format: format, samples: (0..<9_600).flatMap { i -> [Float] in
    let v = Float(sin(2 * Double.pi * 440 * Double(i) / 48_000)) * 0.3
    return [v, v]
})

/// Plays `tone` on `voice` and returns (start latency, output latency) in milliseconds.
func measure(_ voice: any PlaybackVoice, sampleRate: Double, firstHeard: () -> UInt64?) throws -> (Double, Double) {
    try voice.enqueue(tone)
    let started = HostTime.now()
    try voice.start()
    var heard: UInt64?
    while heard == nil, HostTime.seconds(from: started, to: HostTime.now()) < 2 {
        heard = firstHeard()
        usleep(200)
    }
    let startMs = heard.map { HostTime.seconds(from: started, to: $0) * 1000 } ?? .nan
    let outputMs = voice.outputLatency * 1000
    try voice.stop(immediately: false)
    return (startMs, outputMs)
}

// The buffer queue: the engine says when the queue's first frame leaves the device.
let device = try OutputDeviceFactory.open(output == "default" ? .default : .null, configuration: configuration).device
let queueBackend = try BufferQueueBackend(device: device)
let queueVoice = try queueBackend.makeVoice(format: format) as! BufferQueueVoice
Thread.sleep(forTimeInterval: output == "default" ? 3 : 0.1)  // a sound server warms up a new stream
let (queueStart, queueOutput) = try measure(queueVoice, sampleRate: 48_000) { queueVoice.queue.firstFrameHostTime }

// OpenAL Soft: its source latency (AL_SOFT_source_latency) says when the playing frame is heard.
let openAL = try output == "default"
    ? OpenALBackend(.systemDefault, configuration: configuration) : OpenALBackend(.null(configuration))
let alVoice = try openAL.makeVoice(format: format)
Thread.sleep(forTimeInterval: output == "default" ? 3 : 0.1)
let (alStart, alOutput) = try measure(alVoice, sampleRate: 48_000) {
    let played = alVoice.framesPlayed
    guard played > 0 else { return nil }
    let heard = Double(HostTime.now()) + (alVoice.outputLatency - Double(played) / 48_000) * 1e9
    return UInt64(heard)
}

print("on \(output), 256 × 3 frames at 48 kHz:")
print(String(format: "  buffer queue  start %6.2f ms  output %6.2f ms", queueStart, queueOutput))
print(String(format: "  OpenAL Soft   start %6.2f ms  output %6.2f ms", alStart, alOutput))
Thread.sleep(forTimeInterval: 0.3)
openAL.device.close()
