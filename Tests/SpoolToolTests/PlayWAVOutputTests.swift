import Foundation
import Spool
import Testing
import SpoolTestSupport

/// `spool play --output wav:PATH`: the player rendered offline, compared frame for frame with
/// what the decoder itself decodes.
@Suite("spool play --output wav:")
struct PlayWAVOutputTests {
    private struct Rendered {
        let result: Tool.Result
        let buffer: PCMBuffer
    }

    private func render(_ files: [String], _ options: [String] = []) throws -> Rendered {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("spool-play-wav-\(UUID()).wav").path
        defer { try? FileManager.default.removeItem(atPath: output) }
        let result = try Tool.run(["play"] + files + ["--output", "wav:\(output)"] + options)
        let buffer = try DecoderRegistry.shared.open(path: output).decodeAll()
        return Rendered(result: result, buffer: buffer)
    }

    /// Channel `channel` of `samples`, interleaved with `channels` channels.
    private func channel(_ samples: ArraySlice<Float>, _ channel: Int, of channels: Int) -> [Float] {
        stride(from: samples.startIndex + channel, to: samples.endIndex, by: channels).map { samples[$0] }
    }

    /// Signal to error in dB; infinite when they are equal.
    private func snr(_ actual: [Float], _ reference: [Float]) -> Double {
        guard actual.count == reference.count else { return -.infinity }
        var signal = 0.0, noise = 0.0
        for (a, r) in zip(actual, reference) {
            signal += Double(r) * Double(r)
            noise += Double(a - r) * Double(a - r)
        }
        return noise == 0 ? .infinity : 10 * log10(signal / noise)
    }

    /// Expects `rendered[frames]` (stereo) to be `reference[referenceFrames]` on every channel
    /// (a mono reference on both).
    private func expectMatch(_ rendered: PCMBuffer, frames: Range<Int>, _ reference: PCMBuffer, _ referenceFrames: Range<Int>,
                             _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let out = rendered.format.channelCount, ref = reference.format.channelCount
        let a = rendered.samples[(frames.lowerBound * out)..<(frames.upperBound * out)]
        let r = reference.samples[(referenceFrames.lowerBound * ref)..<(referenceFrames.upperBound * ref)]
        for c in 0..<out {
            let value = snr(channel(a, c, of: out), channel(r, min(c, ref - 1), of: ref))
            #expect(value >= 80, "\(what), channel \(c): \(value) dB", sourceLocation: sourceLocation)
        }
    }

    static let equalRateCases: [(String, String)] = ["queue", "openal"].flatMap { backend in
        ["mp3-44100-stereo.mp3", "vorbis-44100-stereo.ogg", "flac-48000-mono-s24.flac", "wav-48000-stereo-f32.wav"]
            .map { (backend, $0) }
    }

    @Test(arguments: equalRateCases)
    func everyFramePlaysAsTheDecoderDecodesIt(_ backend: String, _ name: String) throws {
        let path = Tool.fixture(name)
        let reference = try DecoderRegistry.shared.open(path: path).decodeAll()
        let rendered = try render([path], ["--backend", backend])
        #expect(rendered.result.status == 0, "\(rendered.result.stderr)")
        #expect(rendered.buffer.format.sampleRate == reference.format.sampleRate, "the device runs at the file's rate")
        #expect(rendered.buffer.frameCount == reference.frameCount, "exactly the file's frames")
        guard rendered.buffer.frameCount == reference.frameCount else { return }
        expectMatch(rendered.buffer, frames: 0..<reference.frameCount, reference, 0..<reference.frameCount, "\(backend) \(name)")
        #expect(rendered.result.stderr.contains("spool: played \(reference.frameCount) frames"), "\(rendered.result.stderr)")
    }

    @Test(arguments: ["queue", "openal"])
    func startThenLoopsPlayTheRestThenTheWholeFileEachPass(_ backend: String) throws {
        let path = Tool.fixture("wav-48000-stereo-f32.wav")
        let reference = try DecoderRegistry.shared.open(path: path).decodeAll()
        let n = reference.frameCount, start = 4_800
        let rendered = try render([path], ["--backend", backend, "--start", "0.1", "--loops", "2"])
        #expect(rendered.result.status == 0, "\(rendered.result.stderr)")
        #expect(rendered.buffer.frameCount == (n - start) + 2 * n)
        guard rendered.buffer.frameCount == (n - start) + 2 * n else { return }
        expectMatch(rendered.buffer, frames: 0..<(n - start), reference, start..<n, "the first pass, from --start")
        expectMatch(rendered.buffer, frames: (n - start)..<(2 * n - start), reference, 0..<n, "the second pass")
        expectMatch(rendered.buffer, frames: (2 * n - start)..<(3 * n - start), reference, 0..<n, "the third pass")
    }

