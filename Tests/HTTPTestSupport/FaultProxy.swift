import Foundation
import SpoolCore
#if canImport(Glibc)
import Glibc
#endif

/// A TCP proxy on 127.0.0.1 in front of a server on the same host (an `NginxServer`), that
/// forwards each connection both ways and can cut one response short, as a network that drops
/// a connection part-way through a download.
///
/// Each accepted connection gets a thread of its own and a connection of its own to the
/// target. The proxy records the head of every request it forwards, so that a test can check
/// what a client asked for (a `Range:` header after a cut).
public final class FaultProxy: Sendable {
    /// What the proxy's threads share: the cut to come, and what it has seen. A class of its
    /// own, so that the threads hold it and not the proxy, whose `deinit` stops them.
    private final class Traffic: Sendable {
        struct State {
            var pendingCut: ResponseCut?
            var connectionCount = 0
            var requests: [String] = []
        }
        let state = Locked(State())
    }

    /// The port the proxy listens on.
    public let port: Int
    /// The port on 127.0.0.1 the proxy forwards to.
    public let targetPort: Int
    private let listener: TCPListener
    private let traffic: Traffic

    /// Starts the proxy.
    /// - Parameter targetPort: The port on 127.0.0.1 each connection is forwarded to.
    /// - Throws: `TestServerError.Code.socketFailed` when the listening socket or its thread
    ///   cannot be made.
    public init(targetPort: Int) throws {
        let traffic = Traffic()
        listener = try TCPListener { client, wake in
            let cut = traffic.state.withLock { state in
                state.connectionCount += 1
                defer { state.pendingCut = nil }
                return state.pendingCut
            }
            Self.forward(client, toPort: targetPort, cut: cut, wake: wake) { request in
                traffic.state.withLock { $0.requests.append(request) }
            }
        }
        self.traffic = traffic
        self.targetPort = targetPort
        port = listener.port
    }

    deinit {
        listener.stop()
    }

    /// The proxy's address for `path`: `http://127.0.0.1:PORT/path`.
    /// - Parameter path: The path, with or without its leading `/`.
    public func url(_ path: String) -> URL {
        let path = path.hasPrefix("/") ? String(path.dropFirst()) : path
        return URL(string: "http://127.0.0.1:\(port)/\(path)")!
    }

    /// Closes every connection, ends and joins the proxy's threads, and closes its socket.
    /// Safe to call more than once; `deinit` calls it.
    public func stop() {
        listener.stop()
    }

    /// How many connections the proxy has accepted.
    public var connectionCount: Int {
        traffic.state.withLock { $0.connectionCount }
    }

    /// The head of each request forwarded so far, in order: the request line and the header
    /// lines as the client sent them, joined by `\r\n`, without the blank line that ends them.
    public var requests: [String] {
        traffic.state.withLock { $0.requests }
    }

    /// Cuts the next connection the proxy accepts: once `afterBytes` bytes of the server's
    /// answer (status line and headers included) have reached the client, both sides are shut
    /// down and closed. Later connections pass through untouched.
    /// - Parameter afterBytes: How many bytes of the response to forward before the cut; 0
    ///   cuts the connection when the response begins.
    public func cutNextResponse(afterBytes: Int) {
        traffic.state.withLock { $0.pendingCut = .afterBytes(max(0, afterBytes)) }
    }

    /// Cuts the next connection the proxy accepts after `afterBodyBytes` bytes of the body of
    /// its first response: the bytes after the first `\r\n\r\n` the server sends. The status
    /// line and headers always arrive whole. Later connections pass through untouched.
    /// - Parameter afterBodyBytes: How many body bytes to forward before the cut.
    public func cutNextResponse(afterBodyBytes: Int) {
        traffic.state.withLock { $0.pendingCut = .afterBodyBytes(max(0, afterBodyBytes)) }
    }

    /// A connection's thread: connects to the target and copies bytes both ways until both
    /// sides have finished, the cut is reached, the connection idles for a minute, or the proxy
    /// stops. A side that ends its stream is passed on as a half close (`shutdown(SHUT_WR)`).
    private static func forward(_ client: Int32, toPort targetPort: Int, cut: ResponseCut?, wake: WakeSignal,
                                record: (String) -> Void)
    {
        guard let server = Socket.connect(port: targetPort, timeoutMilliseconds: 5000) else { return }
        defer { close(server) }
        var cutter = cut.map(ResponseCutter.init)
        var recorder = RequestRecorder()
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var clientReads = true
        var serverReads = true
        var idleMilliseconds: Int32 = 0
        while clientReads || serverReads {
            var descriptors = [
                pollfd(fd: clientReads ? client : -1, events: Int16(POLLIN), revents: 0),
                pollfd(fd: serverReads ? server : -1, events: Int16(POLLIN), revents: 0),
                pollfd(fd: wake.descriptor, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&descriptors, nfds_t(descriptors.count), 1000)
            if ready < 0 && errno == EINTR { continue }
            if descriptors[2].revents != 0 { return }
            if ready <= 0 {
                idleMilliseconds += 1000
                if idleMilliseconds >= 60_000 { return }
                continue
            }
            idleMilliseconds = 0
            if descriptors[0].revents != 0, let count = Socket.receive(from: client, into: &buffer) {
                guard count >= 0 else { return }
                if count == 0 {
                    clientReads = false
                    shutdown(server, Int32(SHUT_WR))
                } else {
                    for request in recorder.feed(buffer[..<count]) { record(request) }
                    guard Socket.sendAll(buffer[..<count], to: server, wake: wake) else { return }
                }
            }
            if descriptors[1].revents != 0, let count = Socket.receive(from: server, into: &buffer) {
                guard count >= 0 else { return }
                if count == 0 {
                    serverReads = false
                    shutdown(client, Int32(SHUT_WR))
                    continue
                }
                let (forwardCount, cutsNow) = cutter?.take(buffer[..<count]) ?? (count, false)
                guard Socket.sendAll(buffer[..<forwardCount], to: client, wake: wake) else { return }
                if cutsNow {
                    shutdown(client, Int32(SHUT_RDWR))
                    shutdown(server, Int32(SHUT_RDWR))
                    return
                }
            }
        }
    }
}
