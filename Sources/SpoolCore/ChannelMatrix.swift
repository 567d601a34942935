/// How a source's channels map onto an output's, as an `output × source` gain matrix, shared
/// by both back-ends so that they agree: mono feeds both front channels (a pan law then sets
/// their balance); stereo to mono averages; 5.1/7.1 fold down to stereo with the ITU-R BS.775
/// coefficients (centre and surrounds at −3 dB, LFE dropped), normalised so that full scale
/// on every channel cannot exceed full scale on either side; fewer channels than the output
/// fill the first ones. Channels are in WAV order: L R C LFE BL BR SL SR.
public enum ChannelMatrix {
    /// Writes the `outputs × inputs` matrix, row by output channel, into `m`.
    ///
    /// - Parameters:
    ///   - m: Room for `inputs × outputs` gains; every entry is written.
    ///   - q: Source channels.
    ///   - c: Output channels.
    public static func fill(_ m: UnsafeMutablePointer<Float>, from q: Int, to c: Int) {
        m.update(repeating: 0, count: q * c)
        for (output, input, gain) in entries(from: q, to: c) { m[output * q + input] = gain }
    }

    /// The non-zero gains of the matrix, as (output channel, source channel, gain).
    public static func entries(from q: Int, to c: Int) -> [(output: Int, input: Int, gain: Float)] {
        var result: [(output: Int, input: Int, gain: Float)] = []
        func set(_ out: Int, _ inp: Int, _ g: Float) { if out < c, inp < q { result.append((out, inp, g)) } }
        switch (q, c) {
        case (1, _):
            set(0, 0, 1)
            set(1, 0, 1)
        case (2, 1):
            set(0, 0, 0.5)
            set(0, 1, 0.5)
        case (_, 2) where q > 2:
            let minus3dB: Float = 0.707_106_77
            var left: [(Int, Float)] = [(0, 1), (2, minus3dB)]
            var right: [(Int, Float)] = [(1, 1), (2, minus3dB)]
            if q >= 5 { left.append((4, minus3dB)); right.append((5, minus3dB)) }
            if q >= 7 { left.append((6, minus3dB)); right.append((7, minus3dB)) }
            let norm = 1 / left.reduce(0) { $0 + ($1.0 < q ? $1.1 : 0) }
            for (ch, g) in left { set(0, ch, g * norm) }
            for (ch, g) in right { set(1, ch, g * norm) }
        default:
            for ch in 0..<min(q, c) { set(ch, ch, 1) }
        }
        return result
    }
}
