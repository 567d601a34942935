import Foundation
import HTTPTestSupport
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite(.timeLimit(.minutes(1)))
struct NginxServerTests {
    @Test func servesAFileByteExactWithItsValidators() async throws {
        let folder = try ServedFolder()
        let server = try NginxServer(root: folder.url)
        let (body, response) = try await fetch(server.url("noise.bin"))
        #expect(response.statusCode == 200)
        #expect(body == folder.bytes)
        #expect(response.value(forHTTPHeaderField: "Content-Type") == "application/octet-stream")
        #expect(response.value(forHTTPHeaderField: "Accept-Ranges") == "bytes")
        #expect(response.value(forHTTPHeaderField: "ETag") != nil)
        #expect(response.value(forHTTPHeaderField: "Last-Modified") != nil)
    }

    @Test(arguments: [
        ("song.mp3", "audio/mpeg"), ("song.ogg", "audio/ogg"), ("song.opus", "audio/ogg"), ("song.flac", "audio/flac"),
        ("song.wav", "audio/wav"), ("song.aiff", "audio/aiff"), ("song.caf", "audio/x-caf"), ("page.html", "text/html"),
    ])
    func givesEachAudioFileItsMIMEType(name: String, type: String) async throws {
        let folder = try ServedFolder(byteCount: 1000)
        let server = try NginxServer(root: folder.url)
        let (body, response) = try await fetch(server.url(name))
        #expect(body == folder.bytes)
        #expect(response.value(forHTTPHeaderField: "Content-Type") == type)
    }

    @Test func answersARangeRequestWith206AndThoseBytes() async throws {
        let folder = try ServedFolder()
        let server = try NginxServer(root: folder.url)
        let (body, response) = try await fetch(server.url("/song.mp3"), headers: ["Range": "bytes=1000-1999"])
        #expect(response.statusCode == 206)
        #expect(body == Array(folder.bytes[1000..<2000]))
        #expect(response.value(forHTTPHeaderField: "Content-Range") == "bytes 1000-1999/\(folder.bytes.count)")

        let (tail, tailResponse) = try await fetch(server.url("song.mp3"), headers: ["Range": "bytes=150000-"])
        #expect(tailResponse.statusCode == 206)
        #expect(tail == Array(folder.bytes[150_000...]))
    }

    @Test func sendsAtTheRateThePathNames() async throws {
        let folder = try ServedFolder()
        let server = try NginxServer(root: folder.url)
        let clock = ContinuousClock()
        let start = clock.now
        // 64 KiB at 32000 B/s: nginx sends a second's worth at once, then holds to the rate.
        let (body, response) = try await fetch(server.url("rate/32000/noise.bin"), headers: ["Range": "bytes=0-65535"])
        let elapsed = start.duration(to: clock.now)
        #expect(response.statusCode == 206)
        #expect(body == Array(folder.bytes[..<65_536]))
        // Only a lower bound: a rate ignored sends the 64 KiB at once, and a slow one is caught by the suite's time
        // limit. On a loaded machine the client itself can take tens of seconds to read what nginx sent in two.
        #expect(elapsed >= .milliseconds(1500), "64 KiB at 32000 B/s took \(elapsed)")
    }

    @Test func redirectsOnceAndTwiceToTheFile() async throws {
        let folder = try ServedFolder()
        let server = try NginxServer(root: folder.url)
        for path in ["redirect/song.mp3", "redirect-twice/song.mp3"] {
            let (body, response) = try await fetch(server.url(path))
            #expect(response.statusCode == 200)
            #expect(response.url?.path == "/song.mp3")
            #expect(body == folder.bytes)
        }
        let first = try RawHTTP.get(port: server.port, path: "/redirect-twice/song.mp3")
        #expect(first.status == 302)
        #expect(first.header("Location") == "/redirect/song.mp3")
        let second = try RawHTTP.get(port: server.port, path: "/redirect/song.mp3")
        #expect(second.status == 302)
        #expect(second.header("Location") == "/song.mp3")
    }

    @Test(arguments: [403, 404, 500])
    func answersAStatusPathWithThatStatusAndHTML(code: Int) async throws {
        let folder = try ServedFolder(byteCount: 10)
        let server = try NginxServer(root: folder.url)
        let (body, response) = try await fetch(server.url("status/\(code)"))
        #expect(response.statusCode == code)
        #expect(response.value(forHTTPHeaderField: "Content-Type") == "text/html")
        #expect(String(decoding: body, as: UTF8.self).hasPrefix("<html>"))
    }

    @Test func servesAnHTMLPageAsASuccess() async throws {
        let folder = try ServedFolder(byteCount: 10)
        let server = try NginxServer(root: folder.url)
        let (body, response) = try await fetch(server.url("html/station.mp3"))
        #expect(response.statusCode == 200)
        #expect(response.value(forHTTPHeaderField: "Content-Type") == "text/html")
        #expect(String(decoding: body, as: UTF8.self).contains("an error page served as 200"))
    }

    @Test func stopEndsTheServerAndRemovesItsDirectory() throws {
        let folder = try ServedFolder(byteCount: 10)
        let server = try NginxServer(root: folder.url)
        #expect(FileManager.default.fileExists(atPath: server.directory.appendingPathComponent("nginx.conf").path))
        #expect(!RawHTTP.isRefused(port: server.port))
        server.stop()
        server.stop()
        #expect(RawHTTP.isRefused(port: server.port))
        #expect(!FileManager.default.fileExists(atPath: server.directory.path))
    }

    @Test func twoServersRunSideBySide() throws {
        let folder = try ServedFolder(byteCount: 100)
        let servers = try (0..<2).map { _ in try NginxServer(root: folder.url) }
        #expect(servers[0].port != servers[1].port)
        for server in servers {
            let response = try RawHTTP.get(port: server.port, path: "/noise.bin")
            #expect(response.status == 200)
            #expect(response.body == folder.bytes)
        }
    }
}
