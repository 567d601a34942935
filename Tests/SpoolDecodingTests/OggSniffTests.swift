import Foundation
import Testing
import SpoolCore
@testable import SpoolDecoding
import SpoolTestSupport

/// The registry tells Ogg streams apart by what their first packet carries, and names what
/// it cannot decode. The files are in `Fixtures/opus/ogg` (made by
/// `Fixtures/make-opus-fixtures.sh`: flac --ogg, ffmpeg's libspeex and libtheora, a page
/// written by hand) and all named `.ogg`.
@Suite("Ogg payload sniffing")
struct OggSniffTests {
    static func bytes(_ name: String) throws -> [UInt8] { [UInt8](try OggFixtures.data(name)) }

    static func openError(_ source: AudioSource, registry: DecoderRegistry = .shared) -> AudioError? {
        do {
            _ = try registry.open(source)
            return nil
        } catch let error as AudioError {
            return error
        } catch {
            return nil
        }
    }

    @Test("the first packet names the codec", arguments: [
        ("ogg/flac.ogg", [OggPayload.flac]),
        ("ogg/speex.ogg", [.speex]),
        ("ogg/theora.ogg", [.theora]),
        ("ogg/unknown.ogg", [.unknown([0x02, 0x53, 0x50, 0x4C, 0x57, 0x00, 0x01, 0x00])]),
        ("ogg/random.ogg", []),
    ])
    func payloads(_ file: String, _ expected: [OggPayload]) throws {
        #expect(OggPayload.streams(in: try Self.bytes(file)) == expected)
    }

    @Test func vorbisFixturesAreVorbis() throws {
        let vorbis = [UInt8](try Data(contentsOf: URL(fileURLWithPath: Fixtures.path("vorbis-44100-stereo.ogg"))))
        #expect(OggPayload.streams(in: vorbis) == [.vorbis])
        #expect(OggPayload.isOgg(vorbis))
        #expect(!OggPayload.isOgg(try Self.bytes("ogg/random.ogg")))
    }

    @Test func multiplexedStreamsAreAllNamed() throws {
        // A Theora stream's first page, then a Vorbis stream's: one Ogg file carrying both.
        let theora = try Self.bytes("ogg/theora.ogg")
        let vorbis = [UInt8](try Data(contentsOf: URL(fileURLWithPath: Fixtures.path("vorbis-44100-stereo.ogg"))))
        let both = Array(theora.prefix(27 + Int(theora[26]) + theora[27..<(27 + Int(theora[26]))].reduce(0) { $0 + Int($1) }))
            + vorbis
        #expect(OggPayload.streams(in: both) == [.theora, .vorbis])
        #expect(OggPayload.describe(both) == "an Ogg stream carrying Theora video and Vorbis")
    }

    @Test("what Spool does not decode is named", arguments: [
        ("ogg/flac.ogg", "an Ogg stream carrying FLAC, which Spool does not decode"),
        ("ogg/speex.ogg", "an Ogg stream carrying Speex, which Spool does not decode"),
        ("ogg/theora.ogg", "an Ogg stream carrying Theora video, which Spool does not decode"),
        ("ogg/unknown.ogg",
         "an Ogg stream carrying an unknown codec (its first packet begins 02 53 50 4c 57 00 01 00), which Spool does not decode"),
    ])
    func unsupportedPayload(_ file: String, _ message: String) throws {
        let path = OggFixtures.path(file)
        let error = Self.openError(.file(path: path))
        #expect(error?.code == .unsupportedFormat)
        #expect(error?.message == "\(path): \(message)")
        // The same from memory, with or without a hint.
        let data = try OggFixtures.data(file)
        #expect(Self.openError(.memory(data, name: "m", typeHint: "ogg"))?.message == "m: \(message)")
        #expect(Self.openError(.memory(data, name: "m"))?.message == "m: \(message)")
    }

