import CAllocationCounter
import Foundation
import SpoolCore
import SpoolResampling
import Testing
import SpoolTestSupport

@Suite("TimeStretcher")
struct TimeStretcherTests {
    /// Runs `input` (interleaved) through `stretcher` in calls of the sizes `shape` gives (input
    /// frames offered, output room), then flushes and drains.
    static func stretch(_ stretcher: TimeStretcher, _ input: [Float], shape: (Int) -> (Int, Int)) -> [Float] {
        let channels = stretcher.format.channelCount
        var output: [Float] = []
        var room = [Float](repeating: 0, count: 8192 * channels)
        var offset = 0, call = 0
        input.withUnsafeBufferPointer { all in
            while offset < input.count / channels {
                let (offer, space) = shape(call)
                call += 1
                let frames = min(offer, input.count / channels - offset)
                let slice = UnsafeBufferPointer(rebasing: all[(offset * channels)..<((offset + frames) * channels)])
                let (consumed, produced) = room.withUnsafeMutableBufferPointer { out in
                    stretcher.process(input: slice, output: UnsafeMutableBufferPointer(rebasing: out[0..<(min(space, 8192) * channels)]))
                }
                offset += consumed
                output += room[0..<(produced * channels)]
            }
        }
        stretcher.flush()
        while !stretcher.isFinished {
            let produced = room.withUnsafeMutableBufferPointer { out in
                stretcher.process(input: UnsafeBufferPointer(start: nil, count: 0), output: out).produced
            }
            output += room[0..<(produced * channels)]
            if produced == 0 { break }
        }
        return output
    }

    @Test("the output length is N / tempo whatever the call sizes", arguments: [0.5, 0.8, 1.0, 1.7, 2.0])
    func lengthIndependentOfCallShape(tempo: Double) throws {
        let format = try AudioFormat(sampleRate: 48_000, channelCount: 2)
        let frames = 70_001
        let input = (0..<(frames * 2)).map { (i: Int) -> Float in
            let phase = Double(i / 2) * 0.05 + Double(i % 2)
            return Float(0.5 * sin(phase))
        }
        let expected = Int((Double(frames) / tempo).rounded())
        var shapes: [(Int) -> (Int, Int)] = []
        shapes.append { _ in (4096, 8192) }
        shapes.append { _ in (1, 1) }
        shapes.append { call in (1 + (call * 7919) % 3000, 1 + (call * 104_729) % 5000) }
        for shape in shapes {
            let stretcher = try TimeStretcher(format: format, tempo: tempo)
            let output = Self.stretch(stretcher, input, shape: shape)
            #expect(output.count / 2 == expected, "\(output.count / 2) frames, expected \(expected)")
            #expect(stretcher.inputFrames == frames)
            #expect(stretcher.outputFrames == expected)
            #expect(stretcher.isFinished)
        }
    }

    @Test("the first output comes after latencyFrames of input")
    func latency() throws {
        for tempo in [0.5, 1.0, 2.0] {
            let format = try AudioFormat(sampleRate: 44_100, channelCount: 1)
            let stretcher = try TimeStretcher(format: format, tempo: tempo)
            // About 100 ms: SoundTouch needs a sequence and a seek window.
            #expect((3000...6000).contains(stretcher.latencyFrames), "latency \(stretcher.latencyFrames) at tempo \(tempo)")
            let input = [Float](repeating: 0.25, count: 64)
            var output = [Float](repeating: 0, count: 64)
            var fed = 0
            while fed < 20_000 {
                let (consumed, produced) = input.withUnsafeBufferPointer { i in
                    output.withUnsafeMutableBufferPointer { stretcher.process(input: i, output: $0) }
                }
                fed += consumed
                if produced > 0 { break }
            }
            #expect(abs(fed - stretcher.latencyFrames) <= 64, "first output after \(fed) frames at tempo \(tempo), latency \(stretcher.latencyFrames)")
            #expect(stretcher.bufferedInputFrames < stretcher.latencyFrames)
        }
    }