    @Test func severalFilesFollowOneAnotherInOneFile() throws {
        let first = Tool.fixture("wav-44100-stereo-s16.wav"), second = Tool.fixture("vorbis-44100-stereo.ogg")
        let a = try DecoderRegistry.shared.open(path: first).decodeAll()
        let b = try DecoderRegistry.shared.open(path: second).decodeAll()
        let rendered = try render([first, second])
        #expect(rendered.result.status == 0, "\(rendered.result.stderr)")
        #expect(rendered.buffer.frameCount == a.frameCount + b.frameCount)
        guard rendered.buffer.frameCount == a.frameCount + b.frameCount else { return }
        expectMatch(rendered.buffer, frames: 0..<a.frameCount, a, 0..<a.frameCount, "the first file")
        expectMatch(rendered.buffer, frames: a.frameCount..<(a.frameCount + b.frameCount), b, 0..<b.frameCount, "the second")
        #expect(rendered.result.stderr.components(separatedBy: "spool: playing ").count == 3)
    }

    @Test func varispeedOnAConvertedOutputHasTheExactLengthAndTheToneMoves() throws {
        // 0.5 s at 44.1 kHz, at rate 2 on a 48 kHz device: 22050 × 48000 / 44100 / 2 frames.
        let rendered = try render([Tool.fixture("wav-44100-stereo-s16.wav")],
                                  ["--device-rate", "48000", "--rate", "2", "--varispeed"])
        #expect(rendered.result.status == 0, "\(rendered.result.stderr)")
        #expect(rendered.buffer.frameCount == 12_000)
        // The left channel's 440 Hz tone now sounds at 880 Hz.
        let left = channel(rendered.buffer.samples[...], 0, of: 2)
        func power(_ frequency: Double) -> Double {
            let w = 2 * Double.pi * frequency / 48_000
            var re = 0.0, im = 0.0
            for (i, x) in left.enumerated() {
                re += Double(x) * cos(w * Double(i))
                im -= Double(x) * sin(w * Double(i))
            }
            return re * re + im * im
        }
        #expect(power(880) > 100 * power(440), "pitch follows the rate")
    }

    @Test func aTruncatedFileRendersItsPrefixAndExitsWithStatus1() throws {
        let path = Tool.fixture("broken/truncated.wav")
        let reference = try DecoderRegistry.shared.open(path: path).decodeAll()
        let rendered = try render([path])
        #expect(rendered.result.status == 1)
        #expect(rendered.result.stderr.contains("truncated.wav: data ends early"), "\(rendered.result.stderr)")
        #expect(rendered.buffer.frameCount == reference.frameCount, "the frames that decode, \(reference.frameCount)")
        guard rendered.buffer.frameCount == reference.frameCount else { return }
        expectMatch(rendered.buffer, frames: 0..<reference.frameCount, reference, 0..<reference.frameCount, "the prefix")
    }

    @Test(arguments: ["queue", "openal"])
    func filesOfAnotherRateAndLayoutJoinWithoutAGap(_ backend: String) throws {
        // 22.05 kHz mono FLAC, then 48 kHz stereo float, on a 48 kHz device: the first is
        // converted as it plays and the second's first frame follows its last at once.
        let first = Tool.fixture("flac-22050-mono-s16.flac"), second = Tool.fixture("wav-48000-stereo-f32.wav")
        let output = try AudioFormat(sampleRate: 48_000, channelCount: 2)
        let a = try DecoderRegistry.shared.open(path: first).decodeAll().converted(to: output)
        let b = try DecoderRegistry.shared.open(path: second).decodeAll()
        let rendered = try render([first, second], ["--backend", backend, "--device-rate", "48000"])
        #expect(rendered.result.status == 0, "\(rendered.result.stderr)")
        #expect(rendered.buffer.frameCount == a.frameCount + b.frameCount, "\(rendered.buffer.frameCount) frames")
        guard rendered.buffer.frameCount == a.frameCount + b.frameCount else { return }
        expectMatch(rendered.buffer, frames: 0..<a.frameCount, a, 0..<a.frameCount, "\(backend): the first file, converted")
        expectMatch(rendered.buffer, frames: a.frameCount..<(a.frameCount + b.frameCount), b, 0..<b.frameCount,
                    "\(backend): the second, from the frame after the first's last")
        let lines = rendered.result.stderr.split(separator: "\n")
        #expect(lines.filter { $0.hasPrefix("spool: played ") }.count == 2, "a summary per file: \(lines)")
    }

