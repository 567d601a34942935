/// A conversion ratio as two whole numbers, `output` frames per `input` frames: the form
/// libspeexdsp and libswresample take it in (they step through the input in exact rational
/// increments, so the time mapping stays exact over any length).
struct RateFraction: Equatable, CustomStringConvertible {
    /// Output frames per `input` input frames.
    let output: Int
    /// Input frames per `output` output frames.
    let input: Int

    /// The largest numerator or denominator made: both libraries keep them in 32 bits and
    /// multiply them by frame counts and filter lengths, so they stay far below that.
    static let largestTerm = 1 << 20

    /// The simplest fraction within one part in 10¹² of `ratio` (a continued-fraction
    /// convergent), or the closest one with terms up to `largestTerm`: 48000/44100 gives
    /// 160/147.
    /// - Parameter ratio: Output frames per input frame; finite and positive.
    /// - Returns: `nil` when `ratio` is not finite and positive, or no fraction within
    ///   `largestTerm` comes within one part in 10⁵ of it (a pitch error of 0.02 cent; the
    ///   closest one always does for ratios within `RateConverterKind.supportedRatios`).
    init?(approximating ratio: Double) {
        guard ratio.isFinite, ratio > 0 else { return nil }
        // Convergents h/k: h₋₂ = 0, h₋₁ = 1, k₋₂ = 1, k₋₁ = 0.
        var (h0, h1, k0, k1) = (0, 1, 1, 0)
        var x = ratio
        for _ in 0..<64 {
            let whole = x.rounded(.down)
            guard whole < Double(Self.largestTerm) else { break }
            let a = Int(whole)
            let h2 = a * h1 + h0, k2 = a * k1 + k0
            guard h2 <= Self.largestTerm, k2 <= Self.largestTerm else { break }
            (h0, h1, k0, k1) = (h1, h2, k1, k2)
            if abs(Double(h1) / Double(k1) - ratio) <= ratio * 1e-12 { break }
            let rest = x - whole
            guard rest > 1e-15 else { break }
            x = 1 / rest
        }
        guard h1 > 0, k1 > 0, abs(Double(h1) / Double(k1) - ratio) <= ratio * 1e-5 else { return nil }
        output = h1
        input = k1
    }

    /// Output frames per input frame.
    var ratio: Double { Double(output) / Double(input) }

    /// Output frames whose input instant (`k × input / output`) lies before input frame
    /// `inputFrames`: ⌈inputFrames × output / input⌉, the length a converter owes for that input.
    func outputFrames(forInputFrames inputFrames: Int) -> Int {
        let frames = max(0, inputFrames)
        let (product, overflow) = frames.multipliedReportingOverflow(by: output)
        guard !overflow else { return Int(min((Double(frames) * ratio).rounded(.up), 9e18)) }
        return product / input + (product % input > 0 ? 1 : 0)
    }

    var description: String { "\(output)/\(input)" }
}
