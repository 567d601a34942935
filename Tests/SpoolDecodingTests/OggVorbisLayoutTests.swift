import Foundation
import Testing
import SpoolCore
@testable import SpoolDecoding
import SpoolTestSupport

/// The walk of an Ogg Vorbis input before libvorbisfile sees it: links, checked headers and
/// frame counts that are exact for regular streams.
@Suite("Ogg Vorbis layout")
struct OggVorbisLayoutTests {
    func layout(_ file: String) throws -> OggVorbisLayout {
        OggVorbisLayout(reader: try ByteReader(source: .file(path: Fixtures.path(file))))
    }

    @Test("every good file is regular and its count is the reference's",
          arguments: Fixtures.all.filter { $0.container == "Ogg" })
    func goodFiles(_ entry: Fixtures.Entry) throws {
        let layout = try layout(entry.file)
        let streams = layout.links.compactMap(\.vorbis)
        #expect(streams.count == layout.links.count)
        for stream in streams {
            #expect(stream.headerProblem == nil)
            #expect(stream.isExact, "\(stream.irregularities)")
        }
        #expect(streams.map(\.frames).reduce(0, +) == entry.frames)
        #expect(layout.gaps.isEmpty)
    }

    @Test func chainedLinksOfDifferentFormats() throws {
        let layout = try layout("broken/vorbis-chained-mixed.ogg")
        #expect(layout.links.count == 2)
        #expect(layout.links.map { $0.vorbis?.identification?.sampleRate } == [44100, 22050])
        #expect(layout.links.map { $0.vorbis?.frames } == [22050, 11025])
        #expect(layout.links[0].byteRange.upperBound == layout.links[1].byteRange.lowerBound)
    }

    @Test func singlePageLinks() throws {
        let layout = try layout("broken/vorbis-chained-short-links.ogg")
        #expect(layout.links.map { $0.vorbis?.frames } == [22050, 22050])
        #expect(layout.links.allSatisfy { $0.vorbis?.isExact == true })
    }

    @Test("other codecs are named, not analysed", arguments: [
        ("ogg/opus-48000-stereo.opus", OggPayload.opus), ("ogg/flac-48000-stereo.oga", .flac), ("ogg/speex-16000-mono.spx", .speex),
    ])
    func otherCodecs(_ file: String, _ codec: OggPayload) throws {
        let layout = try layout(file)
        #expect(layout.links.first?.codecs == [codec])
        #expect(layout.links.first?.vorbis == nil)
    }
}
