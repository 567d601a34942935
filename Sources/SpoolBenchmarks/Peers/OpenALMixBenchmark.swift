#if canImport(Glibc)
import Glibc
#endif
import SpoolCore
import SpoolOpenAL
import SpoolResampling

/// Measures Spool's OpenAL back-end mixing `voices` streaming voices on a loopback device, as
/// fast as the CPU allows: its row of `spool bench mix` (OpenAL Soft converting by itself is
/// `OpenALSoftPeer.benchmarkMix`).
///
/// The first `convertedShare` of the voices are at 44.1 kHz (converted by the voices'
/// `VoiceResampler` at `quality`), the rest at the device rate — the same rule as the queue engine's
/// side of the bench; each plays a one-second sine of its own frequency, looped by a
/// `VoiceFeeder` in 4096-frame buffers, at volume 1/`voices`. The device renders `seconds` of
/// audio in periods of `periodFrames`, servicing every voice after each period, on the
/// calling thread, which is also where OpenAL Soft mixes a loopback device.
/// - Parameters:
///   - voices: Voices to mix, 1…256.
///   - seconds: Seconds of audio to render.
///   - rate: The device rate in Hz (48 000 in the bench).
///   - periodFrames: Frames per render call, 16…8192.
///   - channelCount: Channels of each voice's sine, 1 or 2.
///   - convertedShare: The share of voices at 44.1 kHz, 0…1.
///   - checkFrames: With `check`, frames rendered after the timed part for it.
///   - check: Given the interleaved stereo output rendered after the timed part, and the
///     frames the timed part rendered; for tests of what the benchmark mixes.
/// - Returns: Wall-clock seconds and this thread's CPU seconds
///   (`clock_gettime(CLOCK_THREAD_CPUTIME_ID)`) for the rendering, after one warm-up period.
/// - Throws: `.invalidParameter` for a count out of range; OpenAL errors.
package func benchmarkOpenALMix(voices: Int, seconds: Double, rate: Double, periodFrames: Int,
                               channelCount: Int = 2, convertedShare: Double = 0.5, quality: ResamplingQuality = .default,
                               checkFrames: Int = 4800,
                               check: ((_ rendered: [Float], _ framesTimed: Int) -> Void)? = nil) throws -> (renderSeconds: Double, cpuSeconds: Double) {
    guard (1...OpenALDevice.sourceCapacity).contains(voices), seconds.isFinite, seconds > 0,
          (1...2).contains(channelCount), (0...1).contains(convertedShare) else {
        throw AudioError(.invalidParameter, "mix benchmark needs 1...256 voices, a positive duration, 1 or 2 channels and a converted share in 0...1")
    }
    let device = try OpenALDevice(.loopback(OutputConfiguration(sampleRate: rate, periodFrames: periodFrames)))
    defer { device.close() }
    var feeders: [VoiceFeeder] = []
    for v in 0..<voices {
        let voiceRate = Double(v) < Double(voices) * convertedShare ? 44_100 : rate
        let format = try AudioFormat(sampleRate: voiceRate, channelCount: channelCount)
        let frequency = 220 + 55 * Double(v % 32)
        let frames = Int(voiceRate)
        var samples = [Float](repeating: 0, count: frames * channelCount)
        for i in 0..<frames {
            let value = Float(sin(2 * Double.pi * frequency * Double(i) / voiceRate)) * 0.5
            for c in 0..<channelCount { samples[i * channelCount + c] = value }
        }
        let voice = try OpenALStreamingSource(device: device, format: format, quality: quality)
        try voice.setVolume(1 / Float(voices), rampSeconds: 0)
        let feeder = try VoiceFeeder(voice: voice, source: .buffer(try PCMBuffer(format: format, samples: samples)),
                                     bufferFrames: 4096, buffersAhead: 3, numberOfLoops: -1)
        try feeder.prime()
        try voice.start()
        feeders.append(feeder)
    }
    let buffer = UnsafeMutableBufferPointer<Float>.allocate(capacity: periodFrames * 2)
    defer { buffer.deallocate() }
    try device.render(frames: periodFrames, into: buffer)  // warm-up: first mix, first refills
    let total = Int(seconds * rate)
    let wallStart = HostTime.now(), cpuStart = HostTime.threadCPUSeconds()
    var done = 0
    while done < total {
        try device.render(frames: periodFrames, into: buffer)
        done += periodFrames
    }
    let wall = HostTime.seconds(from: wallStart, to: HostTime.now())
    let cpu = HostTime.threadCPUSeconds() - cpuStart
    if let check {
        // After the timing: the mix as it then sounds, for a caller to check against the sum
        // of the voices' sines.
        var rendered: [Float] = []
        while rendered.count < checkFrames * 2 {
            try device.render(frames: periodFrames, into: buffer)
            rendered += buffer
        }
        check(rendered, done)
    }
    for feeder in feeders { feeder.voice.dispose() }
    return (wall, cpu)
}