    @Test func randomBytesNamedOggAreNotCalledOgg() throws {
        let path = OggFixtures.path("ogg/random.ogg")
        let error = Self.openError(.file(path: path))
        #expect(error?.code == .unsupportedFormat)
        #expect(error?.message.hasPrefix("\(path): not an Ogg stream") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("not Vorbis") == false)
        // Whichever Ogg decoders are registered: the bytes are not Ogg.
        let plain = DecoderRegistry(factories: [.mp3, .vorbis, .sndfile])
        let data = try OggFixtures.data("ogg/random.ogg")
        for hint in ["ogg", "oga", "opus", "audio/ogg"] {
            let message = Self.openError(.memory(data, name: "r", typeHint: hint), registry: plain)?.message
            #expect(message?.hasPrefix("r: not an Ogg stream") == true, "\(hint): \(message ?? "")")
        }
        // Without an Ogg name, the usual answer.
        #expect(Self.openError(.memory(data, name: "r"))?.message.hasPrefix("r: not a recognised audio format") == true)
    }

    @Test func theVorbisDecoderIsOfferedOnlyVorbis() throws {
        let flac = try OggFixtures.data("ogg/flac.ogg")
        let vorbis = try Data(contentsOf: URL(fileURLWithPath: Fixtures.path("vorbis-44100-stereo.ogg")))
        #expect(try DecoderRegistry.shared.candidates(for: .memory(vorbis)).map(\.name) == ["vorbis"])
        #expect(throws: AudioError.self) { try DecoderRegistry.shared.candidates(for: .memory(flac, typeHint: "ogg")) }
        // Vorbis named anything still plays.
        let decoder = try DecoderRegistry.shared.open(.memory(vorbis, name: "v", typeHint: "opus"))
        #expect(decoder.info.codec == "Vorbis")
        #expect(decoder.frameCount == 22_050)
    }

    @Test func opusIsOpusWhateverItIsNamed() throws {
        let opus = try OggFixtures.data("opus-48000-stereo.opus")
        #expect(OggPayload.streams(in: [UInt8](opus)) == [.opus])
        #expect(try DecoderRegistry.shared.candidates(for: .memory(opus)).map(\.name) == ["opus"])
        for hint in [nil, "ogg", "opus", "vorbis", "mp3"] {
            let decoder = try DecoderRegistry.shared.open(.memory(opus, name: "o", typeHint: hint))
            #expect(decoder.info.codec == "Opus", "\(hint ?? "no hint")")
            #expect(decoder.frameCount == 24_000)
        }
        // Without the Opus decoder, the registry names it.
        let withoutOpus = DecoderRegistry(factories: [.mp3, .vorbis.claimingOnlyOgg(.vorbis), .sndfile])
        #expect(Self.openError(.memory(opus, name: "o"), registry: withoutOpus)?.message
                == "o: an Ogg stream carrying Opus, which Spool does not decode")
    }

    @Test func aProgramsOwnOggDecoderStillGetsItsPayload() throws {
        // The registry names payloads only when no decoder claims them.
        let registry = DecoderRegistry(factories: [.mp3, .vorbis.claimingOnlyOgg(.vorbis), .sndfile])
        registry.register(DecoderRegistryTests.oggFLAC)
        let decoder = try registry.open(.memory(try OggFixtures.data("ogg/flac.ogg"), typeHint: "ogg"))
        #expect(decoder.info.codec == "Ogg FLAC (toy)")
    }
}

/// The files under `Fixtures/opus`.
enum OggFixtures {
    static let directory = Fixtures.directory.appendingPathComponent("opus")
    static func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
    static func data(_ name: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: path(name))) }
}

extension DecoderRegistryTests {
    /// Claims Ogg FLAC and decodes nothing: enough to show who the registry picks.
    static let oggFLAC = DecoderFactory(name: "oggflac", typeHints: ["ogg"],
                                        sniff: { OggPayload.streams(in: $0).contains(.flac) }, open: { _ in
        OggFLACStandIn()
    })
}

final class OggFLACStandIn: AudioDecoder {
    let format = try! AudioFormat(sampleRate: 16_000, channelCount: 1)
    let frameCount = 0
    let position = 0
    let info = AudioFileInfo(container: "Ogg", codec: "Ogg FLAC (toy)")
    let warnings: [DecodeWarning] = []
    func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int { 0 }
    func seek(toFrame frame: Int) throws {}
}
