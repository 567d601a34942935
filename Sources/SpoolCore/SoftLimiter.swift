import Foundation

/// A soft limiter for a mix: what keeps overlapping sounds from passing full scale, where a
/// device would clip them. Stateless, sample by sample, so it allocates nothing, keeps nothing
/// and adds no latency, and a render thread may run it.
///
/// A sample whose magnitude is at or below `threshold` (−1 dBFS) passes bit for bit, so a mix
/// that stays below it renders exactly as with no limiter. Above it a knee bends the sample
/// towards full scale: `threshold + (1 − threshold) · tanh((|x| − threshold) / (1 − threshold))`,
/// which meets the straight line with the same slope at the threshold (no corner to hear) and
/// never reaches past 1.
///
/// The corresponding OpenAL Soft setting is `ALC_OUTPUT_LIMITER_SOFT` (a look-ahead
/// compressor, which the OpenAL back-end uses on a sound server).
public enum SoftLimiter {
    /// Where the knee begins: −1 dBFS (10^(−1/20)).
    public static let threshold: Float = 0.891_250_94

    /// The headroom the knee bends into: exact in Float (Sterbenz), so the knee ends at 1.
    private static let headroom: Float = 1 - threshold

    /// The limited value of one sample; NaN stays NaN, ±infinity becomes ±1.
    ///
    /// - Parameter sample: A sample of the mix.
    /// - Returns: The sample itself at or below the threshold, the knee's value above it.
    @inlinable
    public static func limit(_ sample: Float) -> Float {
        let magnitude = abs(sample)
        guard magnitude > threshold else { return sample }
        return kneed(sample, magnitude)
    }

    @usableFromInline
    static func kneed(_ sample: Float, _ magnitude: Float) -> Float {
        let bent = min(1, threshold + headroom * tanh((magnitude - threshold) / headroom))
        return sample < 0 ? -bent : bent
    }

    /// Limits `count` samples in place, without allocating or locking.
    ///
    /// - Parameters:
    ///   - samples: The mix, interleaved or not.
    ///   - count: Samples (not frames) to limit.
    public static func process(_ samples: UnsafeMutablePointer<Float>, count: Int) {
        for i in 0..<count where abs(samples[i]) > threshold {
            samples[i] = kneed(samples[i], abs(samples[i]))
        }
    }
}
