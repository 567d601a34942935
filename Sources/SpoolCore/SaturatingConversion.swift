extension Int {
    /// The largest magnitude a saturating conversion gives: 2^62, so that adding two of them,
    /// or one to any real frame position, cannot overflow either.
    package static let saturationLimit = 1 << 62

    /// `value` truncated toward zero, clamped to ±`saturationLimit`; NaN is 0. For seconds,
    /// rates and sizes a caller passes in: `Int(_:)` traps on a value it cannot hold.
    package init(saturating value: Double) {
        guard !value.isNaN else {
            self = 0
            return
        }
        let limit = Double(Int.saturationLimit)
        self = Int(Swift.min(Swift.max(value, -limit), limit))
    }
}

extension Int64 {
    /// As `Int(saturating:)`, for 64-bit clock arithmetic.
    package init(saturating value: Double) { self = Int64(Int(saturating: value)) }
}
