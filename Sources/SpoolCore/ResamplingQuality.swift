/// How carefully a voice's audio is converted to the device rate: the trade between the CPU a
/// converted voice costs and how clean it sounds. Chosen per engine (the default for its
/// queues) and per voice; a voice at the device's rate is not converted at any level.
///
/// The converters come from the table `spool bench resample` measures (libsoxr,
/// libswresample, libsamplerate, libspeexdsp and Spool's own windowed sinc on 44.1 ↔ 48,
/// 22.05, 32 and 16 → 48 kHz):
///
/// | level | playback rate 1 | varispeed | SNR (worst conversion) | OpenAL Soft peer |
/// | --- | --- | --- | --- | --- |
/// | `fast` | libswresample, 16 taps | Spool windowed sinc, 32 frames | ≥ 97 dB at 1 kHz, ≥ 52 dB near the top of the band | linear (its default) |
/// | `balanced` | libswresample, 32 taps, cutoff 0.85 | Spool windowed sinc, 40 frames | ≥ 91 dB | 11th-order sinc (bsinc12) |
/// | `high` | libsoxr HQ | Spool windowed sinc, 64 frames | ≥ 95 dB, aliasing ≤ −133 dB | 23rd-order sinc (bsinc24) |
///
/// `high` is the default: it is the only level that keeps both aliasing and imaging below
/// −90 dB at every conversion, so a file sounds the same on every output, and a voice at it
/// still costs little (libsoxr HQ converts about 40 million stereo frames a second on one
/// core, some 900 voices' worth). `fast` and `balanced` are for programs that mix many
/// converted voices at once (games, sound effects).
public enum ResamplingQuality: String, Sendable, CaseIterable, CustomStringConvertible {
    case fast
    case balanced
    case high

    /// The level voices get unless told otherwise.
    public static let `default` = ResamplingQuality.high

    public var description: String { rawValue }
}
