import Foundation
import Testing
import SpoolCore
@testable import SpoolDecoding
import SpoolTestSupport

/// Tags anywhere in an MP3 (ID3v2 in front or appended, APEv2 with or without header,
/// Lyrics3 v1/v2, ID3v1, stacked in any order or between frames) are read or skipped,
/// never played and never taken for corruption.
@Suite("MP3 tags")
struct MP3TagTests {
    @Test("tag text", arguments: MP3Fixtures.all.filter { !$0.tags.isEmpty })
    func tags(_ entry: MP3Fixtures.Entry) throws {
        let decoder = try DecoderRegistry.shared.open(path: entry.path)
        for (key, value) in entry.tags {
            #expect(decoder.info.tags[key] == value, "\(key)")
        }
    }

    @Test("no warning on a valid file", arguments: MP3Fixtures.all.filter { $0.damaged != true })
    func validFilesWarnNothing(_ entry: MP3Fixtures.Entry) throws {
        let decoder = try DecoderRegistry.shared.open(path: entry.path)
        _ = try decoder.decodeAll()
        #expect(decoder.warnings.isEmpty, "\(decoder.warnings)")
    }
}

/// Every size a tag or header states is checked against the bytes there are: absurd ones
/// neither trap, nor allocate, nor hide or invent audio.
@Suite("MP3 tag and header parsers are bounded")
struct MP3ParserBoundsTests {
    static let frames: [UInt8] = Array(try! Data(contentsOf: URL(fileURLWithPath: MP3Fixtures.entry("base-44100-stereo-cbr.mp3").path)))
    static let rawFrames = MP3Fixtures.entry("base-44100-stereo-cbr.mp3").rawFrames

