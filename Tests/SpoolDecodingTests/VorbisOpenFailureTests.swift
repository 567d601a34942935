import Foundation
import Testing
import SpoolCore
@testable import SpoolDecoding
import SpoolTestSupport

/// Ogg input that is not Vorbis is refused with an error that says what it is, and refusing
/// it frees libvorbisfile's state exactly once (it was freed twice: the initializer freed it
/// and threw after every stored property was set, so `deinit` ran and freed it again).
@Suite("Ogg input that is not Vorbis")
struct VorbisOpenFailureTests {
    static func data(_ name: String) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: Fixtures.path("ogg/\(name)")))
    }

    func failure(_ source: AudioSource) -> AudioError? {
        do {
            _ = try VorbisDecoder(source: source)
            return nil
        } catch let error as AudioError {
            return error
        } catch {
            return nil
        }
    }

    @Test("another codec in Ogg is refused, named, many times over", arguments: [
        ("opus-48000-stereo.opus", "Opus"), ("flac-48000-stereo.oga", "FLAC"), ("speex-16000-mono.spx", "Speex"),
    ])
    func otherCodec(_ file: String, _ codec: String) throws {
        let bytes = try Self.data(file)
        // Many opens: a double free corrupts the heap and aborts within a few (at once under
        // AddressSanitizer).
        for round in 0..<200 {
            let source: AudioSource = round.isMultiple(of: 2)
                ? .memory(bytes, name: file) : .file(path: Fixtures.path("ogg/\(file)"))
            let error = failure(source)
            #expect(error?.code == .unsupportedFormat)
            #expect(error?.message.contains(codec) == true, "\(error?.message ?? "no error")")
            #expect(error?.message.contains(file) == true)
            if error?.code != .unsupportedFormat { break }
        }
    }

    @Test func noPageAfterTheCapturePattern() throws {
        let file = "random-after-capture-pattern.ogg"
        let bytes = try Self.data(file)
        for _ in 0..<200 {
            let error = failure(.memory(bytes, name: file))
            #expect(error?.code == .corruptData, "\(error?.message ?? "no error")")
            #expect(error?.message.contains("not Vorbis") == false)
            if error?.code != .corruptData { break }
        }
    }

    @Test func aValidPageOfAnUnknownCodec() throws {
        let file = "random-packet.ogg"
        let bytes = try Self.data(file)
        for _ in 0..<200 {
            let error = failure(.memory(bytes, name: file))
            #expect(error?.code == .unsupportedFormat, "\(error?.message ?? "no error")")
            #expect(error?.message.contains("unknown codec") == true)
            if error?.code != .unsupportedFormat { break }
        }
    }

    @Test func randomPayloadsAfterAValidPage() throws {
        // A valid Ogg page of noise, followed by noise, in many variants: refused every time,
        // never "not Vorbis" when it is not even an Ogg stream of any known codec.
        var generator = SeededGenerator(seed: 0x5EED)
        for round in 0..<300 {
            var bytes = [UInt8]("OggS".utf8)
            let length = Int.random(in: 0...3000, using: &generator)
            bytes += (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if round.isMultiple(of: 3), bytes.count > 27 {
                bytes[4] = 0  // version 0: a plausible page header, checksum still wrong
            }
            let error = failure(.memory(Data(bytes), name: "noise-\(round).ogg"))
            #expect(error != nil)
            #expect(error?.code == .corruptData || error?.code == .emptyInput || error?.code == .truncated,
                    "\(error?.message ?? "no error")")
        }
    }

    @Test func libvorbisfileStatusesMapToCodesAndSentences() {
        let expected: [(VorbisStatus, AudioError.Code)] = [
            (.noData, .libraryFailure), (.endOfFile, .truncated), (.hole, .corruptData), (.readFailed, .readFailed),
            (.fault, .libraryFailure), (.notImplemented, .unsupportedFormat), (.invalidArgument, .libraryFailure),
            (.notVorbis, .unsupportedFormat), (.badHeader, .corruptData), (.badVersion, .unsupportedFormat),
            (.notAudio, .corruptData), (.badPacket, .corruptData), (.badLink, .corruptData), (.notSeekable, .libraryFailure),
        ]
        #expect(expected.map(\.0) == VorbisStatus.all)
        for (status, code) in expected {
            let error = status.error("x.ogg", call: "ov_read_float", context: "decoding failed at frame 7")
            #expect(error.code == code, "\(status.name)")
            #expect(error.message.hasPrefix("x.ogg: decoding failed at frame 7: "))
            #expect((error.underlying as? LibraryStatus)?.code == status.rawValue)
            #expect(status.name.hasPrefix("OV_"))
        }
        #expect(Set(VorbisStatus.all.map(\.description)).count == VorbisStatus.all.count)
        #expect(Set(VorbisStatus.all.map(\.name)).count == VorbisStatus.all.count)
        #expect(VorbisStatus(-999).errorCode == .libraryFailure)
        #expect(VorbisStatus(-999).description.contains("-999"))
    }
}
