/// The ranges a voice's volume, pan and playback rate take, checked here once for both
/// back-ends before either sees a value (as cubeb checks parameters before its back-ends), so
/// that a value refused on one is refused on the other with the same words.
public enum VoiceParameters {
    /// Gain, 0 (silent) … 1 (unity). The corresponding Apple parameter is `kAudioQueueParam_Volume`.
    public static let volume: ClosedRange<Float> = 0...1
    /// Stereo position, −1 (left) … 1 (right). The corresponding Apple parameter is `kAudioQueueParam_Pan`.
    public static let pan: ClosedRange<Float> = -1...1
    /// Varispeed rate, 0.5 … 2. The corresponding Apple parameter is `kAudioQueueParam_PlayRate`.
    public static let playbackRate: ClosedRange<Float> = 0.5...2
    /// Seconds both back-ends fade over when a voice pauses, stops or resumes, and the
    /// shortest volume ramp: 5 ms, long enough not to click, short enough that pause and stop
    /// feel immediate.
    public static let declickSeconds = 0.005

    /// `declickSeconds` in whole frames at `sampleRate` (at least 1): 240 at 48 kHz, 220 at 44.1 kHz.
    package static func declickFrames(atRate sampleRate: Double) -> Int { max(1, Int(sampleRate * declickSeconds)) }

    /// Checks a volume and the seconds of its ramp.
    /// - Throws: `AudioError.Code.invalidParameter` naming the value: a volume outside
    ///   `volume` (NaN included), a ramp that is negative or not finite.
    package static func checkVolume(_ value: Float, rampSeconds: Double) throws {
        guard volume.contains(value) else { throw AudioError(.invalidParameter, "volume \(value) is outside 0...1") }
        guard rampSeconds >= 0, rampSeconds.isFinite else {
            throw AudioError(.invalidParameter, "ramp time \(rampSeconds) s must be a finite time ≥ 0")
        }
    }

    /// Checks a pan position.
    /// - Throws: `AudioError.Code.invalidParameter` outside `pan` (NaN included).
    package static func checkPan(_ value: Float) throws {
        guard pan.contains(value) else { throw AudioError(.invalidParameter, "pan \(value) is outside -1...1") }
    }

    /// Checks a playback rate.
    /// - Throws: `AudioError.Code.invalidParameter` outside `playbackRate` (NaN included).
    package static func checkPlaybackRate(_ value: Float) throws {
        guard playbackRate.contains(value) else {
            throw AudioError(.invalidParameter, "playback rate \(value) is outside 0.5...2")
        }
    }
}
