/// The pan law every Spool back-end uses for a mono source placed in a stereo field:
/// constant power, −3 dB at the centre. A pan `p` in −1…1 maps to the angle
/// θ = (p + 1)·π/4, left gain cos θ and right gain sin θ, so left² + right² = 1 everywhere.
/// Stereo sources are balanced instead: the far side is attenuated by the same law, the near
/// side stays at unity, and the centre leaves both untouched.
public enum PanLaw {
    /// Left and right gains for a mono source at `pan`.
    public static func mono(_ pan: Float) -> (left: Float, right: Float) {
        let p = min(1, max(-1, pan))
        let theta = (p + 1) * Float.pi / 4
        return (cos(theta), sin(theta))
    }

    /// Left and right gains for a stereo source balanced to `pan`.
    public static func stereo(_ pan: Float) -> (left: Float, right: Float) {
        let p = min(1, max(-1, pan))
        if p <= 0 { return (1, Self.farGain(-p)) }
        return (Self.farGain(p), 1)
    }

    /// The far side's gain when balanced by `amount` (0…1): cos of a quarter turn scaled,
    /// 1 at the centre and 0 hard to the other side.
    private static func farGain(_ amount: Float) -> Float { cos(amount * Float.pi / 2) }
}

#if canImport(Glibc)
import Glibc
#endif
