import Foundation
import Testing
import SpoolCore
import CAllocationCounter
@testable import SpoolDecoding
import SpoolTestSupport

/// Every kind of bad input gets a clear `AudioError` (or a warning, where the good part can
/// still be decoded), and nothing crashes, hangs or allocates beyond the input's real size.
@Suite("Bad input")
struct BadInputTests {
    @Test func libsndfilesRefusalsAreSaidAsWhatHappenedToTheFile() {
        // libsndfile reads through Spool's own I/O: its words about missing files and pipes
        // (errors 7 and 8) would send a user looking in the wrong place.
        let badFile = SndFileDecoder.openFailure(
            status: 7, text: "File does not exist or is not a regular file (possibly a pipe?).")
        #expect(badFile.hasPrefix("the audio data cannot be decoded: it is damaged"), "\(badFile)")
        #expect(badFile.contains("(libsndfile: File does not exist"))
        let unreadable = SndFileDecoder.openFailure(status: 8, text: "File exists but no data could be read.")
        #expect(unreadable.hasPrefix("no audio data could be read from the file"), "\(unreadable)")
        #expect(SndFileDecoder.openFailure(status: 3, text: "Error in WAV file.").hasPrefix("libsndfile cannot read the header"))
        #expect(SndFileDecoder.openFailure(status: 1, text: "Format not recognised.") == "Format not recognised.")
    }


    func open(_ name: String) throws -> any AudioDecoder {
        try DecoderRegistry.shared.open(path: Fixtures.path("broken/\(name)"))
    }

    func code(_ body: () throws -> Void) -> AudioError.Code? {
        do { try body() } catch let error as AudioError { return error.code } catch { return nil }
        return nil
    }

    @Test func emptyFile() {
        #expect(code { _ = try open("empty.mp3") } == .emptyInput)
        #expect(code { _ = try DecoderRegistry.shared.open(.memory(Data(), name: "nothing", typeHint: "wav")) } == .emptyInput)
    }

    @Test func aFewBytes() {
        #expect(code { _ = try open("tiny.wav") } == .truncated)
    }

    @Test func textNamedMP3() throws {
        do {
            _ = try open("text.mp3")
            Issue.record("a text file opened as audio")
        } catch let error as AudioError {
            #expect(error.code == .unsupportedFormat)
            #expect(error.message.contains("text.mp3"))
        }
    }

    @Test func randomBytes() {
        #expect(code { _ = try open("random.bin") } == .unsupportedFormat)
    }

    @Test func missingFile() {
        #expect(code { _ = try DecoderRegistry.shared.open(path: "/nonexistent/file.mp3") } == .fileNotFound)
    }

    @Test func directoryIsNotAFile() {
        #expect(code { _ = try DecoderRegistry.shared.open(path: Fixtures.directory.path) } == .readFailed)
    }

    /// For each truncated fixture: how far below the cut the reported offset may lie (0 where
    /// the decoder reports the cut itself; else the start of the partial frame or page).
    static let truncations: [(name: String, offsetSlack: Int)] = [
        ("truncated.mp3", 1_441),  // the largest MPEG-1 Layer III frame (320 kbit/s, 32 kHz, padded)
        ("truncated.wav", 0), ("truncated.flac", 0),
        ("truncated.ogg", 8_192),  // the partial page; these pages hold about 4 KiB
    ]

