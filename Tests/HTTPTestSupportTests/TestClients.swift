import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

/// A folder of files for nginx to serve, removed when the folder goes away: pseudo-random
/// bytes (the same for every run) under the names whose MIME types the server sets.
final class ServedFolder {
    /// The folder.
    let url: URL
    /// The bytes of every file in it.
    let bytes: [UInt8]

    /// The files the folder holds.
    static let names = ["noise.bin", "song.mp3", "song.ogg", "song.opus", "song.flac", "song.wav", "song.aiff",
                        "song.caf", "page.html"]

    /// Writes the files.
    /// - Parameter byteCount: The size of each file.
    init(byteCount: Int = 200 * 1024) throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("spool-served-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        bytes = pseudoRandomBytes(count: byteCount)
        for name in Self.names {
            try Data(bytes).write(to: url.appendingPathComponent(name))
        }
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }
}

/// `count` bytes from a fixed-seed generator (SplitMix64): noise that no decoder would take
/// for anything, the same in every run.
func pseudoRandomBytes(count: Int, seed: UInt64 = 0x5EED) -> [UInt8] {
    var state = seed
    return (0..<count).map { _ in
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return UInt8(truncatingIfNeeded: mixed ^ (mixed >> 31))
    }
}

/// A URLSession that caches nothing and gives up on a request after 5 s.
func makeSession() -> URLSession {
    let configuration = URLSessionConfiguration.ephemeral
    configuration.timeoutIntervalForRequest = 5
    configuration.timeoutIntervalForResource = 10
    configuration.urlCache = nil
    return URLSession(configuration: configuration)
}

/// Fetches `url` with URLSession.
/// - Parameter session: The session to fetch with, which the caller invalidates; `nil` for a
///   session of the call's own, invalidated when the call returns (a session lives, holding
///   its connections, until it is invalidated).
/// - Returns: The body and the HTTP response.
func fetch(_ url: URL, headers: [String: String] = [:], session: URLSession? = nil) async throws
    -> (body: [UInt8], response: HTTPURLResponse)
{
    guard let session else {
        let session = makeSession()
        defer { session.finishTasksAndInvalidate() }
        return try await fetch(url, headers: headers, session: session)
    }
    var request = URLRequest(url: url)
    request.timeoutInterval = 5
    for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
    let (data, response) = try await session.data(for: request)
    guard let response = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
    return ([UInt8](data), response)
}

/// An HTTP client on a bare socket, for what URLSession hides: a redirect's own answer, the
/// bytes of a response that ends early, a body exactly as the server sent it.
enum RawHTTP {
    /// How the server's side of the connection ended.
    enum Ending: Equatable {
        /// The server closed the connection.
        case closed
        /// The connection was reset.
        case reset
        /// Nothing more came for 5 s.
        case timedOut
    }

    /// What came back: the head (status line and headers), the bytes after it, and how the
    /// stream ended.
    struct Response {
        let head: String
        let body: [UInt8]
        let ending: Ending
        /// Every byte received, head included.
        let byteCount: Int

        /// The status code from the status line, 0 when there is none.
        var status: Int {
            let parts = head.split(separator: " ")
            return parts.count > 1 ? Int(parts[1]) ?? 0 : 0
        }

        /// A header's value, the name matched without regard to case.
        func header(_ name: String) -> String? {
            for line in head.split(separator: "\r\n").dropFirst() {
                let parts = line.split(separator: ":", maxSplits: 1)
                if parts.count == 2, parts[0].lowercased() == name.lowercased() {
                    return parts[1].trimmingCharacters(in: .whitespaces)
                }
            }
            return nil
        }
    }

    /// A failure to connect or send.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Sends `GET path` (HTTP/1.1, `Connection: close`) to 127.0.0.1 at `port` and reads
    /// until the server closes, resets, or sends nothing for 5 s.
    static func get(port: Int, path: String, headers: [String: String] = [:]) throws -> Response {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        defer { close(descriptor) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr = in_addr(s_addr: in_addr_t(0x7F00_0001).bigEndian)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw Failure(description: "connect to port \(port): errno \(errno)") }
        var request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        request += "\r\n"
        let bytes = Array(request.utf8)
        let sent = bytes.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == bytes.count else { throw Failure(description: "send: errno \(errno)") }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var ending = Ending.closed
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                received += buffer[..<count]
            } else if count == 0 {
                break
            } else if errno == EINTR {
                continue
            } else {
                ending = errno == EAGAIN || errno == EWOULDBLOCK ? .timedOut : .reset
                break
            }
        }
        let end = (0..<max(0, received.count - 3)).first {
            received[$0] == 13 && received[$0 + 1] == 10 && received[$0 + 2] == 13 && received[$0 + 3] == 10
        }
        guard let end else {
            return Response(head: String(decoding: received, as: UTF8.self), body: [], ending: ending,
                            byteCount: received.count)
        }
        return Response(head: String(decoding: received[..<end], as: UTF8.self), body: Array(received[(end + 4)...]),
                        ending: ending, byteCount: received.count)
    }

    /// Whether a connection to 127.0.0.1 at `port` is refused (no server listens there).
    static func isRefused(port: Int) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr = in_addr(s_addr: in_addr_t(0x7F00_0001).bigEndian)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return connected != 0 && errno == ECONNREFUSED
    }
}
