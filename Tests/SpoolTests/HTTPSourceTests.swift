import Foundation
#if canImport(Glibc)
import Glibc
#endif
import HTTPTestSupport
@testable import Spool
import SpoolCore
import SpoolTestSupport
import Testing

/// Audio over HTTP from a real nginx on 127.0.0.1: decoded as it downloads, every frame what
/// the file decoder gives, seeks by Range exact, and the server's refusals clear errors.
@Suite("HTTP sources against nginx")
struct HTTPSourceTests {
    static let files = ["mp3-44100-stereo.mp3", "vorbis-44100-stereo.ogg", "flac-44100-stereo-s16.flac", "wav-44100-stereo-s16.wav"]

    static func server() throws -> NginxServer {
        try NginxServer(root: URL(fileURLWithPath: fixture("mp3-44100-stereo.mp3")).deletingLastPathComponent())
    }

    @Test("a URL decodes to the file's frames, sample for sample, in small windows and over a slow link", arguments: files)
    func decodesAsTheFile(_ name: String) throws {
        let nginx = try Self.server()
        let reference = try DecoderRegistry.shared.open(path: fixture(name)).decodeAll()
        let small = HTTPSource.Configuration(readAheadBytes: 8192, requestBytes: 4096)
        for (path, configuration) in [(name, small), ("rate/200000/\(name)", HTTPSource.Configuration())] {
            let (decoder, source) = try RemoteAudio.open(nginx.url(path), configuration: configuration)
            let decoded = try decoder.decodeAll()
            #expect(decoded.samples == reference.samples, "\(path)")
            #expect(decoder.warnings.isEmpty, "\(path): \(decoder.warnings)")
            #expect(source.response.acceptsRanges)
            #expect(source.bufferedBytes == 0)
        }
    }

    @Test("a seek by Range reads the file decoder's frames from there", arguments: files)
    func seeksByRange(_ name: String) throws {
        let nginx = try Self.server()
        let reference = try DecoderRegistry.shared.open(path: fixture(name)).decodeAll()
        let channels = reference.format.channelCount
        let (decoder, _) = try RemoteAudio.open(nginx.url(name), configuration: .init(readAheadBytes: 4096, requestBytes: 2048))
        decoder.forwardDecodeSeconds = 0
        decoder.keptFrames = 0
        decoder.seeksExactly = true
        for target in [reference.frameCount * 2 / 3, reference.frameCount / 4, 0] {
            try decoder.seek(toFrame: target)
            var out = [Float](repeating: 0, count: 1_000 * channels)
            let got = try out.withUnsafeMutableBufferPointer { try decoder.read(into: $0) }
            #expect(got == 1_000)
            #expect(out == Array(reference.samples[(target * channels)..<((target + 1_000) * channels)]), "\(name) from \(target)")
        }
    }

    @Test("requests cancelled as soon as they start, thousands of times over, leave the source reading the right bytes")
    func requestsCancelledAsTheyStart() throws {
        // Each seek outside the held bytes cancels the request the last one just started: the
        // cancellation that FoundationNetworking's URL cache lookup once raced into a trap.
        let nginx = try Self.server()
        let name = "wav-44100-stereo-s16.wav"
        let file = try [UInt8](Data(contentsOf: URL(fileURLWithPath: fixture(name))))
        let source = try HTTPSource(url: nginx.url(name), configuration: .init(readAheadBytes: 4096, requestBytes: 1024, keepBehindBytes: 0))
        var generator = SplitMix(seed: 7)
        // 20 000 tripped the trap in every run with the cache on; the sanitized runs, ten times
        // slower, take fewer.
        for _ in 0..<(TestEnvironment.underSanitizer ? 2_000 : 20_000) {
            try source.seek(toByte: Int(generator.next() % UInt64(file.count - 4096)))
        }
        let offset = file.count / 3
        try source.seek(toByte: offset)
        var bytes = [UInt8](repeating: 0, count: 3000)
        var filled = 0
        while filled < bytes.count {
            let got = try bytes[filled...].withUnsafeMutableBytes { try source.read(into: $0) }
            #expect(got > 0)
            if got == 0 { break }
            filled += got
        }
        #expect(bytes == Array(file[offset..<(offset + bytes.count)]))
    }

