internal import COpenAL
import SpoolCore

/// Copies a `PCMBuffer` into an OpenAL buffer (`alBufferData`), Float32 through
/// `AL_EXT_FLOAT32`: mono as `AL_FORMAT_MONO_FLOAT32`, everything else as
/// `AL_FORMAT_STEREO_FLOAT32`.
///
/// More than two channels are folded down to stereo here, with the buffer-queue back-end's
/// coefficients (ITU-R BS.775: centre and surrounds at −3 dB, LFE dropped, normalised so
/// full scale on every channel stays within full scale). OpenAL Soft's own 5.1/7.1 formats
/// (`AL_EXT_MCFORMATS`) would not agree with it: played through direct channels on a
/// stereo device it drops every channel but front left and right, and panned it places each
/// channel with its own (not constant-power) panner.
///
/// A stereo buffer can be balanced on the way (`PanLaw.stereo`): OpenAL has no per-channel
/// gain, and a stereo source plays through `AL_SOFT_direct_channels` untouched.
struct SampleUpload {
    /// What OpenAL receives for a buffer of `channelCount` channels: 1 or 2.
    static func uploadedChannels(for channelCount: Int) -> Int { channelCount == 1 ? 1 : 2 }

    /// Reused between uploads so that converting does not allocate each time.
    private var scratch: [Float] = []

    /// Uploads `buffer` into the OpenAL buffer `name`, in a batch.
    /// - Parameters:
    ///   - buffer: Audio of any channel count, at a whole-number rate.
    ///   - name: An OpenAL buffer not queued on any source.
    ///   - balance: For stereo, the `PanLaw.stereo` position to apply; ignored otherwise.
    /// - Throws: The AL error of `alBufferData`.
    mutating func upload(_ buffer: PCMBuffer, into name: UInt32, balance: Float = 0) throws {
        try buffer.withUnsafeSamples { samples in
            try upload(samples, channels: buffer.format.channelCount, rate: buffer.format.sampleRate, into: name,
                       balance: balance)
        }
    }

    /// Uploads interleaved `samples` of `channels` channels at `rate` into the OpenAL buffer
    /// `name`, in a batch.
    /// - Parameters:
    ///   - samples: Whole frames.
    ///   - channels: Their channel count.
    ///   - rate: Their sample rate, a whole number.
    ///   - name: An OpenAL buffer not queued on any source.
    ///   - balance: For stereo, the `PanLaw.stereo` position to apply; ignored otherwise.
    /// - Throws: The AL error of `alBufferData`.
    mutating func upload(_ samples: UnsafeBufferPointer<Float>, channels: Int, rate sampleRate: Double, into name: UInt32,
                         balance: Float = 0) throws {
        let rate = Int32(sampleRate)
        let frames = samples.count / channels
        switch channels {
        case 1:
            alBufferData(name, AL_FORMAT_MONO_FLOAT32, samples.baseAddress, Int32(frames * 4), rate)
        case 2 where balance == 0:
            alBufferData(name, AL_FORMAT_STEREO_FLOAT32, samples.baseAddress, Int32(frames * 8), rate)
        default:
            if scratch.count < frames * 2 { scratch = [Float](repeating: 0, count: frames * 2) }
            scratch.withUnsafeMutableBufferPointer { out in
                if channels == 2 {
                    let (left, right) = PanLaw.stereo(balance)
                    for i in 0..<frames {
                        out[2 * i] = samples[2 * i] * left
                        out[2 * i + 1] = samples[2 * i + 1] * right
                    }
                } else {
                    Self.foldDown(samples, channels: channels, frames: frames, into: out)
                }
                alBufferData(name, AL_FORMAT_STEREO_FLOAT32, out.baseAddress, Int32(frames * 8), rate)
            }
        }
        try OpenALStatus.al().check("alBufferData for \(frames) frames of \(channels) channels at \(rate) Hz")
    }

    /// Folds `channels` (WAV order) down to stereo with the coefficients the buffer queue's
    /// mixer uses (`ChannelMatrix`), so both back-ends render the same thing.
    private static func foldDown(_ samples: UnsafeBufferPointer<Float>, channels q: Int, frames: Int,
                                 into out: UnsafeMutableBufferPointer<Float>) {
        let gains = ChannelMatrix.entries(from: q, to: 2)
        let left = gains.filter { $0.output == 0 }, right = gains.filter { $0.output == 1 }
        for i in 0..<frames {
            let frame = i * q
            var l: Float = 0, r: Float = 0
            for entry in left { l += entry.gain * samples[frame + entry.input] }
            for entry in right { r += entry.gain * samples[frame + entry.input] }
            out[2 * i] = l
            out[2 * i + 1] = r
        }
    }
}
