internal import COpenAL
#if canImport(Glibc)
import Glibc
#endif
import SpoolCore

/// OpenAL Soft converting and mixing by itself, the way a program that uses OpenAL directly
/// plays audio: plain sources on buffers at the audio's own rate, converted to the device
/// rate by OpenAL Soft's resampler (`AL_SOFT_source_resampler`: in 1.19 nearest, linear — its
/// default — cubic, and the 11th- and 23rd-order band-limited sincs). The peer the mix,
/// capacity and resampler benchmarks measure Spool against. (Spool's own OpenAL back-end
/// converts with `QueueResampler` instead, and hands OpenAL audio at the device rate.)
public enum OpenALSoftPeer {
    /// One of OpenAL Soft's resamplers.
    public struct Resampler: Sendable, Equatable, CustomStringConvertible {
        /// Its index for `AL_SOURCE_RESAMPLER_SOFT`.
        public let index: Int
        /// Its name as OpenAL Soft gives it (`AL_RESAMPLER_NAME_SOFT`).
        public let name: String
        /// Whether it is the one sources get unless told (`AL_DEFAULT_RESAMPLER_SOFT`).
        public let isDefault: Bool

        public var description: String { isDefault ? "\(name) (default)" : name }
    }

    /// The resamplers this OpenAL Soft has.
    /// - Throws: `.unsupportedFormat` when it lacks `AL_SOFT_source_resampler`; device errors.
    public static func resamplers() throws -> [Resampler] {
        let device = try OpenALDevice(.loopback(OutputConfiguration(sampleRate: 48_000)))
        defer { device.close() }
        return try device.perform { _ in try Self.list() }
    }

    /// The resampler whose name contains `fragment` (case-insensitive), e.g. "linear", "23rd".
    /// - Throws: `.invalidParameter` naming the ones there are, when none matches.
    public static func resampler(named fragment: String) throws -> Resampler {
        let all = try resamplers()
        guard let found = all.first(where: { $0.name.lowercased().contains(fragment.lowercased()) }) else {
            throw AudioError(.invalidParameter,
                             "OpenAL Soft has no resampler named like \"\(fragment)\"; it has \(all.map(\.name).joined(separator: ", "))")
        }
        return found
    }

    private static func list() throws -> [Resampler] {
        guard alIsExtensionPresent("AL_SOFT_source_resampler") != 0 else {
            throw AudioError(.unsupportedFormat, "this OpenAL Soft lacks AL_SOFT_source_resampler")
        }
        let count = Int(alGetInteger(AL_NUM_RESAMPLERS_SOFT))
        let fallback = Int(alGetInteger(AL_DEFAULT_RESAMPLER_SOFT))
        return (0..<max(0, min(count, 64))).map { i in
            let name = alGetStringiSOFT(AL_RESAMPLER_NAME_SOFT, Int32(i)).map { String(cString: $0) } ?? "resampler \(i)"
            return Resampler(index: i, name: name, isDefault: i == fallback)
        }
    }