    @Test("every channel count 1…8 keeps its channels and their pitch")
    func channelCounts() throws {
        for channels in 1...8 {
            let format = try AudioFormat(sampleRate: 44_100, channelCount: channels)
            let stretcher = try TimeStretcher(format: format, tempo: 1.5)
            let frames = 44_100
            // Harmonics of 150 Hz, one per channel: a seam that suits one channel suits all
            // (with unrelated tones on seven or eight channels, no single seam can, and the
            // lowest one's spectral peak moves by about 1 %).
            let tones = (0..<channels).map { 150 * Double($0 + 2) }
            var input = [Float](repeating: 0, count: frames * channels)
            for f in 0..<frames {
                for c in 0..<channels { input[f * channels + c] = Float(0.5 * sin(2 * Double.pi * tones[c] * Double(f) / 44_100)) }
            }
            let output = Self.stretch(stretcher, input) { _ in (2000, 2000) }
            #expect(output.count / channels == Int((Double(frames) / 1.5).rounded()))
            for c in 0..<channels {
                let frequency = Analysis.dominantFrequency(Analysis.channel(output, c, of: channels), sampleRate: 44_100,
                                                           in: 250...1400)
                #expect(abs(frequency - tones[c]) / tones[c] < 0.01, "\(channels) channels: channel \(c) at \(frequency) Hz, expected \(tones[c])")
            }
        }
    }

    @Test("low and high sample rates keep pitch and length", arguments: [8_000.0, 96_000.0])
    func sampleRates(rate: Double) throws {
        let format = try AudioFormat(sampleRate: rate, channelCount: 1)
        let stretcher = try TimeStretcher(format: format, tempo: 0.75)
        let frames = Int(rate * 2)
        let input = (0..<frames).map { Float(0.5 * sin(2 * Double.pi * 440 * Double($0) / rate)) }
        let output = Self.stretch(stretcher, input) { _ in (1000, 3000) }
        #expect(output.count == Int((Double(frames) / 0.75).rounded()))
        let frequency = Analysis.dominantFrequency(output, sampleRate: rate)
        #expect(abs(frequency - 440) / 440 < 0.01, "\(frequency) Hz at \(rate) Hz")
    }

    @Test("reset drops everything held and starts a new stream")
    func resetDropsHeldAudio() throws {
        let format = try AudioFormat(sampleRate: 44_100, channelCount: 1)
        let stretcher = try TimeStretcher(format: format, tempo: 0.5)
        let loud = [Float](repeating: 0.9, count: 20_000)
        var room = [Float](repeating: 0, count: 1000)
        // Offer much input with little room: SoundTouch holds input and output.
        _ = loud.withUnsafeBufferPointer { i in room.withUnsafeMutableBufferPointer { stretcher.process(input: i, output: $0) } }
        #expect(stretcher.bufferedInputFrames > 0)
        stretcher.reset()
        #expect(stretcher.inputFrames == 0 && stretcher.outputFrames == 0 && stretcher.bufferedInputFrames == 0)
        let ramp = (0..<20_000).map { Float($0) / 40_000 }
        let output = Self.stretch(stretcher, ramp) { _ in (500, 500) }
        #expect(output.count == 40_000)
        // Nothing of the 0.9 comes back; the new stream starts at its own first frame.
        #expect(output.allSatisfy { $0 < 0.51 })
        #expect(output.prefix(1000).enumerated().allSatisfy { abs($0.element - ramp[$0.offset]) < 1e-6 })
    }