    /// Without --device-rate the output runs at the highest rate among the files: a 22.05 kHz
    /// file then a 48 kHz one play at 48 kHz, the second unconverted (it was resampled down to
    /// the first file's rate).
    @Test func theOutputRunsAtTheHighestRateAmongTheFiles() throws {
        let first = Tool.fixture("flac-22050-mono-s16.flac"), second = Tool.fixture("wav-48000-stereo-f32.wav")
        let output = try AudioFormat(sampleRate: 48_000, channelCount: 2)
        let a = try DecoderRegistry.shared.open(path: first).decodeAll().converted(to: output)
        let b = try DecoderRegistry.shared.open(path: second).decodeAll()
        let rendered = try render([first, second])
        #expect(rendered.result.status == 0, "\(rendered.result.stderr)")
        #expect(rendered.buffer.format.sampleRate == 48_000, "\(rendered.buffer.format)")
        #expect(rendered.buffer.frameCount == a.frameCount + b.frameCount, "\(rendered.buffer.frameCount) frames")
        guard rendered.buffer.frameCount == a.frameCount + b.frameCount else { return }
        expectMatch(rendered.buffer, frames: a.frameCount..<(a.frameCount + b.frameCount), b, 0..<b.frameCount,
                    "the 48 kHz file, as it is")
    }

    @Test func startAndLoopsApplyToEveryFileOfTheList() throws {
        let first = Tool.fixture("wav-48000-stereo-f32.wav"), second = Tool.fixture("wav-48000-stereo-s24.wav")
        let a = try DecoderRegistry.shared.open(path: first).decodeAll()
        let b = try DecoderRegistry.shared.open(path: second).decodeAll()
        let start = 2_400
        let rendered = try render([first, second], ["--start", "0.05", "--loops", "1"])
        #expect(rendered.result.status == 0, "\(rendered.result.stderr)")
        let na = a.frameCount, nb = b.frameCount
        let parts: [(PCMBuffer, Range<Int>)] = [(a, start..<na), (a, 0..<na), (b, start..<nb), (b, 0..<nb)]
        #expect(rendered.buffer.frameCount == parts.reduce(0) { $0 + $1.1.count })
        guard rendered.buffer.frameCount == parts.reduce(0, { $0 + $1.1.count }) else { return }
        var at = 0
        for (index, (reference, range)) in parts.enumerated() {
            expectMatch(rendered.buffer, frames: at..<(at + range.count), reference, range, "part \(index)")
            at += range.count
        }
        #expect(rendered.result.stderr.contains("spool: played \(na - start + na) frames"), "\(rendered.result.stderr)")
        #expect(rendered.result.stderr.contains("spool: played \(nb - start + nb) frames"), "\(rendered.result.stderr)")
    }

    @Test func aDamagedFileBetweenTwoPlaysItsPrefixAndTheNextJoinsIt() throws {
        let first = Tool.fixture("wav-44100-stereo-s16.wav"), truncated = Tool.fixture("broken/truncated.wav")
        let a = try DecoderRegistry.shared.open(path: first).decodeAll()
        let t = try DecoderRegistry.shared.open(path: truncated).decodeAll()
        #expect(t.format == a.format, "both at 44.1 kHz stereo")
        let rendered = try render([first, truncated, first])
        #expect(rendered.result.status == 1)
        #expect(rendered.result.stderr.contains("truncated.wav: data ends early"), "\(rendered.result.stderr)")
        #expect(rendered.buffer.frameCount == 2 * a.frameCount + t.frameCount)
        guard rendered.buffer.frameCount == 2 * a.frameCount + t.frameCount else { return }
        expectMatch(rendered.buffer, frames: 0..<a.frameCount, a, 0..<a.frameCount, "the first file")
        expectMatch(rendered.buffer, frames: a.frameCount..<(a.frameCount + t.frameCount), t, 0..<t.frameCount, "the prefix")
        let third = a.frameCount + t.frameCount
        expectMatch(rendered.buffer, frames: third..<(third + a.frameCount), a, 0..<a.frameCount, "the file after it")
    }
}
