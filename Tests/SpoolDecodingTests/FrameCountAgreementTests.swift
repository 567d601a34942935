import Foundation
import Testing
import SpoolCore
@testable import SpoolDecoding

/// `frameCount` at open is what `spool info` prints; it must equal what decoding produces, or
/// the decoder must say that it is a header's unverified claim. Checked on every fixture that
/// opens, good or damaged.
@Suite("Frame count agreement")
struct FrameCountAgreementTests {
    static let files: [String] = {
        let fm = FileManager.default
        var names: [String] = []
        for folder in ["", "broken", "hostile", "mp3", "ogg", "opus"] {
            let dir = Fixtures.directory.appendingPathComponent(folder)
            guard let items = try? fm.contentsOfDirectory(atPath: dir.path) else { continue }
            for item in items.sorted() {
                let name = folder.isEmpty ? item : "\(folder)/\(item)"
                var isDirectory: ObjCBool = false
                guard fm.fileExists(atPath: Fixtures.path(name), isDirectory: &isDirectory), !isDirectory.boolValue,
                      !item.hasSuffix(".json"), !item.hasSuffix(".md"), !item.hasSuffix(".sh"), !item.hasSuffix(".py"),
                      !item.hasSuffix(".f32") else { continue }
                names.append(name)
            }
        }
        return names
    }()

    @Test(arguments: files)
    func infoAndDecodeAgree(name: String) throws {
        guard let decoder = try? DecoderRegistry.shared.open(path: Fixtures.path(name)) else { return }
        let claimed = decoder.frameCount
        let exact = decoder.isFrameCountExact
        var decoded = 0
        do { decoded = try decoder.decodeAll().frameCount } catch { return }  // an error is reported, not silent
        if exact {
            #expect(claimed == decoded, "\(name): info says \(claimed) frames, decode gives \(decoded)")
        } else {
            #expect(decoder.frameCount == decoded, "\(name): after decoding, frameCount must be what was decoded")
        }
    }

    @Test func aTruncatedFLACIsCountedAtOpen() throws {
        let decoder = try DecoderRegistry.shared.open(path: Fixtures.path("broken/truncated.flac"))
        #expect(decoder.frameCount == 20_480)
        #expect(decoder.warnings.map(\.kind) == [.truncated])
        let pcm = try decoder.decodeAll()
        #expect(pcm.frameCount == 20_480)
        #expect(decoder.warnings.count == 1, "one warning for one cut")
        // What decodes equals the intact file's first frames.
        let intact = try DecoderRegistry.shared.open(path: Fixtures.path("flac-44100-stereo-s16.flac")).decodeAll()
        let n = 20_480 * 2
        #expect(pcm.withUnsafeSamples { Array($0.prefix(n)) } == intact.withUnsafeSamples { Array($0.prefix(n)) } || intact.frameCount < 20_480)
    }
}