    @Test("process, setTempo and reset do not allocate after init")
    func realTimeSafe() throws {
        let format = try AudioFormat(sampleRate: 44_100, channelCount: 2)
        let stretcher = try TimeStretcher(format: format, tempo: 1)
        let input = (0..<(2 * 50_000)).map { Float(sin(Double($0) * 0.01)) * 0.5 }
        var output = [Float](repeating: 0, count: 2 * 6000)
        let tempi = [1.0, 0.5, 1.3, 2.0, 0.77, 1.0, 1.9, 0.5]
        var state: UInt64 = 42
        var allocations: UInt64 = 0
        var produced = 0
        input.withUnsafeBufferPointer { all in
            output.withUnsafeMutableBufferPointer { out in
                // One pass of every call first, uncounted: the Swift runtime makes the metadata
                // of a generic type (a slice, a rebased pointer) the first time the process uses
                // it, which allocates once, and whether another test got there first depends on
                // the order the suite runs in.
                try? stretcher.setTempo(1.5)
                _ = stretcher.process(input: UnsafeBufferPointer(rebasing: all[0..<2048]),
                                      output: UnsafeMutableBufferPointer(rebasing: out[0..<2048]))
                _ = stretcher.sourcePosition(atOutputFrame: stretcher.outputFrames)
                stretcher.flush()
                while !stretcher.isFinished {
                    _ = stretcher.process(input: UnsafeBufferPointer(start: nil, count: 0),
                                          output: UnsafeMutableBufferPointer(rebasing: out[0..<2000]))
                }
                stretcher.reset()
                spool_allocation_counting_begin()
                for round in 0..<tempi.count {
                    try? stretcher.setTempo(tempi[round])
                    var offset = 0
                    while offset < 50_000 {
                        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                        let offer = 1 + Int(state >> 52)           // 1…4096 frames
                        let room = 1 + Int((state >> 20) & 4095)    // 1…4096 frames
                        let frames = min(offer, 50_000 - offset)
                        let (consumed, made) = stretcher.process(
                            input: UnsafeBufferPointer(rebasing: all[(offset * 2)..<((offset + frames) * 2)]),
                            output: UnsafeMutableBufferPointer(rebasing: out[0..<(room * 2)]))
                        offset += consumed
                        produced += made
                        if round % 3 == 1, offset > 25_000 { try? stretcher.setTempo(tempi[(round + 3) % tempi.count]) }
                        _ = stretcher.sourcePosition(atOutputFrame: stretcher.outputFrames)
                    }
                    if round % 2 == 0 {
                        stretcher.flush()
                        while !stretcher.isFinished {
                            produced += stretcher.process(input: UnsafeBufferPointer(start: nil, count: 0),
                                                          output: UnsafeMutableBufferPointer(rebasing: out[0..<2000])).produced
                        }
                    }
                    stretcher.reset()
                }
                allocations = spool_allocation_counting_end()
            }
        }
        #expect(produced > 300_000)
        #expect(allocations == 0, "\(allocations) allocations in process/setTempo/flush/reset")
    }

    @Test("invalid tempi and settings are refused with a clear error")
    func invalidParameters() throws {
        let format = try AudioFormat(sampleRate: 44_100, channelCount: 2)
        for tempo in [0.4999, 2.0001, 0, -0.5, .nan, .infinity] {
            let error = #expect(throws: AudioError.self) { try TimeStretcher(format: format, tempo: tempo) }
            #expect(error?.code == .invalidParameter)
            #expect(error?.message.contains("tempo") == true, "\(String(describing: error))")
        }
        let stretcher = try TimeStretcher(format: format, tempo: 0.5)
        let error = #expect(throws: AudioError.self) { try stretcher.setTempo(.nan) }
        #expect(error?.code == .invalidParameter)
        #expect(stretcher.tempo == 0.5)
        try stretcher.setTempo(2)
        #expect(stretcher.tempo == 2)
        let bad: [TimeStretcher.Settings] = [
            .init(sequenceMilliseconds: 5), .init(seekWindowMilliseconds: 500), .init(overlapMilliseconds: 0),
            .init(sequenceMilliseconds: 20, overlapMilliseconds: 12),
        ]
        for settings in bad {
            let error = #expect(throws: AudioError.self) { try TimeStretcher(format: format, settings: settings) }
            #expect(error?.code == .invalidParameter)
        }
        let custom = try TimeStretcher(format: format, settings: .init(sequenceMilliseconds: 60, seekWindowMilliseconds: 12, quickSeek: true))
        #expect(custom.settings.sequenceMilliseconds == 60)
    }
}