    @Test("a connection cut mid-body is resumed by Range at the byte where it broke: every frame once, none lost", arguments: [
        "mp3-44100-stereo.mp3", "wav-44100-stereo-s16.wav",
    ])
    func resumesWhereTheConnectionBroke(_ name: String) throws {
        let nginx = try Self.server()
        let proxy = try FaultProxy(targetPort: nginx.port)
        let reference = try DecoderRegistry.shared.open(path: fixture(name)).decodeAll()
        let cut = try Data(contentsOf: URL(fileURLWithPath: fixture(name))).count * 2 / 5
        proxy.cutNextResponse(afterBodyBytes: cut)
        let (decoder, source) = try RemoteAudio.open(proxy.url(name))
        let decoded = try decoder.decodeAll()
        #expect(decoded.samples == reference.samples)
        #expect(decoder.warnings.isEmpty, "\(decoder.warnings)")
        #expect(source.bufferedBytes == 0)
        let ranges = proxy.requests.compactMap { head in
            head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("range:") }.map(String.init)
        }
        #expect(ranges.count == 2, "\(proxy.requests)")
        #expect(ranges.last?.hasPrefix("Range: bytes=\(cut)-") == true, "\(ranges)")
    }

    @Test("a file changed on the server between a cut and the resume is an error, not spliced audio")
    func aFileChangedBeforeTheResumeIsAnError() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("spool-http-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let original = try Data(contentsOf: URL(fileURLWithPath: fixture("wav-44100-stereo-s16.wav")))
        let served = folder.appendingPathComponent("song.wav")
        try original.write(to: served)
        let nginx = try NginxServer(root: folder)
        let proxy = try FaultProxy(targetPort: nginx.port)
        proxy.cutNextResponse(afterBodyBytes: 20_000)
        let source = try HTTPSource(url: proxy.url("song.wav"))
        // Another file under the same name, longer, so that its ETag differs whatever the clock.
        try (original + Data(repeating: 0, count: 4096)).write(to: folder.appendingPathComponent("next.wav"))
        #expect(rename(folder.appendingPathComponent("next.wav").path, served.path) == 0)
        var bytes = [UInt8](repeating: 0, count: original.count)
        var read = 0
        do {
            while read < bytes.count {
                let got = try bytes[read...].withUnsafeMutableBytes { try source.read(into: $0) }
                if got == 0 { break }
                read += got
            }
            Issue.record("read \(read) bytes of a changed file without an error")
        } catch let error as AudioError {
            #expect(error.code == .readFailed)
            #expect(error.message.contains("changed"), "\(error.message)")
            #expect(read == 20_000)
            #expect(bytes[..<read] == original.prefix(read).map { $0 }[...])
        }
    }

    @Test("a radio station's titles are taken out of the audio and arrive with the audio byte they come before")
    func radioTitlesArriveAtTheirBytes() throws {
        let name = "mp3-44100-stereo.mp3"
        let body = try [UInt8](Data(contentsOf: URL(fileURLWithPath: fixture(name))))
        let interval = 1_000
        let titles = [(atByte: 0, title: "First song"), (atByte: 2_500, title: "Second – ‘quoted’ song"), (atByte: 7_000, title: "Third")]
        let station = try ICYServer(body: body, metaInterval: interval, titles: titles)
        let heard = Locked<[(String, Int)]>([])
        let (decoder, source) = try RemoteAudio.open(station.url("stream"), onTitle: { title, byte in
            heard.withLock { $0.append((title, byte)) }
        })
        #expect(source.response.isLive)
        #expect(source.response.metadataInterval == interval)
        let reference = try DecoderRegistry.shared.open(path: fixture(name)).decodeAll()
        #expect(try decoder.decodeAll().samples == reference.samples)
        let got = heard.withLock { $0 }
        #expect(got.map(\.0) == titles.map(\.title))
        // Each title comes in the first block at or after the byte it takes effect from.
        #expect(got.map(\.1) == titles.map { max(interval, ($0.atByte + interval - 1) / interval * interval) })
        #expect(station.requestHeaders.first?["icy-metadata"] == "1")
    }

    @Test("the bytes held stay within the read-ahead budget however long the stream and however slow the reader")
    func heldBytesStayWithinTheBudget() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("spool-http-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var generator = SplitMix(seed: 3)
        let file = (0..<(3 << 20)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        try Data(file).write(to: folder.appendingPathComponent("long.bin"))
        let nginx = try NginxServer(root: folder)
        let configuration = HTTPSource.Configuration(readAheadBytes: 96 << 10, requestBytes: 32 << 10, keepBehindBytes: 16 << 10)
        let source = try HTTPSource(url: nginx.url("long.bin"), configuration: configuration)
        var read = 0, mostAhead = 0, mostHeld = 0, mismatches = 0
        var buffer = [UInt8](repeating: 0, count: 8192)
        while true {
            let got = try buffer.withUnsafeMutableBytes { try source.read(into: $0) }
            if got == 0 { break }
            if buffer[..<got].elementsEqual(file[read..<(read + got)]) == false { mismatches += 1 }
            read += got
            // A slow reader now and then, so that the download fills the budget and waits.
            if read % (256 << 10) < 8192 { Thread.sleep(forTimeInterval: 0.05) }
            mostAhead = max(mostAhead, source.bufferedBytes)
            mostHeld = max(mostHeld, source.heldBytes)
        }
        #expect(read == file.count)
        #expect(mismatches == 0)
        // The budget, and the one request that may be under way when it fills.
        #expect(mostAhead <= configuration.readAheadBytes + configuration.requestBytes, "\(mostAhead) bytes ahead")
        // Behind: what is kept, plus what a trim lets pile up before it drops (it drops once
        // the bytes behind are at least half of those held, and over 64 KiB).
        let limit = 2 * (configuration.readAheadBytes + configuration.requestBytes) + configuration.keepBehindBytes + (64 << 10)
        #expect(mostHeld <= limit, "\(mostHeld) bytes held against \(limit)")
    }

    @Test("404, 500, an HTML page and a redirect: clear errors naming the status or type, and the file after a redirect")
    func refusals() throws {
        let nginx = try Self.server()
        let cases: [(String, AudioError.Code, String)] = [
            ("status/404", .fileNotFound, "HTTP 404"), ("status/500", .readFailed, "HTTP 500"),
            ("html/page", .unsupportedFormat, "text/html"), ("missing.mp3", .fileNotFound, "HTTP 404"),
        ]
        for (path, code, words) in cases {
            do {
                _ = try RemoteAudio.open(nginx.url(path))
                Issue.record("\(path) opened")
            } catch let error as AudioError {
                #expect(error.code == code, "\(path): \(error)")
                #expect(error.message.contains(words) && error.message.contains("127.0.0.1"), "\(path): \(error.message)")
            }
        }
        let reference = try DecoderRegistry.shared.open(path: fixture("wav-44100-stereo-s16.wav")).decodeAll()
        let (decoder, source) = try RemoteAudio.open(nginx.url("redirect-twice/wav-44100-stereo-s16.wav"))
        #expect(try decoder.decodeAll().samples == reference.samples)
        #expect(source.response.url.path == "/wav-44100-stereo-s16.wav")
        #expect(throws: AudioError.self) { try HTTPSource(url: URL(fileURLWithPath: "/tmp/x.mp3")) }
        #expect(throws: AudioError.self) { try HTTPSource(url: nginx.url("x"), configuration: .init(timeout: .nan)) }
    }
}
