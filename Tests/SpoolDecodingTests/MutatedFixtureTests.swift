import Foundation
import Testing
import SpoolCore
@testable import SpoolDecoding
import SpoolTestSupport

/// Every fixture, cut short (at 30, 60 and 90 % of its bytes) and with 300 bytes zeroed (at 40
/// and 70 %): a count `frameCount` calls exact is what decoding produces, and a decode that
/// ends short of the count it gave says why. (Found this way: a FLAC whose frame libFLAC drops
/// silently, or whose reader stops at damage, decoded thousands of frames short of an exact
/// count; an Ogg Vorbis whose only audio page was damaged decoded nothing, with no warning.)
@Suite("Mutated fixtures")
struct MutatedFixtureTests {
    static let mutations: [(name: String, apply: @Sendable ([UInt8]) -> [UInt8])] = [
        ("cut at 30 %", { Array($0.prefix($0.count * 3 / 10)) }),
        ("cut at 60 %", { Array($0.prefix($0.count * 6 / 10)) }),
        ("cut at 90 %", { Array($0.prefix($0.count * 9 / 10)) }),
        ("300 bytes zeroed at 40 %", { zeroed($0, at: $0.count * 4 / 10) }),
        ("300 bytes zeroed at 70 %", { zeroed($0, at: $0.count * 7 / 10) }),
    ]

    static func zeroed(_ bytes: [UInt8], at start: Int) -> [UInt8] {
        var out = bytes
        for i in start..<min(out.count, start + 300) { out[i] = 0 }
        return out
    }

    @Test(arguments: FrameCountAgreementTests.files)
    func countsStayTrueUnderDamage(name: String) throws {
        let bytes = try Fixtures.bytes(name)
        let ext = URL(fileURLWithPath: name).pathExtension
        for mutation in Self.mutations {
            let source = AudioSource.memory(Data(mutation.apply(bytes)), name: "\(name), \(mutation.name)", typeHint: ext)
            guard let decoder = try? DecoderRegistry.shared.open(source) else { continue }  // refused: an error, not a silent loss
            let claimed = decoder.frameCount, exact = decoder.isFrameCountExact
            guard let decoded = try? decoder.decodeAll().frameCount else { continue }
            if exact {
                #expect(decoded == claimed, "\(name), \(mutation.name): an exact count of \(claimed), \(decoded) decoded")
            } else if decoded < claimed {
                #expect(!decoder.warnings.isEmpty, "\(name), \(mutation.name): \(claimed) claimed, \(decoded) decoded, no warning")
            }
        }
    }

    /// An Ogg Vorbis file with a page taken out of its middle and 2 MiB of junk after its end:
    /// `info`'s count is exact only if decoding gives it, and a short decode says why.
    @Test(arguments: ["long/tone-12s.ogg"])
    func anOggWithAHoleAndTrailingJunkKeepsItsCountTrue(name: String) throws {
        let bytes = try Fixtures.bytes(name)
        // The pages: each starts with "OggS"; the one at the middle goes.
        var starts: [Int] = []
        for i in 0..<(bytes.count - 4) where bytes[i] == 0x4F && bytes[i + 1] == 0x67 && bytes[i + 2] == 0x67 && bytes[i + 3] == 0x53 {
            starts.append(i)
        }
        try #require(starts.count >= 5, "\(name): \(starts.count) pages")
        let middle = starts.count / 2
        var generator = SplitMix(seed: 7)
        let junk = (0..<(2 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let holed = Array(bytes[..<starts[middle]]) + Array(bytes[starts[middle + 1]...]) + junk
        let decoder = try DecoderRegistry.shared.open(.memory(Data(holed), name: name, typeHint: "ogg"))
        let claimed = decoder.frameCount, exact = decoder.isFrameCountExact
        let decoded = try decoder.decodeAll().frameCount
        if exact { #expect(decoded == claimed, "\(name): exact \(claimed), decoded \(decoded)") }
        #expect(!decoder.warnings.isEmpty, "\(name): a missing page and junk, and no warning")
        #expect(decoder.frameCount == decoded)
    }
}
