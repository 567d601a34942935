internal import CALSA
import SpoolCore

/// Owns one open `snd_pcm_t` and closes it in `deinit`.
final class ALSAPCM: @unchecked Sendable {
    // Sendable: libasound PCM calls are not safe from two threads at once. The handle is used by
    // one thread at a time: the device's render thread while it runs, otherwise the control
    // thread holding the device's state mutex (start/stop join the render thread first).
    let handle: OpaquePointer
    /// The name it was opened with, for messages.
    let name: String

    /// What the device agreed to.
    struct Negotiated {
        var sampleRate: Double
        var channelCount: Int
        var periodFrames: Int
        var periodCount: Int
        var bufferFrames: Int
        var sampleType: PCMBuffer.SampleType
    }

    /// Opens `name` for playback (`snd_pcm_open`, `SND_PCM_STREAM_PLAYBACK`, blocking).
    /// - Throws: `AudioError.Code.deviceUnavailable`, `alsa:<name>: <snd_strerror text>`.
    init(name: String) throws {
        var pcm: OpaquePointer?
        ALSALog.install()
        let result = snd_pcm_open(&pcm, name, SND_PCM_STREAM_PLAYBACK, 0)
        guard result >= 0, let pcm else {
            let status = ALSAStatus(result)
            throw AudioError(.deviceUnavailable, "alsa:\(name): \(status.text)", underlying: status.libraryStatus)
        }
        handle = pcm
        self.name = name
    }

    deinit { snd_pcm_close(handle) }

    /// Sets the hardware and software parameters closest to `configuration`.
    /// - Throws: `AudioError.Code.deviceUnavailable` naming the parameter the device refused.
    func configure(_ configuration: OutputConfiguration) throws -> Negotiated {
        var hw: OpaquePointer?
        try check(snd_pcm_hw_params_malloc(&hw), device: name, "allocate hardware parameters", code: .libraryFailure)
        guard let hw else { throw AudioError(.libraryFailure, "alsa:\(name): cannot allocate hardware parameters") }
        defer { snd_pcm_hw_params_free(hw) }

        try check(snd_pcm_hw_params_any(handle, hw), device: name, "read the hardware parameters")
        try check(snd_pcm_hw_params_set_access(handle, hw, SND_PCM_ACCESS_RW_INTERLEAVED), device: name,
                  "use interleaved access")
        let sampleType: PCMBuffer.SampleType
        if snd_pcm_hw_params_set_format(handle, hw, SND_PCM_FORMAT_FLOAT_LE) >= 0 {
            sampleType = .float32
        } else {
            try check(snd_pcm_hw_params_set_format(handle, hw, SND_PCM_FORMAT_S16_LE), device: name,
                      "use Float32 or signed 16-bit samples")
            sampleType = .int16
        }
        var channels = UInt32(configuration.channelCount)
        try check(snd_pcm_hw_params_set_channels_near(handle, hw, &channels), device: name,
                  "use \(configuration.channelCount) channels")
        var rate = UInt32((configuration.sampleRate ?? NullDevice.defaultSampleRate).rounded())
        var direction: Int32 = 0
        try check(snd_pcm_hw_params_set_rate_near(handle, hw, &rate, &direction), device: name, "use \(rate) Hz")
        var period = snd_pcm_uframes_t(configuration.periodFrames)
        direction = 0
        try check(snd_pcm_hw_params_set_period_size_near(handle, hw, &period, &direction), device: name,
                  "use periods of \(configuration.periodFrames) frames")
        var periods = UInt32(configuration.periodCount)
        direction = 0
        if snd_pcm_hw_params_set_periods_near(handle, hw, &periods, &direction) < 0 {
            // Some plugins constrain only the buffer size: ask for P·F frames instead.
            var bufferSize = snd_pcm_uframes_t(configuration.periodCount) * period
            try check(snd_pcm_hw_params_set_buffer_size_near(handle, hw, &bufferSize), device: name,
                      "use \(configuration.periodCount) periods of \(period) frames")
        }
        try check(snd_pcm_hw_params(handle, hw), device: name, "apply the hardware parameters")

        // Read back what the device really chose.
        try check(snd_pcm_hw_params_get_channels(hw, &channels), device: name, "read the channel count")
        direction = 0
        try check(snd_pcm_hw_params_get_rate(hw, &rate, &direction), device: name, "read the sample rate")
        direction = 0
        try check(snd_pcm_hw_params_get_period_size(hw, &period, &direction), device: name, "read the period size")
        var bufferFrames: snd_pcm_uframes_t = 0
        try check(snd_pcm_hw_params_get_buffer_size(hw, &bufferFrames), device: name, "read the buffer size")
        guard period > 0, channels > 0, rate > 0 else {
            throw AudioError(.deviceUnavailable, "alsa:\(name): the device reported \(channels) channels, \(rate) Hz, periods of \(period) frames")
        }
        let negotiated = Negotiated(
            sampleRate: Double(rate), channelCount: Int(channels), periodFrames: Int(period),
            periodCount: max(1, Int(bufferFrames / period)), bufferFrames: Int(bufferFrames), sampleType: sampleType)

        var sw: OpaquePointer?
        try check(snd_pcm_sw_params_malloc(&sw), device: name, "allocate software parameters", code: .libraryFailure)
        guard let sw else { throw AudioError(.libraryFailure, "alsa:\(name): cannot allocate software parameters") }
        defer { snd_pcm_sw_params_free(sw) }
        try check(snd_pcm_sw_params_current(handle, sw), device: name, "read the software parameters")
        // Start as soon as the first period is written: the lowest start latency.
        try check(snd_pcm_sw_params_set_start_threshold(handle, sw, period), device: name, "set the start threshold")
        // Wake the render thread when one period of room is free.
        try check(snd_pcm_sw_params_set_avail_min(handle, sw, period), device: name, "set the minimum available frames")
        try check(snd_pcm_sw_params(handle, sw), device: name, "apply the software parameters")
        return negotiated
    }
}
