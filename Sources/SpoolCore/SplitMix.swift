/// A small seedable random source (SplitMix64): the same seed gives the same numbers, for
/// shuffles a program wants to repeat and benchmarks that vary timing alike on every run.
package struct SplitMix: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// Starts the sequence at `seed`.
    package init(seed: UInt64) { state = seed }

    /// The next 64 random bits.
    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in 0..<1.
    package mutating func nextUnit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}
