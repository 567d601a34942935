internal import COpenAL
import SpoolCore

/// What every Spool source sets on its OpenAL source: volume (with a ramp), pan, pitch, and
/// the mute that fades it out before a pause or a stop.
///
/// **Gain.** OpenAL Soft already glides every gain change linearly over the next mixer
/// update (at most 2 048 frames), so a step in `AL_GAIN` does not click. A longer ramp is
/// walked by the pump: at each pass `AL_GAIN` is set to the ramp's value one update ahead,
/// and OpenAL glides between, so the gain follows the ramp piecewise linearly.
///
/// **Pan.** A stereo source plays through `AL_SOFT_direct_channels`, untouched by the
/// panner (its balance is applied when its buffers are uploaded, see `SampleUpload`). A
/// mono source is placed relative to the listener where `PanCalibration` says OpenAL's panner
/// gives `PanLaw.mono`'s gains, with `AL_GAIN` scaled to match; `AL_MAX_GAIN` is raised to
/// let the scale pass 1 (it is 1.19 at the centre).
struct SourceParameters: Sendable {
    /// A linear glide of the volume on the device clock.
    struct Ramp: Sendable {
        var from: Float
        var to: Float
        var start: Int64
        var duration: Int64

        func value(at clock: Int64) -> Float {
            guard duration > 0, clock < start + duration else { return to }
            let t = Float(Double(max(0, clock - start)) / Double(duration))
            return from + (to - from) * t
        }
    }

    /// 1 for a mono source (panned), 2 for one that plays stereo through direct channels.
    let uploadedChannels: Int
    /// The voice's volume now (moving along `ramp`).
    var volume: Float = 1
    var ramp: Ramp?
    var pan: Float = 0
    var pitch: Float = 1
    /// Whether `pitch` goes to OpenAL (`AL_PITCH`): for static sources. A streaming source
    /// converts its rate itself and keeps `AL_PITCH` at 1.
    var pitchInOpenAL = true
    /// Silenced while fading out before a pause or a stop.
    var muted = false

    init(channelCount: Int) {
        uploadedChannels = SampleUpload.uploadedChannels(for: channelCount)
    }

    // MARK: Changes

    /// Starts a glide to `target` (or jumps, for no ramp), with the gain set one update ahead.
    mutating func setVolume(_ target: Float, rampSeconds: Double, clock: Int64, lookahead: Int64) {
        if rampSeconds == 0 {
            ramp = nil
            volume = target
        } else {
            ramp = Ramp(from: volume, to: target, start: clock, duration: Int64(saturating: rampSeconds * 1e9))
            advance(clock: clock, lookahead: lookahead)
        }
    }

    /// Moves the volume along its ramp to where it should be one update after `clock`.
    /// - Returns: Whether the volume changed.
    @discardableResult
    mutating func advance(clock: Int64, lookahead: Int64) -> Bool {
        guard let ramp else { return false }
        let before = volume
        volume = ramp.value(at: clock + lookahead)
        if clock + lookahead >= ramp.start + ramp.duration { self.ramp = nil }
        return volume != before
    }

    // MARK: Applying

    /// Sets everything on a freshly acquired `source`: in a batch.
    func applyAll(to source: UInt32) {
        alSourcei(source, AL_SOURCE_RELATIVE, AL_TRUE)
        alSourcef(source, AL_ROLLOFF_FACTOR, 0)
        alSourcef(source, AL_MAX_GAIN, 4)
        alSourcei(source, AL_DIRECT_CHANNELS_SOFT, uploadedChannels == 2 ? AL_TRUE : AL_FALSE)
        alSourcei(source, AL_LOOPING, AL_FALSE)
        alSourcef(source, AL_PITCH, pitchInOpenAL ? pitch : 1)
        applyGain(to: source)
    }

    /// Sets `AL_GAIN`, and for a mono source `AL_POSITION`: in a batch.
    func applyGain(to source: UInt32) {
        let silence: Float = muted ? 0 : 1
        guard uploadedChannels == 1, case .success(let calibration) = PanCalibration.shared else {
            alSource3f(source, AL_POSITION, 0, 0, -1)
            alSourcef(source, AL_GAIN, volume * silence)
            return
        }
        let place = calibration.placement(forPan: pan)
        alSource3f(source, AL_POSITION, place.x, 0, place.z)
        alSourcef(source, AL_GAIN, volume * place.gain * silence)
    }

    /// Sets `AL_PITCH`: in a batch.
    func applyPitch(to source: UInt32) {
        alSourcef(source, AL_PITCH, pitchInOpenAL ? pitch : 1)
    }
}
