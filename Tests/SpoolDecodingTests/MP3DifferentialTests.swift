import Foundation
import Testing
import SpoolCore
@testable import SpoolDecoding
import CMPG123
import SpoolTestSupport

/// The MP3 fixtures of `Fixtures/mp3/` and their manifest (made by `make-mp3-fixtures.sh`).
enum MP3Fixtures {
    static let directory = Fixtures.directory.appendingPathComponent("mp3")

    struct Entry: Decodable, Sendable, CustomStringConvertible {
        let file: String
        /// The bare LAME frames this fixture holds.
        let base: String
        let sampleRate: Double
        let channels: Int
        /// Frames of the base decoded untrimmed (before a cut, for a cut file).
        let rawFrames: Int
        /// Frames a correct decode trims at the start, and the frames it produces.
        let startTrim: Int
        let frames: Int
        let tags: [String: String]
        let damaged: Bool?
        /// The kinds of warning a correct decode gives (`truncated`, `skippedCorruptData`).
        let warnings: [String]?
        let isVBR: Bool?
        let bitRate: Int?
        /// Leading frames of silence libmpg123 decodes from a VBRI header frame.
        let mpg123LeadingFrames: Int?
        /// mpg123's largest difference from the expected samples with its own parsing and
        /// gapless trimming, and untrimmed; nil where it decoded another length.
        let mpg123GaplessMaxAbsDiff: Double?
        let mpg123RawMaxAbsDiff: Double?
        let note: String
        var description: String { file }
        var path: String { MP3Fixtures.directory.appendingPathComponent(file).path }
        var basePath: String { MP3Fixtures.directory.appendingPathComponent(base).path }
    }

    struct Manifest: Decodable { let fixtures: [Entry] }

    static let all: [Entry] = {
        let data = try! Data(contentsOf: directory.appendingPathComponent("manifest.json"))
        return try! JSONDecoder().decode(Manifest.self, from: data).fixtures
    }()

    static func entry(_ file: String) -> Entry { all.first { $0.file == file }! }

    /// ffmpeg's untrimmed decode of a base, interleaved.
    static func reference(_ entry: Entry) throws -> [Float] {
        let url = directory.appendingPathComponent("reference/\(entry.base).f32")
        return try Data(contentsOf: url).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }
}

/// libmpg123 used directly, the way a program that knows nothing of Spool would: its own
/// parsing of tags, headers and junk, gapless on or off, float output.
enum LibMPG123 {
    struct Decode {
        let frames: Int
        let samples: [Float]
    }

    static func decode(path: String, gapless: Bool) throws -> Decode {
        _ = mpg123_init()
        var error: Int32 = 0
        guard let handle = mpg123_new(nil, &error) else { throw AudioError(.libraryFailure, "mpg123_new") }
        defer { mpg123_delete(handle) }
        let flags = Int(MPG123_FORCE_FLOAT.rawValue | MPG123_QUIET.rawValue)
        mpg123_param2(handle, Int32(MPG123_ADD_FLAGS.rawValue), flags, 0)
        if !gapless { mpg123_param2(handle, Int32(MPG123_REMOVE_FLAGS.rawValue), Int(MPG123_GAPLESS.rawValue), 0) }
        guard mpg123_open(handle, path) == Int32(MPG123_OK.rawValue) else {
            throw AudioError(.corruptData, "libmpg123 cannot open \(path)")
        }
        defer { mpg123_close(handle) }
        var rate = 0, channels: Int32 = 0, encoding: Int32 = 0
        guard mpg123_getformat(handle, &rate, &channels, &encoding) == Int32(MPG123_OK.rawValue), channels > 0 else {
            throw AudioError(.corruptData, "libmpg123 finds no stream in \(path)")
        }
        var samples: [Float] = []
        var number: off_t = 0
        var audio: UnsafeMutablePointer<UInt8>?
        var bytes = 0
        loop: while true {
            switch mpg123_decode_frame(handle, &number, &audio, &bytes) {
            case Int32(MPG123_OK.rawValue), Int32(MPG123_NEW_FORMAT.rawValue):
                if let audio, bytes > 0 {
                    samples += UnsafeBufferPointer(start: UnsafeRawPointer(audio).assumingMemoryBound(to: Float.self),
                                                   count: bytes / 4)
                }
            case Int32(MPG123_DONE.rawValue):
                break loop
            default:
                throw AudioError(.corruptData, "libmpg123 fails on \(path)")
            }
        }
        return Decode(frames: samples.count / Int(channels), samples: samples)
    }
}

func maxAbsDifference(_ a: ArraySlice<Float>, _ b: ArraySlice<Float>) -> Float {
    zip(a, b).reduce(0) { max($0, abs($1.0 - $1.1)) }
}

/// Where two runs of samples first differ ("same" when they do not), for failure messages
/// that do not print every sample.
func firstDifference(_ a: ArraySlice<Float>, _ b: ArraySlice<Float>) -> String {
    if let i = zip(a.indices, b.indices).first(where: { a[$0.0] != b[$0.1] }) {
        return "sample \(i.0 - a.startIndex) differs: \(a[i.0]) vs \(b[i.1]) (\(a.count) vs \(b.count) samples)"
    }
    return a.count == b.count ? "same" : "\(a.count) vs \(b.count) samples"
}

