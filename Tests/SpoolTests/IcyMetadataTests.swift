import Foundation
import Testing
@testable import Spool

/// The parts of an HTTP source that need no server: radio metadata taken out of the bytes in
/// any pieces, and the `Content-Range` header.
@Suite("ICY metadata and Content-Range")
struct IcyMetadataTests {
    /// A radio body: `audio` with a block after every `interval` bytes, titled as `titles` say.
    static func interleave(_ audio: [UInt8], interval: Int, titles: [Int: String]) -> [UInt8] {
        var out: [UInt8] = []
        var sent = 0
        while sent < audio.count {
            let take = min(interval, audio.count - sent)
            out += audio[sent..<(sent + take)]
            sent += take
            guard take == interval else { break }
            if let title = titles[sent] {
                var text = Array("StreamTitle='\(title)';StreamUrl='';".utf8)
                text += [UInt8](repeating: 0, count: (16 - text.count % 16) % 16)
                out.append(UInt8(text.count / 16))
                out += text
            } else {
                out.append(0)
            }
        }
        return out
    }

    @Test("audio bytes come out whole and each new title at its audio byte, in pieces of any size",
          arguments: [1, 7, 100, 4096, 1 << 20])
    func splitInPieces(_ piece: Int) {
        let audio = (0..<50_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 7) }
        let body = Self.interleave(audio, interval: 8192, titles: [8192: "One", 16_384: "One", 24_576: "Two – ü'quoted'", 40_960: "Three"])
        var reader = IcyMetadataReader(interval: 8192)
        var out: [UInt8] = []
        var titles: [(String, Int)] = []
        var start = 0
        while start < body.count {
            let end = min(body.count, start + piece)
            var piecesTitles: [(String, Int)] = []
            let before = out.count
            body[start..<end].withUnsafeBytes { reader.split($0, audio: &out, titles: &piecesTitles) }
            titles += piecesTitles.map { ($0.0, $0.1 + before) }
            start = end
        }
        #expect(out == audio)
        // "One" twice is told once; a title may hold quotes and any UTF-8.
        #expect(titles.map(\.0) == ["One", "Two – ü'quoted'", "Three"])
        #expect(titles.map(\.1) == [8192, 24_576, 40_960])
    }

    @Test("without an interval every byte is audio")
    func noInterval() {
        var reader = IcyMetadataReader(interval: nil)
        var out: [UInt8] = []
        var titles: [(String, Int)] = []
        let bytes: [UInt8] = [0, 1, 2, 3, 255]
        bytes.withUnsafeBytes { reader.split($0, audio: &out, titles: &titles) }
        #expect(out == bytes)
        #expect(titles.isEmpty)
    }

    @Test("a block's title: between StreamTitle=' and ';, Latin-1 where it is not UTF-8, nil without the key")
    func titles() {
        #expect(IcyMetadataReader.title(in: Array("StreamTitle='A - B';StreamUrl='x';".utf8) + [0, 0]) == "A - B")
        #expect(IcyMetadataReader.title(in: Array("StreamTitle='Caf".utf8) + [0xE9] + Array("';".utf8)) == "Café")
        #expect(IcyMetadataReader.title(in: Array("StreamUrl='x';".utf8)) == nil)
        #expect(IcyMetadataReader.title(in: Array("StreamTitle='';".utf8)) == "")
    }

    @Test("Content-Range: first, last and total, or nil for anything else")
    func contentRange() {
        let range = ContentRange("bytes 0-99/1000")
        #expect(range?.first == 0 && range?.last == 99 && range?.total == 1000)
        #expect(ContentRange("bytes 100-199/*")?.total == nil)
        #expect(ContentRange("bytes 100-199/*")?.first == 100)
        for bad in ["", "bytes", "bytes 5-4/10", "bytes 0-10/10", "items 0-1/2", "bytes -1-2/3", "bytes 0-99999999999999999999/1"] {
            #expect(ContentRange(bad) == nil, "\(bad)")
        }
    }
}
