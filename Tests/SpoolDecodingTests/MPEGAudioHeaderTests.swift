import Testing
@testable import SpoolDecoding
import SpoolTestSupport

/// Frame headers are parsed from four bytes without an array (every frame of a file is); each
/// field against ISO 11172-3 / 13818-3's tables, for every header value.
@Suite("MPEG audio frame header")
struct MPEGAudioHeaderTests {
    /// kbit/s by [MPEG-1?][layer 1...3][index], from the standards' tables.
    private static func kilobits(mpeg1: Bool, layer: Int, index: Int) -> Int {
        let table: [Int]
        switch (mpeg1, layer) {
        case (true, 1): table = [0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448]
        case (true, 2): table = [0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384]
        case (true, _): table = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320]
        case (false, 1): table = [0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256]
        case (false, _): table = [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160]
        }
        return table[index]
    }

    @Test func everyHeaderValueParsesToTheStandardsFields() {
        var valid = 0
        for b1 in 0xE0...0xFF {
            for b2 in 0...0xFF {
                for b3 in [0x00, 0x40, 0x80, 0xC0] {
                    let h = MPEGAudioHeader(0xFF, UInt8(b1), UInt8(b2), UInt8(b3))
                    #expect(h == MPEGAudioHeader([0xFF, UInt8(b1), UInt8(b2), UInt8(b3)]))
                    let versionBits = (b1 >> 3) & 3, layerBits = (b1 >> 1) & 3
                    let index = b2 >> 4, rateIndex = (b2 >> 2) & 3, padding = (b2 >> 1) & 1
                    guard versionBits != 1, layerBits != 0, index != 0, index != 15, rateIndex != 3 else {
                        #expect(h == nil)
                        continue
                    }
                    guard let h else { Issue.record("\(b1) \(b2) \(b3) is a valid header"); continue }
                    valid += 1
                    let mpeg1 = versionBits == 3
                    let layer = 4 - layerBits
                    let rate = [44100, 48000, 32000][rateIndex] >> (mpeg1 ? 0 : versionBits == 2 ? 1 : 2)
                    let bitRate = Self.kilobits(mpeg1: mpeg1, layer: layer, index: index) * 1000
                    #expect(h.layer == layer)
                    #expect(h.version == (mpeg1 ? .mpeg1 : versionBits == 2 ? .mpeg2 : .mpeg25))
                    #expect(h.sampleRate == rate)
                    #expect(h.bitRate == bitRate)
                    #expect(h.channelCount == (b3 >> 6 == 3 ? 1 : 2))
                    let samples = layer == 1 ? 384 : layer == 2 || mpeg1 ? 1152 : 576
                    #expect(h.samplesPerFrame == samples)
                    // Bytes: samples / 8 × bit rate / rate, Layer I in 4-byte slots.
                    let bytes = layer == 1 ? (12 * bitRate / rate + padding) * 4 : samples / 8 * bitRate / rate + padding
                    #expect(h.frameBytes == bytes)
                }
            }
        }
        // Versions × layers × protection × bit rates × sample rates × padding × private bit × b3.
        #expect(valid == 3 * 3 * 2 * 14 * 3 * 2 * 2 * 4)
    }

    @Test func aHeaderNeedsItsSyncAndFourBytes() {
        #expect(MPEGAudioHeader(0xFE, 0xFB, 0x90, 0x64) == nil)
        #expect(MPEGAudioHeader(0xFF, 0xDB, 0x90, 0x64) == nil)
        #expect(MPEGAudioHeader([0xFF, 0xFB, 0x90]) == nil)
        #expect(MPEGAudioHeader([0x00, 0xFF, 0xFB, 0x90], at: 1) == nil)
        #expect(MPEGAudioHeader([0x00, 0xFF, 0xFB, 0x90, 0x64], at: 1)?.frameBytes == 417)
        #expect(MPEGAudioHeader([0xFF, 0xFB, 0x90, 0x64], at: -1) == nil)
    }
}
