import Foundation
import Testing
import SpoolCore
@testable import SpoolDecoding
import SpoolTestSupport

/// `frameCount` at open and what decoding produces agree, or the count says it is an
/// estimate (`isFrameCountExact` false) — never a silent difference; granule positions that
/// lie (up to 2^63−1) neither overflow nor make decoding go on without end.
@Suite("Vorbis frame counts of damaged files")
struct VorbisFrameCountTests {
    static let damaged = ["granule-max.ogg", "granule-max-hole-bad-checksum.ogg", "granule-raised.ogg",
                          "granule-last-raised.ogg", "flags-all-set.ogg", "flags-continued-last.ogg", "page-missing.ogg",
                          "chained-fewer-channels-raised-granule.ogg"]

    struct Outcome {
        let countedAtOpen: Int
        let exactAtOpen: Bool
        let decoded: PCMBuffer
        let decoder: VorbisDecoder
    }

    func decode(_ file: String) throws -> Outcome {
        let decoder = try VorbisDecoder(source: .file(path: OggCases.path(file)))
        let counted = decoder.frameCount
        let exact = decoder.isFrameCountExact
        return Outcome(countedAtOpen: counted, exactAtOpen: exact, decoded: try decoder.decodeAll(), decoder: decoder)
    }

    @Test("the count at open is what decoding produces, or says it is not", arguments: damaged)
    func countAgreesOrSaysItIsAnEstimate(_ file: String) throws {
        let outcome = try decode(file)
        if outcome.exactAtOpen {
            #expect(outcome.decoded.frameCount == outcome.countedAtOpen)
        }
        // Decoding to the end makes the count exact.
        #expect(outcome.decoder.frameCount == outcome.decoded.frameCount)
        #expect(outcome.decoder.isFrameCountExact)
        // Bounded by the audio the file really holds (the undamaged original's), whatever
        // its granule positions claim.
        if let frames = OggCases.all[file]?.frames {
            #expect(outcome.countedAtOpen <= frames + 2048)
            #expect(outcome.decoded.frameCount <= frames + 2048)
            #expect(outcome.decoded.frameCount >= frames - 8192)
        }
    }

    @Test("a granule position a decoder must not believe", arguments: [
        "granule-max.ogg", "granule-max-hole-bad-checksum.ogg", "granule-raised.ogg", "granule-last-raised.ogg",
    ])
    func lyingGranules(_ file: String) throws {
        let outcome = try decode(file)
        #expect(!outcome.exactAtOpen)
        // The other link's audio and most of this one's come through.
        #expect(outcome.decoded.frameCount > 30_000)
        #expect(outcome.decoded.samples.allSatisfy { $0.isFinite && abs($0) <= 1.5 })
    }

    @Test func theRegularFilesAreExact() throws {
        for entry in Fixtures.all where entry.container == "Ogg" {
            let decoder = try VorbisDecoder(source: .file(path: Fixtures.path(entry.file)))
            #expect(decoder.isFrameCountExact, "\(entry.file)")
        }
    }

    @Test func aMissingPageIsReported() throws {
        let file = "page-missing.ogg"
        let facts = try #require(OggCases.all[file])
        let outcome = try decode(file)
        let missing = outcome.decoder.warnings.filter { $0.kind == .missingData }
        #expect(missing.map(\.byteOffset) == [facts.removedPage])
        #expect(outcome.decoder.warnings.allSatisfy { $0.kind == .missingData })
        #expect(!outcome.exactAtOpen)
    }

    @Test func aBadChecksumAndAMissingPage() throws {
        let file = "granule-max-hole-bad-checksum.ogg"
        let facts = try #require(OggCases.all[file])
        let outcome = try decode(file)
        let warnings = outcome.decoder.warnings
        #expect(warnings.contains(DecodeWarning(kind: .skippedCorruptData, byteOffset: try #require(facts.badChecksumPage),
                                                byteCount: try #require(facts.badChecksumBytes))))
        #expect(warnings.contains { $0.kind == .missingData && $0.byteOffset == facts.removedPage })
    }

    @Test("seeking in a file whose count is an estimate", arguments: ["granule-max-hole-bad-checksum.ogg", "flags-all-set.ogg"])
    func seekInEstimatedFile(_ file: String) throws {
        let whole = try decode(file).decoded
        let decoder = try VorbisDecoder(source: .file(path: OggCases.path(file)))
        let channels = decoder.format.channelCount
        for target in [whole.frameCount / 2, 100, whole.frameCount - 10, 0] {
            try decoder.seek(toFrame: target)
            #expect(decoder.position == target)
            let part = try decoder.decodeAll(maximumFrames: 64).samples
            let expected = whole.samples[(target * channels)..<(min(whole.frameCount, target + 64) * channels)]
            #expect(part[...] == expected, "seek to \(target)")
        }
        try decoder.seek(toFrame: whole.frameCount)
        #expect(try decoder.decodeAll().frameCount == 0)
        #expect(throws: AudioError.self) { try decoder.seek(toFrame: whole.frameCount + 1) }
    }

    @Test func aPageHoleAndMegabytesOfJunkDecodeInLinearTime() throws {
        // page-missing.ogg with 3 MiB of bytes that are no page where the page was.
        let original = try OggCases.bytes("page-missing.ogg")
        let hole = try #require(OggCases.all["page-missing.ogg"]?.removedPage)
        let junk = SeededGenerator.bytes(3 << 20, seed: 7)
        let bytes = Array(original[..<hole]) + junk + Array(original[hole...])
        let start = Date()
        let decoder = try VorbisDecoder(source: .memory(Data(bytes), name: "junk.ogg"))
        let pcm = try decoder.decodeAll()
        let seconds = Date().timeIntervalSince(start)
        #expect(seconds < 2, "\(seconds) s")
        #expect(pcm.frameCount == decoder.frameCount)
        #expect(pcm.frameCount > 30_000)
        #expect(decoder.warnings.contains(DecodeWarning(kind: .skippedCorruptData, byteOffset: hole, byteCount: junk.count)))
    }
}
