import Foundation
import HTTPTestSupport
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite(.timeLimit(.minutes(1)))
struct FaultProxyTests {
    @Test func forwardsAWholeFileExactly() async throws {
        let folder = try ServedFolder()
        let server = try NginxServer(root: folder.url)
        let proxy = try FaultProxy(targetPort: server.port)
        let (body, response) = try await fetch(proxy.url("song.mp3"))
        #expect(response.statusCode == 200)
        #expect(response.value(forHTTPHeaderField: "Content-Type") == "audio/mpeg")
        #expect(body == folder.bytes)
        #expect(proxy.connectionCount == 1)
    }

    @Test func cutsTheNextResponseAfterThatManyBodyBytesThenPassesTheNextConnection() async throws {
        let folder = try ServedFolder()
        let server = try NginxServer(root: folder.url)
        let proxy = try FaultProxy(targetPort: server.port)
        proxy.cutNextResponse(afterBodyBytes: 10_000)
        let cut = try RawHTTP.get(port: proxy.port, path: "/noise.bin")
        #expect(cut.status == 200)
        #expect(cut.header("Content-Length") == "\(folder.bytes.count)")
        #expect(cut.body == Array(folder.bytes[..<10_000]))
        #expect(cut.ending != .timedOut)

        let whole = try RawHTTP.get(port: proxy.port, path: "/noise.bin")
        #expect(whole.body == folder.bytes)
        #expect(proxy.connectionCount == 2)
    }

    @Test func aCutResponseFailsURLSessionsRequestAndTheNextOnePasses() async throws {
        let folder = try ServedFolder()
        let server = try NginxServer(root: folder.url)
        let proxy = try FaultProxy(targetPort: server.port)
        proxy.cutNextResponse(afterBodyBytes: 10_000)
        let session = makeSession()
        defer { session.finishTasksAndInvalidate() }
        await #expect(throws: (any Error).self) {
            _ = try await fetch(proxy.url("noise.bin"), session: session)
        }
        let (body, _) = try await fetch(proxy.url("noise.bin"), session: session)
        #expect(body == folder.bytes)
    }

    @Test func cutsAfterThatManyResponseBytesHeadersIncluded() throws {
        let folder = try ServedFolder()
        let server = try NginxServer(root: folder.url)
        let proxy = try FaultProxy(targetPort: server.port)
        proxy.cutNextResponse(afterBytes: 100)
        let cut = try RawHTTP.get(port: proxy.port, path: "/noise.bin")
        #expect(cut.byteCount == 100)
        #expect(cut.head.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(cut.ending != .timedOut)
    }

    @Test func recordsTheHeadOfEachRequestWithItsRangeHeader() async throws {
        let folder = try ServedFolder()
        let server = try NginxServer(root: folder.url)
        let proxy = try FaultProxy(targetPort: server.port)
        let session = makeSession()
        defer { session.finishTasksAndInvalidate() }
        _ = try await fetch(proxy.url("noise.bin"), session: session)
        let (body, response) = try await fetch(proxy.url("noise.bin"), headers: ["Range": "bytes=5000-"], session: session)
        #expect(response.statusCode == 206)
        #expect(body == Array(folder.bytes[5000...]))
        let requests = proxy.requests
        try #require(requests.count == 2)
        #expect(requests[0].hasPrefix("GET /noise.bin HTTP/1.1\r\n"))
        #expect(!requests[0].lowercased().contains("range:"))
        #expect(requests[1].lowercased().contains("\r\nrange: bytes=5000-"))
        #expect(!requests[1].hasSuffix("\r\n"))
    }

    @Test func closesTheClientWhenTheTargetRefuses() throws {
        let folder = try ServedFolder(byteCount: 10)
        let server = try NginxServer(root: folder.url)
        server.stop()
        let proxy = try FaultProxy(targetPort: server.port)
        let response = try RawHTTP.get(port: proxy.port, path: "/noise.bin")
        #expect(response.byteCount == 0)
        #expect(response.ending != .timedOut)
        #expect(proxy.connectionCount == 1)
    }

    @Test func stopClosesTheListeningSocketAndOpenConnections() async throws {
        let folder = try ServedFolder()
        let server = try NginxServer(root: folder.url)
        let proxy = try FaultProxy(targetPort: server.port)
        // A kept-alive connection whose thread waits in the proxy until the proxy stops.
        let session = makeSession()
        defer { session.finishTasksAndInvalidate() }
        _ = try await fetch(proxy.url("noise.bin"), session: session)
        proxy.stop()
        proxy.stop()
        #expect(RawHTTP.isRefused(port: proxy.port))
    }
}
