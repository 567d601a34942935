extension Array where Element == Float {
    /// Appends `count` samples that `body` writes in place: one growth and a loop the
    /// compiler can vectorise, where an `append` per sample checks capacity and uniqueness
    /// each time. `body` must write every sample it is given (they start as 0).
    @inline(__always)
    mutating func appendSamples(_ count: Int, _ body: (UnsafeMutableBufferPointer<Float>) -> Void) {
        guard count > 0 else { return }
        let start = self.count
        append(contentsOf: repeatElement(0, count: count))
        withUnsafeMutableBufferPointer { all in body(UnsafeMutableBufferPointer(rebasing: all[start...])) }
    }
}
