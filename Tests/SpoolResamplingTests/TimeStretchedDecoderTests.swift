import Foundation
import SpoolCore
import SpoolResampling
import Testing
import SpoolTestSupport

@Suite("TimeStretchedDecoder")
struct TimeStretchedDecoderTests {
    static let rate = 44_100.0

    @Test("a tone keeps its pitch and lasts source ÷ tempo, with no gap and its tail", arguments: [0.5, 0.75, 1.5, 2.0])
    func toneDurationAndPitch(tempo: Double) throws {
        let frames = 3 * Int(Self.rate)
        let source = try SignalDecoder(signals: [.tone(440)], frameCount: frames)
        let stretched = try TimeStretchedDecoder(wrapping: source, tempo: tempo)
        let expected = Int((Double(frames) / tempo).rounded())
        #expect(stretched.frameCount == expected)
        #expect(!stretched.isFrameCountExact)

        let (output, error) = stretched.readAll(chunkFrames: 777)
        #expect(error == nil)
        // Flushed to the frame: N / t, which is well within 1 %.
        #expect(abs(output.count - expected) <= 1, "\(output.count) frames, expected \(expected)")
        #expect(stretched.frameCount == output.count)
        #expect(stretched.position == output.count)

        let frequency = Analysis.dominantFrequency(output, sampleRate: Self.rate)
        #expect(abs(frequency - 440) / 440 < 0.01, "dominant frequency \(frequency) Hz at tempo \(tempo)")
        // A varispeed would have moved it by the tempo: make sure the measurement can tell.
        #expect(abs(frequency - 440 * tempo) > 10 || tempo == 1)

        // No block of 20 ms is quiet (a lost or zeroed chunk would be), up to the last 50 ms,
        // and the last 100 ms still carry the tone (the tail came out, not only padding).
        let block = 882
        for start in stride(from: 0, to: output.count - 2205 - block, by: block) {
            let level = Analysis.rms(output, start..<(start + block))
            #expect(level > 0.25, "block at \(start) has RMS \(level)")
            if level <= 0.25 { break }
        }
        let tail = Analysis.rms(output, (output.count - 4410)..<output.count)
        #expect(tail > 0.15, "the last 100 ms have RMS \(tail)")
    }

    @Test("stereo channels stay distinct: left 440 Hz, right 660 Hz", arguments: [0.5, 1.5])
    func stereoChannelsStayApart(tempo: Double) throws {
        let frames = 2 * Int(Self.rate)
        let source = try SignalDecoder(signals: [.tone(440), .tone(660)], frameCount: frames)
        let stretched = try TimeStretchedDecoder(wrapping: source, tempo: tempo)
        let (output, error) = stretched.readAll()
        #expect(error == nil)
        #expect(abs(output.count / 2 - Int((Double(frames) / tempo).rounded())) <= 1)
        let left = Analysis.channel(output, 0, of: 2), right = Analysis.channel(output, 1, of: 2)
        let leftFrequency = Analysis.dominantFrequency(left, sampleRate: Self.rate)
        let rightFrequency = Analysis.dominantFrequency(right, sampleRate: Self.rate)
        #expect(abs(leftFrequency - 440) / 440 < 0.01, "left \(leftFrequency) Hz")
        #expect(abs(rightFrequency - 660) / 660 < 0.01, "right \(rightFrequency) Hz")
        // Neither channel carries the other's tone (40 dB down at least).
        let leak = Analysis.magnitude(left, at: 660, sampleRate: Self.rate) / Analysis.magnitude(left, at: 440, sampleRate: Self.rate)
        let leakBack = Analysis.magnitude(right, at: 440, sampleRate: Self.rate) / Analysis.magnitude(right, at: 660, sampleRate: Self.rate)
        #expect(leak < 0.01 && leakBack < 0.01, "cross-channel leak \(leak), \(leakBack)")
    }

    /// Checks `decoder.sourceFrame(atOutputFrame:)` against where the output really came from
    /// (found by cross-correlation with the noise source), at `outputFrames` (since the seek).
    static func checkMapping(_ decoder: TimeStretchedDecoder, output: [Float], source: [Float],
                             at outputFrames: some Sequence<Int>, tolerance: Double) -> [Double] {
        var errors: [Double] = []
        for o in outputFrames where o + 128 <= output.count {
            let estimate = decoder.sourceFrame(atOutputFrame: o)
            let found = Analysis.origin(of: output, at: o, in: source, around: estimate, reach: 4000)
            // The crossfades between sequences are mixtures: take only clear matches.
            guard found.correlation > 0.95 else { continue }
            let error = Double(estimate - found.frame)
            errors.append(error)
            #expect(abs(error) <= tolerance, "output frame \(o): estimate \(estimate), playing \(found.frame)")
        }
        return errors
    }