    @Test("a truncated file decodes its prefix and warns once with the byte offset", arguments: truncations)
    func truncated(_ name: String, _ offsetSlack: Int) throws {
        let facts = try #require(Fixtures.broken(name))
        let cut = try #require(facts.truncatedAtByte)
        let decoder = try open(name)
        let size = try FileManager.default.attributesOfItem(atPath: Fixtures.path("broken/\(name)"))[.size] as! Int
        #expect(size == cut)
        let claimedAtOpen = decoder.frameCount
        let pcm = try decoder.decodeAll()
        #expect(pcm.frameCount > 0)
        #expect(pcm.frameCount == decoder.frameCount)
        #expect(claimedAtOpen == pcm.frameCount || !decoder.isFrameCountExact, "info and decode agree")
        if let present = facts.framesPresent { #expect(pcm.frameCount == present) }
        if let full = facts.fullFrames, let original = facts.originalBytes {
            // No more than the bytes before the cut can hold.
            #expect(pcm.frameCount < full)
            #expect(Double(pcm.frameCount) <= Double(full) * Double(cut) / Double(original) * 1.1)
        }
        let truncations = decoder.warnings.filter { $0.kind == .truncated }
        #expect(truncations.count == 1)
        let offset = try #require(truncations.first?.byteOffset)
        #expect(offset <= cut && offset >= cut - offsetSlack, "reported at byte \(offset); the file was cut at \(cut)")
        // Reading again at the end yields nothing and adds no second warning.
        #expect(try decoder.decodeAll().frameCount == 0)
        #expect(decoder.warnings.filter { $0.kind == .truncated }.count == 1)
    }

    @Test("corruption in the middle: resync, count the skipped bytes, keep the rest",
          arguments: ["corrupt-middle.mp3", "corrupt-middle.ogg"])
    func corruptMiddle(_ name: String) throws {
        let decoder = try open(name)
        let pcm = try decoder.decodeAll()
        let skipped = decoder.warnings.filter { $0.kind == .skippedCorruptData }
        #expect(!skipped.isEmpty)
        #expect(skipped.allSatisfy { $0.byteCount > 0 })
        // Most of the second of audio survives on both sides of the damage.
        #expect(pcm.frameCount > decoder.format.frames(forSeconds: 0.7))
        #expect(pcm.samples.allSatisfy { $0.isFinite && abs($0) <= 1.5 })
    }

    @Test func headerClaimingGigabytes() throws {
        // The header claims 4 GiB; what is allocated while opening and decoding it must stay
        // near what the 22 KB of real audio needs. Counted per allocation, so memory that is
        // reserved but never touched counts too.
        spool_allocation_counting_begin()
        let decoder = try open("huge-header.wav")
        let pcm = try decoder.decodeAll()
        let bytes = spool_allocation_counting_bytes()
        _ = spool_allocation_counting_end()
        #expect(bytes < 16 << 20, "\(bytes) bytes allocated")
        // libsndfile and Spool believe the bytes, not the header.
        #expect(decoder.frameCount == 11025)
        #expect(pcm.frameCount == 11025)
        #expect(decoder.warnings.contains { $0.kind == .truncated })
    }

    @Test func xingClaimingBillionsOfFrames() throws {
        let decoder = try open("huge-xing.mp3")
        #expect(decoder.frameCount < 30_000)
        let pcm = try decoder.decodeAll()
        #expect(pcm.frameCount == decoder.frameCount)
        #expect(decoder.warnings.contains { $0.kind == .truncated })
    }

    @Test("a wrong extension does not stop a file from playing", arguments: [
        ("mp3-named.wav", "MP3", "mp3-22050-mono-vbr.mp3"), ("ogg-named.mp3", "Ogg", "vorbis-22050-mono.ogg"),
    ])
    func wrongExtension(_ name: String, _ container: String, _ original: String) throws {
        let decoder = try open(name)
        #expect(decoder.info.container == container)
        let expected = try DecoderRegistry.shared.open(path: Fixtures.path(original)).decodeAll()
        #expect(try decoder.decodeAll().samples == expected.samples)
    }

    @Test func typeHintOnlyBreaksTies() throws {
        // An MP3 handed over from memory with a WAV hint is still decoded as MP3.
        let data = try Data(contentsOf: URL(fileURLWithPath: Fixtures.path("mp3-44100-stereo.mp3")))
        let decoder = try DecoderRegistry.shared.open(.memory(data, typeHint: "wav"))
        #expect(decoder.info.container == "MP3")
        #expect(decoder.frameCount == 22050)
    }

    @Test func chainedOggThatChangesFormatStopsWithAnError() throws {
        let decoder = try open("vorbis-chained-mixed.ogg")
        #expect(decoder.format.sampleRate == 44100)
        #expect(decoder.frameCount == 22050)
        var buffer = [Float](repeating: 0, count: 4096 * 2)
        var frames = 0
        var failure: AudioError?
        do {
            while true {
                let got = try buffer.withUnsafeMutableBufferPointer { try decoder.read(into: $0) }
                if got == 0 { break }
                frames += got
            }
        } catch let error as AudioError { failure = error }
        #expect(frames == 22050)
        #expect(failure?.code == .formatChanged)
        #expect(failure?.message.contains("22050 Hz") == true)
    }

    @Test("seek past the end and reads after the end", arguments: Fixtures.all.prefix(30).map(\.file))
    func seekPastEnd(_ file: String) throws {
        let decoder = try DecoderRegistry.shared.open(path: Fixtures.path(file))
        #expect(code { try decoder.seek(toFrame: decoder.frameCount + 1) } == .outOfRange)
        #expect(code { try decoder.seek(toFrame: -1) } == .outOfRange)
        try decoder.seek(toFrame: decoder.frameCount)
        var buffer = [Float](repeating: 0, count: 1024 * decoder.format.channelCount)
        for _ in 0..<3 {
            #expect(try buffer.withUnsafeMutableBufferPointer { try decoder.read(into: $0) } == 0)
        }
    }
}
