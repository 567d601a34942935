import Foundation
import SpoolCore

/// Per-channel peak and energy of a stream, in blocks of `blockFrames`, kept for the most
/// recent blocks: what `AudioPlayer`'s meters read.
///
/// The feeding thread adds frames as it sends them to the voice (ahead of playback); the
/// player reads the blocks just before the frame being played. Indexes are stream frames:
/// frames sent since the last seek, loops included. Blocks lie on the source's 256-frame grid
/// whatever frame a seek landed on (the stream starts `phase` frames into its first block),
/// so a window after a seek is the one a play from the start would measure, and each block
/// averages over the frames it was given.
struct PowerMeter: Sendable {
    /// Frames per block: 256, about 5 ms, the meters' time resolution.
    static let blockFrames = 256
    /// Blocks kept: 2048, about 11 s at 48 kHz, well beyond how far feeding runs ahead.
    static let capacity = 2048

    let channels: Int
    private var peaks: [Float]
    private var energies: [Double]
    /// The stream block each ring slot holds, −1 for none, and the frames it was given.
    private var blockOfSlot: [Int]
    private var framesOfSlot: [Int]
    /// Frames added since the last reset.
    private(set) var framesAdded = 0
    /// Where stream frame 0 lies in its block: the seek's source frame modulo `blockFrames`.
    private var phase = 0

    init(channels: Int) {
        self.channels = channels
        peaks = [Float](repeating: 0, count: channels * Self.capacity)
        energies = [Double](repeating: 0, count: channels * Self.capacity)
        blockOfSlot = [Int](repeating: -1, count: Self.capacity)
        framesOfSlot = [Int](repeating: 0, count: Self.capacity)
    }

    /// Forgets every block (a seek): stream frames count from 0 again, starting at source
    /// frame `sourceFrame`.
    mutating func reset(atSourceFrame sourceFrame: Int = 0) {
        for i in blockOfSlot.indices { blockOfSlot[i] = -1 }
        framesAdded = 0
        phase = sourceFrame % Self.blockFrames
    }

    /// Adds the next `frames` interleaved frames of the stream.
    mutating func add(_ samples: UnsafeBufferPointer<Float>, frames: Int) {
        guard let base = samples.baseAddress else { return }
        var frame = 0
        while frame < frames {
            let position = framesAdded + phase
            let block = position / Self.blockFrames
            let slot = block % Self.capacity
            if blockOfSlot[slot] != block {
                blockOfSlot[slot] = block
                framesOfSlot[slot] = 0
                for c in 0..<channels {
                    peaks[slot * channels + c] = 0
                    energies[slot * channels + c] = 0
                }
            }
            let inBlock = min(frames - frame, Self.blockFrames - position % Self.blockFrames)
            framesOfSlot[slot] += inBlock
            for c in 0..<channels {
                var peak = peaks[slot * channels + c]
                var energy = energies[slot * channels + c]
                var p = base + frame * channels + c
                for _ in 0..<inBlock {
                    let v = p.pointee
                    peak = max(peak, abs(v))
                    energy += Double(v) * Double(v)
                    p += channels
                }
                peaks[slot * channels + c] = peak
                energies[slot * channels + c] = energy
            }
            frame += inBlock
            framesAdded += inBlock
        }
    }

    /// The power of `channel` over the `blocks` whole blocks of the grid that end at or before
    /// stream frame `frame`, from the frames they were given since the last reset: average
    /// power from the mean square, peak from the largest magnitude, both in dBFS (see
    /// `AudioPlayer.averagePower(forChannel:)`). A block of the window not kept counts as
    /// silence.
    func power(channel: Int, endingAt frame: Int, blocks: Int) -> (average: Float, peak: Float) {
        let last = (frame + phase) / Self.blockFrames - 1
        guard last >= 0, blocks > 0 else { return (Self.silence, Self.silence) }
        var energy = 0.0, peak: Float = 0, counted = 0
        for block in max(0, last - blocks + 1)...last {
            let slot = block % Self.capacity
            guard blockOfSlot[slot] == block else {
                counted += Self.blockFrames
                continue
            }
            counted += framesOfSlot[slot]
            energy += energies[slot * channels + channel]
            peak = max(peak, peaks[slot * channels + channel])
        }
        guard counted > 0 else { return (Self.silence, Self.silence) }
        return (Self.decibels(power: energy / Double(counted)), Self.decibels(amplitude: peak))
    }

    /// What the meters read for silence, as in AVAudioPlayer.
    static let silence: Float = -160

    /// 10·log10 of a mean square, clamped to −160…0.
    static func decibels(power: Double) -> Float {
        guard power > 0 else { return silence }
        return Float(min(0, max(Double(silence), 10 * log10(power))))
    }

    /// 20·log10 of a magnitude, clamped to −160…0.
    static func decibels(amplitude: Float) -> Float {
        guard amplitude > 0 else { return silence }
        return min(0, max(silence, 20 * log10(amplitude)))
    }
}
