/// The pan law every Spool back-end uses, for mono and stereo sources alike: a balance law.
///
/// At the centre both channels play at unity, as an Audio Queue or `AVAudioPlayer` plays a
/// mono file (on both channels, at full level). Off centre the near side stays at unity and
/// the far side is attenuated by cos(|p|·π/2): at p = ±0.5 it plays at −3 dB, hard to one side
/// it is silent. A mono source therefore loses 3 dB of power from the centre to a side (a
/// constant-power law would instead play the centre at −3 dB on each channel).
public enum PanLaw {
    /// Left and right gains for a mono source at `pan` (clamped to −1…1).
    public static func mono(_ pan: Float) -> (left: Float, right: Float) { balance(pan) }

    /// Left and right gains for a stereo source balanced to `pan` (clamped to −1…1).
    public static func stereo(_ pan: Float) -> (left: Float, right: Float) { balance(pan) }

    private static func balance(_ pan: Float) -> (left: Float, right: Float) {
        let p = min(1, max(-1, pan))
        if p == 0 { return (1, 1) }
        if p < 0 { return (1, farGain(-p)) }
        return (farGain(p), 1)
    }

    /// The far side's gain when balanced by `amount` (0…1): cos of a quarter turn scaled,
    /// 1 at the centre and 0 hard to the other side.
    private static func farGain(_ amount: Float) -> Float { amount >= 1 ? 0 : cos(amount * Float.pi / 2) }
}

#if canImport(Glibc)
import Glibc
#endif