/// On every MP3 fixture Spool decodes exactly the LAME frames it holds, trimmed as its
/// headers say, with the warnings its damage calls for and no others; and where libmpg123
/// on its own decodes the file, Spool's samples and frame count are libmpg123's.
@Suite("MP3: Spool against libmpg123 on every fixture")
struct MP3DifferentialTests {
    func spool(_ entry: MP3Fixtures.Entry) throws -> (decoder: any AudioDecoder, samples: [Float]) {
        let decoder = try DecoderRegistry.shared.open(path: entry.path)
        return (decoder, try decoder.decodeAll().samples)
    }

    @Test("the base's frames, trimmed as the headers say, frame count exact", arguments: MP3Fixtures.all)
    func decodesTheFramesItHolds(_ entry: MP3Fixtures.Entry) throws {
        let (decoder, samples) = try spool(entry)
        #expect(decoder.format.sampleRate == entry.sampleRate)
        #expect(decoder.format.channelCount == entry.channels)
        #expect(decoder.frameCount == entry.frames)
        #expect(decoder.isFrameCountExact)
        #expect(samples.count == entry.frames * entry.channels)
        #expect(decoder.frameCount == samples.count / entry.channels, "info and decode disagree")
        let kinds = decoder.warnings.map { $0.kind == .truncated ? "truncated" : "skippedCorruptData" }
        #expect(kinds == entry.warnings ?? [], "\(decoder.warnings)")

        // The base's frames as libmpg123 decodes them on their own (nothing to parse but
        // frames), untrimmed: Spool's output is exactly a slice of them.
        let base = try LibMPG123.decode(path: entry.basePath, gapless: false)
        let start = entry.startTrim * entry.channels
        #expect(base.frames >= entry.startTrim + entry.frames)
        let expected = base.samples[min(start, base.samples.count)..<min(start + entry.frames * entry.channels, base.samples.count)]
        #expect(firstDifference(samples[...], expected) == "same", "tag or header bytes played, or frames lost")

        // And ffmpeg, an independent decoder, agrees to rounding.
        let reference = try MP3Fixtures.reference(entry)
        let ratio = snr(samples[...], reference[min(start, reference.count)...])
        #expect(ratio >= 60, "SNR \(ratio) dB against ffmpeg")
    }

    @Test("libmpg123 with its own parsing and gapless gives the same",
          arguments: MP3Fixtures.all.filter { ($0.mpg123GaplessMaxAbsDiff ?? 1) <= 1e-6 })
    func agreesWithLibMPG123Gapless(_ entry: MP3Fixtures.Entry) throws {
        let (decoder, samples) = try spool(entry)
        let plain = try LibMPG123.decode(path: entry.path, gapless: true)
        let lead = (entry.mpg123LeadingFrames ?? 0) * entry.channels
        #expect(plain.frames - (entry.mpg123LeadingFrames ?? 0) == decoder.frameCount)
        #expect(plain.samples.count - lead == samples.count)
        // A VBRI frame decoded as silence shifts libmpg123's synthesis by a frame: the
        // same samples to within a float rounding step.
        let limit = Float(entry.mpg123GaplessMaxAbsDiff ?? 0)
        #expect(maxAbsDifference(plain.samples[min(lead, plain.samples.count)...], samples[...]) <= limit)
    }

    @Test("libmpg123 untrimmed holds Spool's samples at the trim (trims aside)",
          arguments: MP3Fixtures.all.filter { ($0.mpg123RawMaxAbsDiff ?? 1) <= 1e-6 })
    func agreesWithLibMPG123Untrimmed(_ entry: MP3Fixtures.Entry) throws {
        let (_, samples) = try spool(entry)
        let raw = try LibMPG123.decode(path: entry.path, gapless: false)
        let start = ((entry.mpg123LeadingFrames ?? 0) + entry.startTrim) * entry.channels
        #expect(raw.samples.count >= start + samples.count)
        let slice = raw.samples[min(start, raw.samples.count)..<min(start + samples.count, raw.samples.count)]
        #expect(maxAbsDifference(slice, samples[...]) <= Float(entry.mpg123RawMaxAbsDiff ?? 0))
    }

    @Test("memory decodes the same as the file", arguments: MP3Fixtures.all)
    func memoryMatchesFile(_ entry: MP3Fixtures.Entry) throws {
        let (file, samples) = try spool(entry)
        let data = try Data(contentsOf: URL(fileURLWithPath: entry.path))
        let memory = try DecoderRegistry.shared.open(.memory(data, name: entry.file, typeHint: "mp3"))
        #expect(memory.frameCount == file.frameCount)
        #expect(firstDifference(try memory.decodeAll().samples[...], samples[...]) == "same")
        #expect(memory.warnings == file.warnings)
    }

    @Test("seeks land on the frame", arguments: MP3Fixtures.all.filter { $0.frames > 1000 })
    func seeks(_ entry: MP3Fixtures.Entry) throws {
        let (decoder, whole) = try spool(entry)
        let channels = entry.channels
        for target in [entry.frames / 2, 1, entry.frames - 100, 0, entry.frames / 3 + 7] {
            try decoder.seek(toFrame: target)
            #expect(decoder.position == target)
            let part = try decoder.decodeAll(maximumFrames: 64).samples
            let expected = whole[(target * channels)..<(min(entry.frames, target + 64) * channels)]
            #expect(part.count == expected.count)
            #expect(snr(part[...], expected) >= 60, "seek to \(target)")
        }
        try decoder.seek(toFrame: entry.frames)
        #expect(try decoder.decodeAll().frameCount == 0)
    }
}
