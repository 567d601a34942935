import Foundation
import Testing
import SpoolCore
@testable import SpoolDecoding
import SpoolTestSupport

/// What `info` says about an MP3 stream: its length, bit rate and whether it is VBR, taken
/// from the frames themselves where the headers are missing, short or wrong.
@Suite("MP3 stream facts")
struct MP3StreamFactsTests {
    func open(_ file: String) throws -> any AudioDecoder {
        try DecoderRegistry.shared.open(path: MP3Fixtures.entry(file).path)
    }

    @Test func veryShortLAMEFileHasItsGaplessLength() throws {
        // lame -V 9 of 229 frames at 24 kHz: an Info frame and three frames of 576.
        let decoder = try open("short-24000-stereo.mp3")
        #expect(decoder.format.sampleRate == 24_000)
        #expect(decoder.frameCount == 229)
        #expect(try decoder.decodeAll().frameCount == 229)
        #expect(decoder.warnings.isEmpty)
    }

    @Test func streamsOfOneFrame() throws {
        // One bare frame: libmpg123 alone refuses it (no next header to confirm the first).
        let base = MP3Fixtures.entry("base-24000-stereo-short.mp3")
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: base.path)))
        let frame = MPEGAudioHeader(bytes)!.frameBytes
        let one = try DecoderRegistry.shared.open(.memory(Data(bytes.prefix(frame)), typeHint: "mp3"))
        #expect(one.frameCount == 576)
        let samples = try one.decodeAll().samples
        let whole = try LibMPG123.decode(path: base.path, gapless: false).samples
        #expect(firstDifference(samples[...], whole[0..<(576 * 2)]) == "same")
        #expect(one.warnings.isEmpty)
        // The short LAME file cut inside its second audio frame: its one whole frame lies
        // inside the encoder delay, so nothing is left to play, and that is said.
        let lame = [UInt8](try Data(contentsOf: URL(fileURLWithPath: MP3Fixtures.entry("short-24000-stereo.mp3").path)))
        let cut = try DecoderRegistry.shared.open(.memory(Data(lame.prefix(600)), typeHint: "mp3"))
        #expect(cut.frameCount == 0)
        #expect(try cut.decodeAll().frameCount == 0)
        #expect(cut.warnings.map(\.kind) == [.truncated])
    }

    @Test("bit rate measured from the frames, VBR when frame bit rates vary",
          arguments: MP3Fixtures.all.filter { $0.isVBR != nil })
    func bitRateAndVBR(_ entry: MP3Fixtures.Entry) throws {
        let decoder = try open(entry.file)
        #expect(decoder.info.isVBR == entry.isVBR)
        if let bitRate = entry.bitRate {
            #expect(abs(decoder.info.bitRate - bitRate) <= 1, "\(decoder.info.bitRate)")
        }
    }

    @Test func vbrWithoutHeaderIsNotReportedAsItsFirstFramesRate() throws {
        // Its first frame is 320 kbit/s; the frames average far less.
        let decoder = try open("base-44100-stereo-vbr.mp3")
        #expect(decoder.info.isVBR)
        #expect(decoder.info.bitRate < 150_000)
        #expect(decoder.info.bitRate > 60_000)
    }

    @Test func lameFilesAreVBROrCBRByTheirFrames() throws {
        let vbr = try open("lame-44100-stereo-vbr.mp3")
        #expect(vbr.info.isVBR)
        let cbr = try DecoderRegistry.shared.open(path: Fixtures.path("mp3-44100-stereo.mp3"))
        #expect(!cbr.info.isVBR)
        #expect(cbr.info.bitRate == 128_000)
    }

    @Test func aFileCutMidwayLinesUpWithTheWholeFile() throws {
        // The Info frame of the cut file still claims every frame: the encoder delay is
        // trimmed at the start all the same, so its samples are the whole file's first ones.
        let cut = try open("truncated-16000-mono.mp3")
        let whole = try open("lame-16000-mono-vbr.mp3").decodeAll().samples
        let pcm = try cut.decodeAll()
        #expect(pcm.frameCount == cut.frameCount)
        #expect(pcm.frameCount > 8000)
        #expect(firstDifference(pcm.samples[...], whole[0..<min(whole.count, pcm.samples.count)]) == "same")
        #expect(cut.warnings.map(\.kind) == [.truncated])
    }
}