    @Test("sourceFrame(atOutputFrame:) follows the frame playing", arguments: [0.5, 0.75, 1.5, 2.0])
    func mapsOutputToSource(tempo: Double) throws {
        let frames = 4 * Int(Self.rate)
        let source = try SignalDecoder(signals: [.noise(seed: 7)], frameCount: frames)
        let reference = source.samples(0..<frames)
        let stretched = try TimeStretchedDecoder(wrapping: source, tempo: tempo)
        let tolerance = stretched.positionToleranceFrames + 44  // + 1 ms
        #expect(stretched.positionToleranceFrames < 0.035 * Self.rate)
        let (output, error) = stretched.readAll()
        #expect(error == nil)

        // The first frames are the source itself, frame for frame.
        for o in [0, 100, 500] {
            #expect(stretched.sourceFrame(atOutputFrame: o) == o)
            #expect(Analysis.origin(of: output, at: o, in: reference, around: o, reach: 200).frame == o)
        }
        let errors = Self.checkMapping(stretched, output: output, source: reference,
                                       at: stride(from: 2000, to: output.count - 5000, by: 1531), tolerance: tolerance)
        #expect(errors.count > 20)
        // On average the estimate sits on the frame playing: the bare nominal line (output ×
        // tempo) would be off by about (1 − tempo) × half a sequence, 12 to 24 ms here.
        let mean = errors.reduce(0, +) / Double(max(1, errors.count))
        #expect(abs(mean) < 0.005 * Self.rate, "mean error \(mean) frames at tempo \(tempo)")
    }

    @Test("a tempo change mid-stream: length, and positions behind the read head, map right")
    func tempoChangeMidStream() throws {
        let frames = 5 * Int(Self.rate)
        let source = try SignalDecoder(signals: [.noise(seed: 11)], frameCount: frames)
        let reference = source.samples(0..<frames)
        let stretched = try TimeStretchedDecoder(wrapping: source, tempo: 0.75)
        var output: [Float] = []
        var buffer = [Float](repeating: 0, count: 1000)
        func read(_ count: Int) throws {
            while output.count < count {
                let got = try buffer.withUnsafeMutableBufferPointer { try stretched.read(into: $0) }
                if got == 0 { return }
                output += buffer[0..<got]
            }
        }
        try read(Int(2 * Self.rate))
        let changeAt = output.count
        let sourceAtChange = stretched.sourceFrame(atOutputFrame: changeAt)
        let toleranceOld = stretched.positionToleranceFrames + 44
        try stretched.setTempo(1.5)
        #expect(stretched.tempo == 1.5)
        // The estimate follows the new tempo: the rest of the source at 1.5.
        let estimate = stretched.frameCount
        let predicted = changeAt + Int((Double(frames - sourceAtChange) / 1.5).rounded())
        #expect(abs(estimate - predicted) < Int(0.01 * Double(predicted)))
        try read(changeAt + Int(0.2 * Self.rate))
        // 300 ms behind the read head lies before the change: still mapped at the old tempo.
        let behind = output.count - Int(0.3 * Self.rate)
        #expect(behind < changeAt)
        _ = Self.checkMapping(stretched, output: output, source: reference,
                              at: stride(from: behind - 3000, to: behind + 3000, by: 997), tolerance: toleranceOld)
        try read(.max)
        #expect(abs(output.count - predicted) < Int(0.01 * Double(predicted)), "\(output.count) frames, predicted \(predicted)")
        #expect(stretched.frameCount == output.count)
        let tolerance = stretched.positionToleranceFrames + 44
        let before = Self.checkMapping(stretched, output: output, source: reference,
                                       at: stride(from: 5000, to: changeAt - 3000, by: 1777), tolerance: toleranceOld)
        let after = Self.checkMapping(stretched, output: output, source: reference,
                                      at: stride(from: changeAt + 6000, to: output.count - 5000, by: 1777), tolerance: tolerance)
        #expect(before.count > 15 && after.count > 15)
        // After the change the source runs 1.5 frames per output frame: compare the found
        // positions 1 s apart.
        let a = changeAt + 10_000, b = a + Int(Self.rate)
        let foundA = Analysis.origin(of: output, at: a, in: reference, around: stretched.sourceFrame(atOutputFrame: a), reach: 3000)
        let foundB = Analysis.origin(of: output, at: b, in: reference, around: stretched.sourceFrame(atOutputFrame: b), reach: 3000)
        let slope = Double(foundB.frame - foundA.frame) / Double(b - a)
        #expect(abs(slope - 1.5) < 0.05, "source frames per output frame after the change: \(slope)")
    }