    /// `buffer` converted to `deviceRate` by `resampler` (see the samples' `convert`).
    /// - Throws: `.invalidParameter` for more than 2 channels; device and AL errors.
    public static func convert(_ buffer: PCMBuffer, deviceRate: Double, resampler: Resampler) throws -> PCMBuffer {
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
    public static func convert(_ input: [Float], channelCount: Int, from inputRate: Double, to outputRate: Double,
                               resampler: Resampler) throws -> [Float] {
        guard (1...2).contains(channelCount) else {
            throw AudioError(.invalidParameter, "OpenAL Soft's plain sources take mono or stereo here, not \(channelCount) channels")
        }
        let stereo = channelCount == 2 ? input : input.flatMap { [$0, $0] }
        let buffer = try PCMBuffer(format: AudioFormat(sampleRate: inputRate, channelCount: 2), samples: stereo)
        let device = try OpenALDevice(.loopback(OutputConfiguration(sampleRate: outputRate, periodFrames: 1024)))
        defer { device.close() }
        let sources = try Sources(device: device, buffers: [buffer], resampler: resampler, looping: false, directChannels: true)
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
    public static func benchmarkMix(voices: Int, seconds: Double, deviceRate: Double, sourceRate: Double,
                                    periodFrames: Int, channelCount: Int = 2, convertedShare: Double = 1,
                                    resampler: Resampler) throws -> (renderSeconds: Double, cpuSeconds: Double) {
        guard (1...OpenALDevice.defaultSourceLimit).contains(voices), seconds.isFinite, seconds > 0 else {
            throw AudioError(.invalidParameter, "the OpenAL Soft mix needs 1...\(OpenALDevice.defaultSourceLimit) voices and a positive duration")
        }
        let device = try OpenALDevice(.loopback(OutputConfiguration(sampleRate: deviceRate, periodFrames: periodFrames)))
        defer { device.close() }
        // The first `convertedShare` of the voices at `sourceRate`, the rest at the device's.
        let converted = Int((Double(voices) * convertedShare).rounded(.up))
        let tones = try sines(converted, rate: sourceRate, channels: channelCount)
            + sines(voices - converted, rate: deviceRate, channels: channelCount)
        let streams = try Streams(device: device, tones: tones, resampler: resampler)
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
    public static func playInRealTime(voices: Int, seconds: Double, settleSeconds: Double = 0,
                                      configuration: OutputConfiguration, sourceRate: Double, channelCount: Int = 2,
                                      convertedShare: Double = 1, resampler: Resampler) throws -> RealTimeRun {
        guard (1...OpenALDevice.defaultSourceLimit).contains(voices), seconds.isFinite, seconds > 0,
              settleSeconds.isFinite, settleSeconds >= 0 else {
            throw AudioError(.invalidParameter, "the OpenAL Soft run needs 1...\(OpenALDevice.defaultSourceLimit) voices, "
                             + "a positive duration and a settling time of 0 or more")
        }
        let device = try OpenALDevice(.null(configuration))
        defer { device.close() }
        let deviceRate = device.format.sampleRate
        let converted = Int((Double(voices) * convertedShare).rounded(.up))
        let tones = try sines(converted, rate: sourceRate, channels: channelCount)
            + sines(voices - converted, rate: deviceRate, channels: channelCount)
        let streams = try Streams(device: device, tones: tones, resampler: resampler)
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

    /// One-second sines of 220 + 55·(k mod 32) Hz, amplitude 0.5.
    static func sines(_ count: Int, rate: Double, channels: Int) throws -> [PCMBuffer] {
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

    /// Streaming sources, one per tone, each looping its tone through three queued buffers.
    private final class Streams: @unchecked Sendable {
        // Sendable: used by one thread, its AL calls in the device's batches.
        static let chunkFrames = 4096
        static let buffersPerSource = 3
        let device: OpenALDevice
        private let tones: [PCMBuffer]
        private var sources: [UInt32] = []
        private var names: [[UInt32]] = []
        /// Each tone's next frame to queue.
        private var positions: [Int]
        private let chunk: UnsafeMutablePointer<Float>

        init(device: OpenALDevice, tones: [PCMBuffer], resampler: Resampler) throws {
            self.device = device
            self.tones = tones
            positions = [Int](repeating: 0, count: tones.count)
            chunk = .allocate(capacity: Self.chunkFrames * 2)
            let count = tones.count
            let made = try device.perform { _ -> ([UInt32], [UInt32]) in
                var sources = [UInt32](repeating: 0, count: count)
                var names = [UInt32](repeating: 0, count: count * Self.buffersPerSource)
                alGenSources(Int32(count), &sources)
                try OpenALStatus.al().check("alGenSources for \(count) sources")
                alGenBuffers(Int32(names.count), &names)
                try OpenALStatus.al().check("alGenBuffers for \(names.count) buffers")
                for source in sources {
                    alSourcei(source, AL_SOURCE_RESAMPLER_SOFT, Int32(resampler.index))
                    alSourcef(source, AL_GAIN, 1 / Float(count))
                }
                return (sources, names)
            }
            sources = made.0
            names = (0..<count).map { Array(made.1[($0 * Self.buffersPerSource)..<(($0 + 1) * Self.buffersPerSource)]) }
            try device.perform { _ in
                for k in 0..<count {
                    for name in names[k] { fill(name, tone: k) }
                    names[k].withUnsafeBufferPointer { alSourceQueueBuffers(sources[k], Int32($0.count), $0.baseAddress) }
                }
                try OpenALStatus.al().check("queueing the first buffers of \(count) sources")
            }
        }

        deinit { chunk.deallocate() }

        /// Copies the next chunk of tone `k` (looping) into OpenAL buffer `name`.
        private func fill(_ name: UInt32, tone k: Int) {
            let tone = tones[k]
            let channels = tone.format.channelCount
            tone.samples.withUnsafeBufferPointer { samples in
                var written = 0
                while written < Self.chunkFrames {
                    let n = min(Self.chunkFrames - written, tone.frameCount - positions[k])
                    guard let base = samples.baseAddress, n > 0 else { break }
                    (chunk + written * channels).update(from: base + positions[k] * channels, count: n * channels)
                    written += n
                    positions[k] = (positions[k] + n) % tone.frameCount
                }
            }
            let format = channels == 1 ? AL_FORMAT_MONO_FLOAT32 : AL_FORMAT_STEREO_FLOAT32
            alBufferData(name, format, chunk, Int32(Self.chunkFrames * channels * 4), Int32(tone.format.sampleRate))
        }

        func play() throws {
            try device.perform { _ in
                sources.withUnsafeBufferPointer { alSourcePlayv(Int32($0.count), $0.baseAddress) }
                try OpenALStatus.al().check("alSourcePlayv")
            }
        }

        /// Unqueues what each source has played, refills it and queues it again.
        func refill() throws {
            try device.perform { _ in
                var name: UInt32 = 0
                for (k, source) in sources.enumerated() {
                    var processed: Int32 = 0
                    alGetSourcei(source, AL_BUFFERS_PROCESSED, &processed)
                    for _ in 0..<max(0, processed) {
                        alSourceUnqueueBuffers(source, 1, &name)
                        fill(name, tone: k)
                        alSourceQueueBuffers(source, 1, &name)
                    }
                }
                try OpenALStatus.al().check("refilling \(sources.count) sources")
            }
        }

        /// Sources that ran dry: OpenAL stopped them.
        func stoppedCount() throws -> Int {
            try device.perform { _ in
                sources.filter { source in
                    var state: Int32 = 0
                    alGetSourcei(source, AL_SOURCE_STATE, &state)
                    return state == AL_STOPPED
                }.count
            }
        }

        func delete() {
            let (sources, names) = (self.sources, self.names.flatMap { $0 })
            try? device.perform { _ in
                for source in sources { alSourceStop(source); alSourcei(source, AL_BUFFER, 0) }
                sources.withUnsafeBufferPointer { alDeleteSources(Int32($0.count), $0.baseAddress) }
                names.withUnsafeBufferPointer { alDeleteBuffers(Int32($0.count), $0.baseAddress) }
                _ = alGetError()
            }
            self.sources = []
            self.names = []
        }
    }

    /// Plain OpenAL sources, one per buffer, made and deleted here (not the device's voices).
    private final class Sources: @unchecked Sendable {
        // Sendable: used by one thread, its AL calls in the device's batches.
        let device: OpenALDevice
        private var names: [UInt32] = []
        private var buffers: [UInt32] = []

        init(device: OpenALDevice, buffers pcm: [PCMBuffer], resampler: Resampler, looping: Bool,
             directChannels: Bool = false) throws {
            self.device = device
            guard pcm.allSatisfy({ (1...2).contains($0.format.channelCount) }) else {
                throw AudioError(.invalidParameter, "OpenAL Soft's plain sources take mono or stereo here")
            }
            let made = try device.perform { _ -> ([UInt32], [UInt32]) in
                var sources = [UInt32](repeating: 0, count: pcm.count)
                var names = [UInt32](repeating: 0, count: pcm.count)
                alGenSources(Int32(pcm.count), &sources)
                try OpenALStatus.al().check("alGenSources for \(pcm.count) sources")
                alGenBuffers(Int32(pcm.count), &names)
                try OpenALStatus.al().check("alGenBuffers for \(pcm.count) buffers")
                for (k, buffer) in pcm.enumerated() {
                    let format = buffer.format.channelCount == 1 ? AL_FORMAT_MONO_FLOAT32 : AL_FORMAT_STEREO_FLOAT32
                    buffer.samples.withUnsafeBytes {
                        alBufferData(names[k], format, $0.baseAddress, Int32($0.count), Int32(buffer.format.sampleRate))
                    }
                    alSourcei(sources[k], AL_BUFFER, Int32(bitPattern: names[k]))
                    alSourcei(sources[k], AL_LOOPING, looping ? AL_TRUE : AL_FALSE)
                    alSourcei(sources[k], AL_SOURCE_RESAMPLER_SOFT, Int32(resampler.index))
                    alSourcef(sources[k], AL_GAIN, 1 / Float(pcm.count))
                    if directChannels { alSourcei(sources[k], AL_DIRECT_CHANNELS_SOFT, AL_TRUE) }
                }
                try OpenALStatus.al().check("setting up \(pcm.count) sources with the \(resampler.name) resampler")
                return (sources, names)
            }
            (names, buffers) = made
        }

        func play() throws {
            try device.perform { _ in
                names.withUnsafeBufferPointer { alSourcePlayv(Int32($0.count), $0.baseAddress) }
                try OpenALStatus.al().check("alSourcePlayv")
            }
        }

        /// Stops and deletes the sources and their buffers.
        func delete() {
            let (sources, buffers) = (names, self.buffers)
            try? device.perform { _ in
                for source in sources { alSourceStop(source); alSourcei(source, AL_BUFFER, 0) }
                sources.withUnsafeBufferPointer { alDeleteSources(Int32($0.count), $0.baseAddress) }
                buffers.withUnsafeBufferPointer { alDeleteBuffers(Int32($0.count), $0.baseAddress) }
                _ = alGetError()
            }
            names = []
            self.buffers = []
        }
    }
}
