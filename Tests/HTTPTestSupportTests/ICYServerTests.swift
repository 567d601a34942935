import Foundation
import HTTPTestSupport
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite(.timeLimit(.minutes(1)))
struct ICYServerTests {
    private let body = pseudoRandomBytes(count: 200 * 1024, seed: 7)
    private let titles: [(atByte: Int, title: String)] = [
        (0, "First song"), (20_000, "Second song, whose title is longer than sixteen bytes"),
        (20_500, "Third song"), (100_000, "Fourth song"),
    ]

    @Test func interleavesTitlesAfterEveryIntervalWhenAsked() throws {
        let server = try ICYServer(body: body, metaInterval: 8192, titles: titles)
        let response = try RawHTTP.get(port: server.port, path: "/stream", headers: ["Icy-MetaData": "1"])
        #expect(response.head.hasPrefix("HTTP/1.0 200 OK\r\n"))
        #expect(response.header("Content-Type") == "audio/mpeg")
        #expect(response.header("icy-name") == "Spool test")
        #expect(response.header("icy-metaint") == "8192")
        #expect(response.header("Content-Length") == nil)
        #expect(response.ending == .closed)

        let (audio, seen) = ICYServer.stripMetadata(response.body, metaInterval: 8192)
        #expect(audio == body)
        // Blocks come after 8192, 16384, 24576, …: "Second song" (from 20000) is overtaken by
        // "Third song" (from 20500) before the block at 24576, so it is never sent.
        #expect(seen.map(\.atByte) == [8192, 24_576, 106_496])
        #expect(seen.map(\.title) == ["First song", "Third song", "Fourth song"])
        // 25 blocks in all (one after each full 8192 bytes), 22 of them empty.
        let blocks = body.count / 8192
        let titleBytes = [titles[0].title, titles[2].title, titles[3].title].map {
            1 + ($0.utf8.count + "StreamTitle='';".utf8.count + 15) / 16 * 16
        }.reduce(0, +)
        #expect(response.body.count == body.count + titleBytes + (blocks - 3))
    }

    @Test func writesEachBlockAsALengthByteAndPaddedText() throws {
        let server = try ICYServer(body: body, metaInterval: 8192, titles: [(0, "A song")])
        let response = try RawHTTP.get(port: server.port, path: "/", headers: ["icy-metadata": "1"])
        let stream = response.body
        // "StreamTitle='A song';" is 21 bytes: two sixteens, padded with 11 zero bytes.
        #expect(stream[8192] == 2)
        #expect(Array(stream[8193..<8214]) == Array("StreamTitle='A song';".utf8))
        #expect(Array(stream[8214..<8225]) == [UInt8](repeating: 0, count: 11))
        #expect(Array(stream[8225..<(8225 + 8192)]) == Array(body[8192..<16_384]))
        #expect(stream[8225 + 8192] == 0)
        // 200 KiB is 25 whole intervals: the stream ends with an empty block.
        #expect(stream.last == 0)
        #expect(stream.count == body.count + 1 + 32 + 24)
    }

    @Test func sendsThePlainBodyWhenNotAsked() async throws {
        let server = try ICYServer(body: body, metaInterval: 8192, titles: titles, contentType: "audio/ogg")
        let response = try RawHTTP.get(port: server.port, path: "/stream")
        #expect(response.header("icy-metaint") == nil)
        #expect(response.header("Content-Type") == "audio/ogg")
        #expect(response.body == body)

        let (fetched, urlResponse) = try await fetch(server.url("stream"))
        #expect(urlResponse.statusCode == 200)
        #expect(fetched == body)
    }

    @Test func recordsTheHeadersOfEachRequest() throws {
        let server = try ICYServer(body: Array(body[..<1000]), metaInterval: 100, titles: [])
        _ = try RawHTTP.get(port: server.port, path: "/", headers: ["Icy-MetaData": "1"])
        _ = try RawHTTP.get(port: server.port, path: "/")
        let headers = server.requestHeaders
        try #require(headers.count == 2)
        #expect(headers[0]["icy-metadata"] == "1")
        #expect(headers[0]["host"] == "127.0.0.1:\(server.port)")
        #expect(headers[1]["icy-metadata"] == nil)
    }

    @Test func holdsToItsRate() throws {
        let server = try ICYServer(body: Array(body[..<100_000]), metaInterval: 16_000, titles: titles,
                                   bytesPerSecond: 50_000)
        let clock = ContinuousClock()
        let start = clock.now
        let response = try RawHTTP.get(port: server.port, path: "/", headers: ["Icy-MetaData": "1"])
        let elapsed = start.duration(to: clock.now)
        #expect(ICYServer.stripMetadata(response.body, metaInterval: 16_000).audio == Array(body[..<100_000]))
        #expect(elapsed >= .milliseconds(1800), "100 000 bytes at 50 000 B/s took \(elapsed)")
        #expect(elapsed < .seconds(4))
    }

    @Test func stopEndsAStreamPartWay() throws {
        let server = try ICYServer(body: body, metaInterval: 8192, titles: [], bytesPerSecond: 10_000)
        let port = server.port
        let clock = ContinuousClock()
        let start = clock.now
        let stopped = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: 0.3)
            server.stop()
            stopped.signal()
        }
        let response = try RawHTTP.get(port: port, path: "/")
        #expect(stopped.wait(timeout: .now() + 5) == .success)
        #expect(start.duration(to: clock.now) < .seconds(2))
        #expect(response.body.count < body.count)
        #expect(RawHTTP.isRefused(port: port))
    }

    @Test func stripMetadataTakesAHandMadeStreamApart() {
        let title = Array("StreamTitle='a';".utf8)  // exactly one sixteen
        let stream: [UInt8] = [1, 2, 3, 4] + [1] + title + [5, 6, 7, 8] + [0] + [9]
        let (audio, titles) = ICYServer.stripMetadata(stream, metaInterval: 4)
        #expect(audio == [1, 2, 3, 4, 5, 6, 7, 8, 9])
        #expect(titles.map(\.atByte) == [4])
        #expect(titles.map(\.title) == ["a"])
    }
}
