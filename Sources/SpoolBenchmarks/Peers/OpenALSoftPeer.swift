#if canImport(Glibc)
import Glibc
#endif
import SpoolCore
import SpoolOpenAL

/// OpenAL Soft converting and mixing by itself, the way a program that uses OpenAL directly
/// plays audio: plain sources on buffers at the audio's own rate, converted to the device
/// rate by OpenAL Soft's resampler (`AL_SOFT_source_resampler`: in 1.19 nearest, linear — its
/// default — cubic, and the 11th- and 23rd-order band-limited sincs). The peer the mix,
/// capacity and resampler benchmarks measure Spool against. (Spool's own OpenAL back-end
/// converts with `VoiceResampler` instead, and hands OpenAL audio at the device rate.)
package enum OpenALSoftPeer {
    package typealias Resampler = OpenALSoftResampler

    /// The resamplers this OpenAL Soft has.
    /// - Throws: `.unsupportedFormat` when it lacks `AL_SOFT_source_resampler`; device errors.
    package static func resamplers() throws -> [Resampler] {
        let device = try OpenALDevice(.loopback(OutputConfiguration(sampleRate: 48_000)))
        defer { device.close() }
        return try OpenALSoftResampler.available(on: device)
    }

    /// The resampler whose name contains `fragment` (case-insensitive), e.g. "linear", "23rd".
    /// - Throws: `.invalidParameter` naming the ones there are, when none matches.
    package static func resampler(named fragment: String) throws -> Resampler {
        let all = try resamplers()
        guard let found = all.first(where: { $0.name.lowercased().contains(fragment.lowercased()) }) else {
            throw AudioError(.invalidParameter,
                             "OpenAL Soft has no resampler named like \"\(fragment)\"; it has \(all.map(\.name).joined(separator: ", "))")
        }
        return found
    }

    /// `buffer` converted to `deviceRate` by `resampler` (see the samples' `convert`).
    /// - Throws: `.invalidParameter` for more than 2 channels; device and AL errors.
    package static func convert(_ buffer: PCMBuffer, deviceRate: Double, resampler: Resampler) throws -> PCMBuffer {
        let channels = buffer.format.channelCount
        let out = try convert(buffer.samples, channelCount: channels, from: buffer.format.sampleRate, to: deviceRate,
                              resampler: resampler)
        return try PCMBuffer(format: AudioFormat(sampleRate: deviceRate, channelCount: channels), samples: out)
    }

    /// Converts interleaved mono or stereo `input` from `inputRate` to `outputRate` with
    /// `resampler`, as the resampler table converts with Spool's own converters: one source
    /// with direct channels (`AL_DIRECT_CHANNELS_SOFT`: each channel straight to its output
    /// channel, no panning), gain 1, on a loopback device at `outputRate`; mono goes in on both
    /// channels and comes back from the left one.
    /// - Returns: The input's duration at `outputRate` (rounded), `channelCount` channels.
    /// - Throws: `.invalidParameter` for more than 2 channels; device and AL errors.
    package static func convert(_ input: [Float], channelCount: Int, from inputRate: Double, to outputRate: Double,
                               resampler: Resampler) throws -> [Float] {
        guard (1...2).contains(channelCount) else {
            throw AudioError(.invalidParameter, "OpenAL Soft's plain sources take mono or stereo here, not \(channelCount) channels")
        }
        let stereo = channelCount == 2 ? input : input.flatMap { [$0, $0] }
        let buffer = try PCMBuffer(format: AudioFormat(sampleRate: inputRate, channelCount: 2), samples: stereo)
        let device = try OpenALDevice(.loopback(OutputConfiguration(sampleRate: outputRate, periodFrames: 1024)))
        defer { device.close() }
        let sources = try OpenALSoftSources(device: device, buffers: [buffer], resampler: resampler, looping: false, directChannels: true)
        defer { sources.delete() }
        try sources.play()
        let frames = Int((Double(buffer.frameCount) * outputRate / inputRate).rounded())
        var out = [Float](repeating: 0, count: frames * 2)
        try out.withUnsafeMutableBufferPointer { try device.render(frames: frames, into: $0) }
        return channelCount == 2 ? out : stride(from: 0, to: out.count, by: 2).map { out[$0] }
    }

    /// Mixes `voices` streaming sources, each a one-second sine of its own frequency at
    /// `sourceRate` (the first `convertedShare` of them; the rest at the device's rate) with
    /// `channelCount` channels at volume 1/`voices`, on a loopback device at `deviceRate`,
    /// rendering `seconds` of audio in periods of `periodFrames` as fast as the CPU allows, on
    /// the calling thread (where OpenAL Soft mixes a loopback device). Each source streams its
    /// sine as OpenAL streaming code does (alstream.c): three 4096-frame buffers queued, and
    /// after each period the processed ones unqueued (`AL_BUFFERS_PROCESSED`), refilled with
    /// the next frames of the loop (`alBufferData`) and queued again; that work is timed too,
    /// as the queue engine's refills are.
    /// - Returns: Wall-clock and this thread's CPU seconds for the rendering, after one warm-up period.
    /// - Throws: `.invalidParameter` for a count out of range; device and AL errors.
    package static func benchmarkMix(voices: Int, seconds: Double, deviceRate: Double, sourceRate: Double,
                                    periodFrames: Int, channelCount: Int = 2, convertedShare: Double = 1,
                                    resampler: Resampler) throws -> (renderSeconds: Double, cpuSeconds: Double) {
        guard (1...OpenALDevice.sourceCapacity).contains(voices), seconds.isFinite, seconds > 0 else {
            throw AudioError(.invalidParameter, "the OpenAL Soft mix needs 1...\(OpenALDevice.sourceCapacity) voices and a positive duration")
        }
        let device = try OpenALDevice(.loopback(OutputConfiguration(sampleRate: deviceRate, periodFrames: periodFrames)))
        defer { device.close() }
        let tones = try tones(voices, convertedShare: convertedShare, sourceRate: sourceRate, deviceRate: deviceRate,
                              channels: channelCount)
        let streams = try OpenALSoftStreams(device: device, tones: tones, resampler: resampler)
        defer { streams.delete() }
        try streams.play()
        let buffer = UnsafeMutableBufferPointer<Float>.allocate(capacity: periodFrames * 2)
        defer { buffer.deallocate() }
        try device.render(frames: periodFrames, into: buffer)  // warm-up
        try streams.refill()
        let total = Int(seconds * deviceRate)
        let wallStart = HostTime.now(), cpuStart = HostTime.threadCPUSeconds()
        var done = 0
        while done < total {
            try device.render(frames: periodFrames, into: buffer)
            try streams.refill()
            done += periodFrames
        }
        return (HostTime.seconds(from: wallStart, to: HostTime.now()), HostTime.threadCPUSeconds() - cpuStart)
    }

    /// Plays `voices` streaming sources (as `benchmarkMix`: the first `convertedShare` at
    /// `sourceRate`) in real time on the null device for `settleSeconds` and then `seconds`,
    /// refilled by a thread of their own every half period, as OpenAL streaming code does:
    /// whether OpenAL Soft keeps up with that many voices.
    /// - Returns: Over the `seconds` after the settling: the sources that ran dry (OpenAL
    ///   stops a source whose queue runs out), the periods the null device's clock rendered
    ///   too late (xruns), and what OpenAL Soft's mixes cost (`alcRenderSamplesSOFT` timed on
    ///   the clock's thread).
    /// - Throws: `.invalidParameter` for a count out of range; device and AL errors.
    package static func playInRealTime(voices: Int, seconds: Double, settleSeconds: Double = 0,
                                      configuration: OutputConfiguration, sourceRate: Double, channelCount: Int = 2,
                                      convertedShare: Double = 1, resampler: Resampler) throws -> RealTimeRun {
        guard (1...OpenALDevice.sourceCapacity).contains(voices), seconds.isFinite, seconds > 0,
              settleSeconds.isFinite, settleSeconds >= 0 else {
            throw AudioError(.invalidParameter, "the OpenAL Soft run needs 1...\(OpenALDevice.sourceCapacity) voices, "
                             + "a positive duration and a settling time of 0 or more")
        }
        let device = try OpenALDevice(.null(configuration))
        defer { device.close() }
        let deviceRate = device.format.sampleRate
        let tones = try tones(voices, convertedShare: convertedShare, sourceRate: sourceRate, deviceRate: deviceRate,
                              channels: channelCount)
        let streams = try OpenALSoftStreams(device: device, tones: tones, resampler: resampler)
        defer { streams.delete() }
        try streams.play()
        let interval = HostTime.nanoseconds(Double(configuration.periodFrames) / deviceRate / 2)
        var next = HostTime.now()
        func refill(for duration: Double) throws {
            let deadline = HostTime.now() + HostTime.nanoseconds(duration)
            while next < deadline {
                try streams.refill()
                next += interval
                HostTime.sleep(until: next)
            }
        }
        try refill(for: settleSeconds)
        // A source that ran dry stays stopped: those stopped now are the settling's.
        let dryBefore = try streams.stoppedCount(), lateBefore = device.xrunCount
        let loadBefore = device.renderLoad?.snapshot ?? RenderLoad.Snapshot()
        device.renderLoad?.resetPeak()
        try refill(for: seconds)
        return RealTimeRun(dry: try streams.stoppedCount() - dryBefore, late: device.xrunCount - lateBefore,
                           load: (device.renderLoad?.snapshot ?? RenderLoad.Snapshot()).since(loadBefore))
    }

    /// The tones of `voices` voices: the first `convertedShare` of them at `sourceRate`, the
    /// rest at the device's (see `sines`).
    static func tones(_ voices: Int, convertedShare: Double, sourceRate: Double, deviceRate: Double,
                      channels: Int) throws -> [PCMBuffer] {
        let converted = Int((Double(voices) * convertedShare).rounded(.up))
        return try sines(converted, rate: sourceRate, channels: channels)
            + sines(voices - converted, rate: deviceRate, channels: channels)
    }

    /// One-second sines of 220 + 55·(k mod 32) Hz, amplitude 0.5.
    package static func sines(_ count: Int, rate: Double, channels: Int) throws -> [PCMBuffer] {
        let format = try AudioFormat(sampleRate: rate, channelCount: channels)
        let frames = Int(rate)
        return try (0..<count).map { v in
            let frequency = 220 + 55 * Double(v % 32)
            var samples = [Float](repeating: 0, count: frames * channels)
            for i in 0..<frames {
                let value = Float(sin(2 * Double.pi * frequency * Double(i) / rate)) * 0.5
                for c in 0..<channels { samples[i * channels + c] = value }
            }
            return try PCMBuffer(format: format, samples: samples)
        }
    }
}