    @Test("a seek drops what was held and starts with the source frame sought", arguments: [0.5, 1.5])
    func seekStartsAtTheFrame(tempo: Double) throws {
        let frames = 4 * Int(Self.rate)
        let source = try SignalDecoder(signals: [.noise(seed: 3), .tone(440)], frameCount: frames)
        let stretched = try TimeStretchedDecoder(wrapping: source, tempo: tempo)
        var buffer = [Float](repeating: 0, count: 2 * 3000)
        // Read a while, so that the stretcher holds input and output from before the seek.
        for _ in 0..<20 { _ = try buffer.withUnsafeMutableBufferPointer { try stretched.read(into: $0) } }
        let target = 100_000
        try stretched.seek(toFrame: target)
        #expect(stretched.outputFramesSinceSeek == 0)
        #expect(stretched.sourceFrame(atOutputFrame: 0) == target)
        #expect(stretched.position == Int((Double(target) / tempo).rounded()))
        let (output, error) = stretched.readAll()
        #expect(error == nil)
        // The first 1000 output frames are source frames target..<target + 1000, exactly.
        var worst: Float = 0
        for i in 0..<1000 {
            worst = max(worst, abs(output[2 * i] - source.sample(target + i, channel: 0)))
            worst = max(worst, abs(output[2 * i + 1] - source.sample(target + i, channel: 1)))
        }
        #expect(worst < 1e-5, "after the seek, the output differs from the source by up to \(worst)")
        let expected = Int((Double(frames - target) / tempo).rounded())
        #expect(abs(output.count / 2 - expected) <= 1)
        #expect(stretched.frameCount == stretched.position)
        let tone = Analysis.channel(output, 1, of: 2)
        let frequency = Analysis.dominantFrequency(tone, sampleRate: Self.rate)
        #expect(abs(frequency - 440) / 440 < 0.01)

        #expect(throws: AudioError.self) { try stretched.seek(toFrame: frames + 1) }
    }

    @Test("an inner decoder's error comes after the frames decoded before it", arguments: [0.5, 2.0])
    func innerErrorPropagates(tempo: Double) throws {
        let failAt = 50_000
        let source = try SignalDecoder(signals: [.tone(440)], frameCount: 200_000, failAtFrame: failAt)
        let stretched = try TimeStretchedDecoder(wrapping: source, tempo: tempo)
        let (output, error) = stretched.readAll()
        let audioError = try #require(error as? AudioError)
        #expect(audioError.code == .corruptData)
        // Every frame decoded before the failure came out, the stretcher's tail included.
        let expected = Double(failAt) / tempo
        #expect(abs(Double(output.count) - expected) <= 1, "\(output.count) frames before the error, expected \(expected)")
        let tail = Analysis.rms(output, (output.count - 2205)..<output.count)
        #expect(tail > 0.15)
        // Again on the next read, until a seek.
        var buffer = [Float](repeating: 0, count: 100)
        #expect(throws: AudioError.self) { try buffer.withUnsafeMutableBufferPointer { try stretched.read(into: $0) } }
        try stretched.seek(toFrame: 0)
        #expect(try buffer.withUnsafeMutableBufferPointer { try stretched.read(into: $0) } == 100)
    }

    @Test("a header's absurd frame count is an estimate that neither traps nor outlives the end")
    func claimedFrameCount() throws {
        let source = try SignalDecoder(signals: [.tone(440)], frameCount: 30_000, claimedFrameCount: .max)
        let stretched = try TimeStretchedDecoder(wrapping: source, tempo: 0.5)
        #expect(stretched.frameCount > 1 << 60)
        #expect(stretched.sourceFrame(atOutputFrame: .min) == 0 && stretched.sourceFrame(atOutputFrame: .max) == 0)
        let (output, error) = stretched.readAll()
        #expect(error == nil)
        #expect(output.count == 60_000)
        #expect(stretched.frameCount == 60_000)
        #expect(stretched.sourceFrame(atOutputFrame: .max) == 30_000)
    }

    @Test("invalid tempi are refused with a clear error")
    func invalidTempo() throws {
        let source = try SignalDecoder(signals: [.tone(440)], frameCount: 1000)
        for tempo in [0.49, 2.01, 0, -1, .nan, .infinity, -.infinity] {
            let error = #expect(throws: AudioError.self) { try TimeStretchedDecoder(wrapping: source, tempo: tempo) }
            #expect(error?.code == .invalidParameter)
            #expect(error?.message.contains("tempo") == true)
        }
        let stretched = try TimeStretchedDecoder(wrapping: source, tempo: 1.25)
        for tempo in [0.1, 3, Double.nan] {
            let error = #expect(throws: AudioError.self) { try stretched.setTempo(tempo) }
            #expect(error?.code == .invalidParameter)
        }
        #expect(stretched.tempo == 1.25)
    }
}
