import Foundation
import Testing
import SpoolCore
@testable import SpoolDecoding
import SpoolTestSupport

/// Headers whose sizes were made absurd (`Fixtures/hostile/`, from
/// `make-hostile-fixtures.py`): the sizes reach libsndfile's seek callback and Spool's own
/// chunk walks, which must clamp them, never trap, and say what is wrong.
@Suite("Hostile headers")
struct HostileHeaderTests {
    private func source(_ name: String, memory: Bool) throws -> AudioSource {
        let path = Fixtures.path("hostile/\(name)")
        return memory ? .memory(try Data(contentsOf: URL(fileURLWithPath: path)), name: name) : .file(path: path)
    }

    private func error(_ body: () throws -> Void) -> AudioError? {
        do { try body() } catch let error as AudioError { return error } catch { return nil }
        return nil
    }

    @Test(arguments: [false, true])
    func rf64WhoseDS64ClaimsTwoToThe63BytesDecodesWhatIsThere(memory: Bool) throws {
        let decoder = try DecoderRegistry.shared.open(try source("rf64-huge-ds64.wav", memory: memory))
        let pcm = try decoder.decodeAll()
        // The audio is wav-44100-stereo-s16.wav's, byte for byte.
        let original = try DecoderRegistry.shared.open(path: Fixtures.path("wav-44100-stereo-s16.wav")).decodeAll()
        #expect(pcm.frameCount == 22_050)
        #expect(pcm.frameCount == decoder.frameCount)
        #expect(pcm.withUnsafeSamples(Array.init) == original.withUnsafeSamples(Array.init))
        #expect(decoder.warnings.map(\.kind) == [.truncated], "the header claims more than the file holds")
    }

    @Test(arguments: [false, true])
    func rf64WhoseDS64ClaimsTwoToThe64BytesIsACorruptHeader(memory: Bool) throws {
        let failure = try #require(error { _ = try DecoderRegistry.shared.open(try source("rf64-negative-ds64.wav", memory: memory)) })
        #expect(failure.code == .corruptData)
        #expect(failure.message.contains("ds64"))
        #expect(failure.message.contains("18446744073709551615"))
    }

    @Test(arguments: ["wav-huge-fmt.wav", "wav-zero-channels.wav"])
    func impossibleFormatChunksAreCorruptHeaders(name: String) throws {
        let failure = try #require(error { _ = try DecoderRegistry.shared.open(try source(name, memory: false)) })
        #expect(failure.code == .corruptData)
        #expect(failure.message.hasPrefix("\(name)") || failure.message.contains(name))
        #expect(failure.message.contains("header") || failure.message.contains("chunk"))
    }

    /// libsndfile 1.2 never returns from `sf_open` on this file (found by the fuzz target);
    /// Spool's own chunk walk refuses it first.
    @Test(arguments: [false, true])
    func aChunkClaimingMoreThanTheFileBeforeTheAudioIsRefusedAtOnce(memory: Bool) throws {
        let start = ContinuousClock.now
        let failure = try #require(error { _ = try DecoderRegistry.shared.open(try source("wav-list-claims-4gib.wav", memory: memory)) })
        #expect(ContinuousClock.now - start < .seconds(2))
        #expect(failure.code == .corruptData)
        #expect(failure.message.contains("'LIST' chunk at byte 36 claims 4294967295 bytes"))
    }

    @Test func byteReaderSeeksRefuseOverflowingOffsets() throws {
        let reader = try ByteReader(source: .memory(Data(repeating: 7, count: 100), name: "bytes"))
        #expect(reader.seek(10, whence: SEEK_SET) == 10)
        #expect(reader.seek(.max, whence: SEEK_CUR) == -1)
        #expect(reader.seek(.max, whence: SEEK_END) == -1)
        #expect(reader.seek(.min, whence: SEEK_CUR) == -1)
        #expect(reader.seek(101, whence: SEEK_SET) == -1)
        #expect(reader.seek(-1, whence: SEEK_END) == 99)
        #expect(reader.position == 99)
    }

    @Test(arguments: [false, true])
    func mpegInsideAWAVPlaysLikeTheMP3ItHolds(memory: Bool) throws {
        let decoder = try DecoderRegistry.shared.open(try source("wav-mpeg-layer3.wav", memory: memory))
        #expect(decoder.info.container == "WAV")
        #expect(decoder.info.codec == "MPEG-1 Layer III")
        let mp3 = try DecoderRegistry.shared.open(path: Fixtures.path("mp3-44100-stereo.mp3")).decodeAll()
        #expect(decoder.frameCount == 22_050, "gapless, from the LAME tag inside the data chunk")
        let pcm = try decoder.decodeAll()
        #expect(pcm.frameCount == 22_050)
        #expect(pcm.withUnsafeSamples(Array.init) == mp3.withUnsafeSamples(Array.init))
        #expect(decoder.warnings.isEmpty)
    }

    @Test func damagedMPEGInsideAWAVIsReportedAsSkippedData() throws {
        let decoder = try DecoderRegistry.shared.open(try source("wav-mpeg-layer3-damaged.wav", memory: false))
        let pcm = try decoder.decodeAll()
        #expect(pcm.frameCount > 15_000)
        #expect(decoder.warnings.contains { $0.kind == .skippedCorruptData })
        #expect(pcm.frameCount == decoder.frameCount || !decoder.isFrameCountExact)
    }

    /// A FLAC file whose comment block is shorter than its contents: libFLAC's metadata
    /// reader, and so libsndfile, refuses it whole; Spool plays its frames, which are intact,
    /// and says what it went past (and, cut short, where it ends). The same from the file
    /// decoder, from memory and from the stream decoder fed a byte at a time.
    @Test(arguments: [false, true])
    func aFLACWithAShortMetadataBlockPlaysItsFrames(memory: Bool) throws {
        let original = try DecoderRegistry.shared.open(path: Fixtures.path("flac-44100-stereo-s16.flac")).decodeAll()
        let samples = original.withUnsafeSamples(Array.init)
        for (name, frames) in [("flac-short-block.flac", 22_050), ("flac-short-block-cut.flac", 12_288)] {
            let decoder = try DecoderRegistry.shared.open(try source(name, memory: memory))
            #expect(decoder.frameCount == 22_050 && !decoder.isFrameCountExact, "STREAMINFO's claim, not verified")
            let pcm = try decoder.decodeAll()
            #expect(pcm.frameCount == frames, "\(name)")
            #expect(decoder.frameCount == frames, "counted once decoded")
            #expect(pcm.withUnsafeSamples(Array.init) == Array(samples.prefix(frames * 2)), "\(name): the original's frames")
            let warnings = decoder.warnings
            #expect(warnings.first?.kind == .skippedCorruptData && warnings.first?.byteOffset == 108, "\(warnings)")
            #expect(warnings.first?.description.contains("FLAC metadata is damaged at byte 108") == true, "\(warnings)")
            #expect(warnings.dropFirst().map(\.kind) == (frames < 22_050 ? [.truncated] : []), "\(name): \(warnings)")

            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: Fixtures.path("hostile/\(name)"))))
            var offset = 0
            let streamed = try StreamingDecoder(name: name) { buffer in
                guard offset < bytes.count, buffer.count > 0 else { return 0 }
                buffer[0] = bytes[offset]
                offset += 1
                return 1
            }
            let fromStream = try streamed.decodeAll()
            #expect(fromStream.withUnsafeSamples(Array.init) == Array(samples.prefix(frames * 2)), "\(name), streamed")
            #expect(streamed.warnings.map(\.kind) == warnings.map(\.kind), "\(name), streamed: \(streamed.warnings)")
        }
    }
}