    static func le32(_ v: UInt32) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24)] }
    static func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }

    /// Decodes `bytes` from memory; the frame count must be what decoding gives.
    func decode(_ bytes: [UInt8]) throws -> (frames: Int, decoder: any AudioDecoder) {
        let decoder = try DecoderRegistry.shared.open(.memory(Data(bytes), name: "crafted", typeHint: "mp3"))
        let pcm = try decoder.decodeAll()
        #expect(pcm.frameCount == decoder.frameCount)
        return (pcm.frameCount, decoder)
    }

    @Test func id3v2ClaimingMoreThanTheFileIsJunkBeforeTheFrames() throws {
        let header: [UInt8] = Array("ID3".utf8) + [4, 0, 0, 0x7F, 0x7F, 0x7F, 0x7F] + Array("TIT2".utf8)
        #expect(ID3v2Tag.size(header: header) == 10 + (1 << 28) - 1)
        var tags = AudioTags()
        ID3v2Tag.read(header, into: &tags)
        #expect(tags.fields.isEmpty)
        #expect(try decode(header + Self.frames).frames == Self.rawFrames)
    }

    @Test func id3v2FramesAndExtendedHeaderClaimingGigabytes() throws {
        var tags = AudioTags()
        // v2.3, extended header of 0xFFFFFFFF bytes.
        let extended: [UInt8] = Array("ID3".utf8) + [3, 0, 0x40, 0, 0, 0, 20] + Self.be32(0xFFFF_FFFF) + [UInt8](repeating: 0, count: 16)
        ID3v2Tag.read(extended, into: &tags)
        // v2.3 and v2.4 text frames of 0xFFFFFFFF bytes, and a truncated UTF-16 one.
        for major: UInt8 in [2, 3, 4] {
            let idBytes = major == 2 ? 3 : 4
            let frame: [UInt8] = Array("TIT2".utf8.prefix(idBytes)) + (major == 2 ? [0xFF, 0xFF, 0xFF] : Self.be32(0xFFFF_FFFF) + [0, 0]) + [1, 0xFF]
            ID3v2Tag.read(Array("ID3".utf8) + [major, 0, 0, 0, 0, 0, UInt8(frame.count)] + frame, into: &tags)
        }
        let odd: [UInt8] = Array("TIT2".utf8) + Self.be32(4) + [0, 0] + [1, 0xFF, 0xFE, 0x41]
        ID3v2Tag.read(Array("ID3".utf8) + [3, 0, 0x80, 0, 0, 0, UInt8(odd.count)] + odd + [0xFF], into: &tags)
        #expect(tags.fields.isEmpty)
    }

    @Test func apeFooterWithAbsurdSizes() throws {
        // A footer claiming 4 GiB of tag, then one claiming 2^32-1 items of 2^32-1 bytes.
        let huge = Array("APETAGEX".utf8) + Self.le32(2000) + Self.le32(0xFFFF_FFFF) + Self.le32(0xFFFF_FFFF)
            + Self.le32(0) + [UInt8](repeating: 0, count: 8)
        let (hugeFrames, hugeDecoder) = try decode(Self.frames + huge)
        #expect(hugeFrames == Self.rawFrames)
        // The footer that does not fit is not a tag: bytes after the frames, real damage.
        #expect(hugeDecoder.warnings.map(\.kind) == [.skippedCorruptData])

        let item = Self.le32(0xFFFF_FFFF) + Self.le32(0) + Array("Title".utf8) + [0] + Array("x".utf8)
        let footer = Array("APETAGEX".utf8) + Self.le32(2000) + Self.le32(UInt32(item.count + 32)) + Self.le32(0xFFFF_FFFF)
            + Self.le32(0) + [UInt8](repeating: 0, count: 8)
        var tags = AudioTags()
        APETagFrame.read(items: item, count: 0x7FFF_FFFF, into: &tags)
        #expect(tags.fields.isEmpty)
        let (frames, decoder) = try decode(Self.frames + item + footer)
        #expect(frames == Self.rawFrames)
        #expect(decoder.warnings.isEmpty)
    }

    @Test func lyrics3MarkersWithoutTheirTag() throws {
        // LYRICS200 claiming 999999 bytes, and LYRICSEND with no LYRICSBEGIN: not tags.
        for tail in ["999999LYRICS200", "LYRICSEND", "LYRICSBEGINLYRICS200"] {
            let (frames, decoder) = try decode(Self.frames + Array(tail.utf8))
            #expect(frames == Self.rawFrames)
            #expect(decoder.warnings.map(\.kind) == [.skippedCorruptData], "\(tail)")
        }
        // A Lyrics3v2 tag between frames whose size digits lie.
        let lying = Array("LYRICSBEGININD00003110".utf8) + Array("000005LYRICS200".utf8)
        #expect(try decode(Self.frames + lying).frames == Self.rawFrames)
    }

    @Test func headerFramesClaimingBillions() throws {
        // A VBRI frame claiming 2^32-1 frames and bytes: the frames present decide, and the
        // claim reads as a cut-off file.
        let vbri = try Data(contentsOf: URL(fileURLWithPath: MP3Fixtures.entry("vbri-cbr.mp3").path))
        var bytes = [UInt8](vbri)
        bytes.replaceSubrange((36 + 10)..<(36 + 18), with: Self.be32(0xFFFF_FFFF) + Self.be32(0xFFFF_FFFF))
        let (frames, decoder) = try decode(bytes)
        #expect(frames == Self.rawFrames)
        #expect(decoder.warnings.map(\.kind) == [.truncated])
        #expect(MPEGInfoFrame(frame: Array(bytes.prefix(60)), header: MPEGAudioHeader(bytes)!)?.frames == 0xFFFF_FFFF)
        // An Info frame cut inside its fields: 'Xing' sits at 36 (MPEG-1 stereo), LAME's
        // delay and padding end at 180. What is cut off is not read, nor made up.
        let lame = [UInt8](try Data(contentsOf: URL(fileURLWithPath: MP3Fixtures.entry("lame-44100-stereo-vbr.mp3").path)))
        let header = try #require(MPEGAudioHeader(lame))
        for cut in [37, 40, 43, 44, 47, 48, 60, 150, 179, 180, header.frameBytes] {
            let info = MPEGInfoFrame(frame: Array(lame.prefix(cut)), header: header)
            #expect((info != nil) == (cut >= 44), "\(cut)")
            #expect((info?.frames != nil) == (cut >= 48), "\(cut)")
            #expect((info?.lame != nil) == (cut >= 180), "\(cut)")
        }
        let whole = MPEGInfoFrame(frame: Array(lame.prefix(header.frameBytes)), header: header)
        #expect(whole?.lame?.delay == 576)
        #expect(whole?.startTrim == MP3Fixtures.entry("lame-44100-stereo-vbr.mp3").startTrim)
    }

    @Test func aFileOfNothingButTagsEnds() throws {
        let id3v1 = Array("TAG".utf8) + [UInt8](repeating: 0x41, count: 125)
        let stacked = [UInt8]((0..<500).flatMap { _ in id3v1 })
        #expect(throws: AudioError.self) { _ = try decode(Array("ID3".utf8) + [3, 0, 0, 0, 0, 0, 0] + stacked) }
        let (frames, _) = try decode(Self.frames + stacked)
        #expect(frames == Self.rawFrames)
    }
}
