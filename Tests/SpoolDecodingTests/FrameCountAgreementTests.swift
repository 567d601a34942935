import Foundation
import Testing
import SpoolCore
@testable import SpoolDecoding
import SpoolTestSupport

/// `frameCount` at open is what `spool info` prints; it must equal what decoding produces, or
/// the decoder must say that it is a header's unverified claim. Checked on every fixture that
/// opens, good or damaged.
@Suite("Frame count agreement")
struct FrameCountAgreementTests {
    static let files: [String] = {
        let skipped: Set<String> = ["json", "md", "sh", "py", "f32", "txt"]
        guard let walk = FileManager.default.enumerator(atPath: Fixtures.directory.path) else { return [] }
        return walk.compactMap { $0 as? String }
            .filter { !$0.hasPrefix("reference/") && !$0.contains("/reference/") }
            .filter { name in
                var isDirectory: ObjCBool = false
                return FileManager.default.fileExists(atPath: Fixtures.path(name), isDirectory: &isDirectory)
                    && !isDirectory.boolValue && !skipped.contains(URL(fileURLWithPath: name).pathExtension)
            }
            .sorted()
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
