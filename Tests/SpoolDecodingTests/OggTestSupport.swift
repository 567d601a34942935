// Helpers shared by the Ogg and Vorbis test suites.

/// A small deterministic generator (SplitMix64) so that random inputs repeat from run to run.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// `count` pseudo-random bytes.
    static func bytes(_ count: Int, seed: UInt64) -> [UInt8] {
        var generator = SeededGenerator(seed: seed)
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            var i = 0
            while i < count {
                var word = generator.next()
                for _ in 0..<min(8, count - i) {
                    buffer[i] = UInt8(truncatingIfNeeded: word)
                    word >>= 8
                    i += 1
                }
            }
            initialized = count
        }
    }
}
