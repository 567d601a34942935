internal import COpenAL
import SpoolCore

// OpenAL Soft converting and mixing by itself, the way a program that uses OpenAL directly
// plays audio: plain sources on buffers at the audio's own rate, converted to the device rate
// by OpenAL Soft's resampler. The benchmarks measure Spool against it; these are the parts of
// that reference path that call OpenAL, as `package` API (no program sees them).

/// One of OpenAL Soft's resamplers (`AL_SOFT_source_resampler`: in 1.19 nearest, linear — its
/// default — cubic, and the 11th- and 23rd-order band-limited sincs).
package struct OpenALSoftResampler: Sendable, Equatable, CustomStringConvertible {
    /// Its index for `AL_SOURCE_RESAMPLER_SOFT`.
    package let index: Int
    /// Its name as OpenAL Soft gives it (`AL_RESAMPLER_NAME_SOFT`).
    package let name: String
    /// Whether it is the one sources get unless told (`AL_DEFAULT_RESAMPLER_SOFT`).
    package let isDefault: Bool

    package var description: String { isDefault ? "\(name) (default)" : name }

    /// The resamplers the OpenAL Soft behind `device` has.
    /// - Throws: `.unsupportedFormat` when it lacks `AL_SOFT_source_resampler`; device errors.
    package static func available(on device: OpenALDevice) throws -> [OpenALSoftResampler] {
        try device.perform { _ in
            guard alIsExtensionPresent("AL_SOFT_source_resampler") != 0 else {
                throw AudioError(.unsupportedFormat, "this OpenAL Soft lacks AL_SOFT_source_resampler")
            }
            let count = Int(alGetInteger(AL_NUM_RESAMPLERS_SOFT))
            let fallback = Int(alGetInteger(AL_DEFAULT_RESAMPLER_SOFT))
            return (0..<max(0, min(count, 64))).map { i in
                let name = alGetStringiSOFT(AL_RESAMPLER_NAME_SOFT, Int32(i)).map { String(cString: $0) } ?? "resampler \(i)"
                return OpenALSoftResampler(index: i, name: name, isDefault: i == fallback)
            }
        }
    }
}

/// Streaming sources, one per tone, each looping its tone through three queued buffers.
package final class OpenALSoftStreams: @unchecked Sendable {
    // Sendable: used by one thread, its AL calls in the device's batches.
    static let chunkFrames = 4096
    static let buffersPerSource = 3
    package let device: OpenALDevice
    private let tones: [PCMBuffer]
    private var sources: [UInt32] = []
    private var names: [[UInt32]] = []
    /// Each tone's next frame to queue.
    private var positions: [Int]
    private let chunk: UnsafeMutablePointer<Float>

    package init(device: OpenALDevice, tones: [PCMBuffer], resampler: OpenALSoftResampler) throws {
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

    package func play() throws {
        try device.perform { _ in
            sources.withUnsafeBufferPointer { alSourcePlayv(Int32($0.count), $0.baseAddress) }
            try OpenALStatus.al().check("alSourcePlayv")
        }
    }

    /// Unqueues what each source has played, refills it and queues it again.
    package func refill() throws {
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
    package func stoppedCount() throws -> Int {
        try device.perform { _ in
            sources.filter { source in
                var state: Int32 = 0
                alGetSourcei(source, AL_SOURCE_STATE, &state)
                return state == AL_STOPPED
            }.count
        }
    }

    package func delete() {
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
package final class OpenALSoftSources: @unchecked Sendable {
    // Sendable: used by one thread, its AL calls in the device's batches.
    package let device: OpenALDevice
    private var names: [UInt32] = []
    private var buffers: [UInt32] = []

    package init(device: OpenALDevice, buffers pcm: [PCMBuffer], resampler: OpenALSoftResampler, looping: Bool,
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

    package func play() throws {
        try device.perform { _ in
            names.withUnsafeBufferPointer { alSourcePlayv(Int32($0.count), $0.baseAddress) }
            try OpenALStatus.al().check("alSourcePlayv")
        }
    }

    /// Stops and deletes the sources and their buffers.
    package func delete() {
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
