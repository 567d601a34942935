/// The shape of PCM audio in Spool: a sample rate and a channel count. Samples are always
/// Float32, interleaved, in the range −1…1.
///
/// The corresponding Apple type is `AVAudioFormat` (standard, interleaved).
public struct AudioFormat: Hashable, Sendable, CustomStringConvertible {
    /// Frames per second.
    public let sampleRate: Double
    /// Samples per frame.
    public let channelCount: Int

    /// Highest channel count Spool accepts: 7.1 surround.
    public static let maximumChannelCount = 8
    /// Sample rates Spool accepts, in Hz.
    public static let sampleRateRange: ClosedRange<Double> = 1_000...768_000

    /// Makes a format.
    ///
    /// - Parameters:
    ///   - sampleRate: Frames per second, within `sampleRateRange`.
    ///   - channelCount: 1…`maximumChannelCount`.
    /// - Throws: `AudioError.Code.invalidParameter` naming the value at fault.
    public init(sampleRate: Double, channelCount: Int) throws {
        guard Self.sampleRateRange.contains(sampleRate) else {
            throw AudioError(.invalidParameter, "sample rate \(sampleRate) Hz is outside \(Self.sampleRateRange)")
        }
        guard (1...Self.maximumChannelCount).contains(channelCount) else {
            throw AudioError(.invalidParameter, "channel count \(channelCount) is outside 1...\(Self.maximumChannelCount)")
        }
        self.sampleRate = sampleRate
        self.channelCount = channelCount
    }

    /// Seconds that `frames` frames last at this rate.
    public func seconds(forFrames frames: Int) -> Double { Double(frames) / sampleRate }

    /// Whole frames that last `seconds` at this rate, rounded to the nearest frame. Saturating:
    /// a time beyond ±2^62 frames (about 3 million years at 48 kHz, and every infinity) gives
    /// ±2^62, NaN gives 0, so that a caller's clamp to the audio's end can follow; nothing traps.
    public func frames(forSeconds seconds: Double) -> Int { Int(saturating: (seconds * sampleRate).rounded()) }

    public var description: String {
        let rate = sampleRate == sampleRate.rounded() ? "\(Int(sampleRate))" : "\(sampleRate)"
        return "\(rate) Hz, \(channelCount) ch"
    }
}
