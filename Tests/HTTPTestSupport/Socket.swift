#if canImport(Glibc)
import Glibc
#endif
import SpoolCore

/// The socket calls the servers share: TCP on 127.0.0.1 only, every descriptor close-on-exec
/// and non-blocking, every wait bounded by a timeout and cut short by a `WakeSignal`.
enum Socket {
    /// How a bounded wait on a descriptor ended.
    enum Readiness {
        /// The descriptor is ready (or has hung up, which the next call reports).
        case ready
        /// The wake signal fired: the server stops.
        case stopped
        /// The timeout passed first.
        case timedOut
    }

    /// Held while a descriptor is made and marked close-on-exec, and while nginx is spawned:
    /// `accept` and `pipe` cannot mark theirs atomically here (`accept4` and `pipe2` are not in
    /// Swift's Glibc module), and a proxy connection nginx inherited would stay open in nginx
    /// after the proxy closed it.
    static let inheritanceLock = Locked(())

    /// Opens a listening socket on 127.0.0.1 at a port the system picks.
    /// - Returns: The descriptor (non-blocking) and the port.
    /// - Throws: `TestServerError.Code.socketFailed` when a call fails.
    static func listening() throws -> (descriptor: Int32, port: Int) {
        let descriptor = try makeSocket()
        do {
            var address = loopback(port: 0)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard bound == 0 else { throw TestServerError.system(.socketFailed, "bind to 127.0.0.1:0") }
            guard listen(descriptor, 64) == 0 else { throw TestServerError.system(.socketFailed, "listen") }
            return (descriptor, try port(of: descriptor))
        } catch {
            close(descriptor)
            throw error
        }
    }

    /// A port that was free a moment ago: bound, read and released again.
    /// - Throws: `TestServerError.Code.socketFailed` when a call fails.
    static func freePort() throws -> Int {
        let (descriptor, port) = try listening()
        close(descriptor)
        return port
    }

    /// Connects to 127.0.0.1 at `port`.
    /// - Parameters:
    ///   - port: The port to connect to.
    ///   - timeoutMilliseconds: How long to wait for the connection.
    /// - Returns: The connected descriptor (non-blocking), or `nil` when the connection is
    ///   refused or does not complete in time.
    static func connect(port: Int, timeoutMilliseconds: Int32) -> Int32? {
        guard let descriptor = try? makeSocket() else { return nil }
        var address = loopback(port: port)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if result == 0 { return descriptor }
        guard errno == EINPROGRESS,
              case .ready = wait(descriptor, for: Int16(POLLOUT), wake: nil, timeoutMilliseconds: timeoutMilliseconds)
        else {
            close(descriptor)
            return nil
        }
        var failure: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &failure, &length) == 0, failure == 0 else {
            close(descriptor)
            return nil
        }
        return descriptor
    }

    /// Accepts one connection from a listening socket that `poll` found readable.
    /// - Returns: The connection's descriptor (close-on-exec, non-blocking), or `nil` when
    ///   there was none after all.
    static func accept(from listener: Int32) -> Int32? {
        let descriptor = inheritanceLock.withLock { _ -> Int32 in
            let descriptor = Glibc.accept(listener, nil, nil)
            if descriptor >= 0 { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
            return descriptor
        }
        guard descriptor >= 0 else { return nil }
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        return descriptor
    }

    /// Waits until `descriptor` is ready for `events`, the wake signal fires, or the timeout
    /// passes.
    /// - Parameters:
    ///   - descriptor: The descriptor to wait on.
    ///   - events: `POLLIN` or `POLLOUT`.
    ///   - wake: The server's stop signal, or `nil` to wait on the descriptor alone.
    ///   - timeoutMilliseconds: The longest wait.
    static func wait(_ descriptor: Int32, for events: Int16, wake: WakeSignal?, timeoutMilliseconds: Int32)
        -> Readiness
    {
        var descriptors = [pollfd(fd: descriptor, events: events, revents: 0)]
        if let wake { descriptors.append(pollfd(fd: wake.descriptor, events: Int16(POLLIN), revents: 0)) }
        while true {
            let count = poll(&descriptors, nfds_t(descriptors.count), timeoutMilliseconds)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return .timedOut }
            if descriptors.count > 1 && descriptors[1].revents != 0 { return .stopped }
            return .ready
        }
    }

    /// Sends all of `bytes`, waiting (at most `timeoutMilliseconds` at a time) while the peer
    /// does not read. `MSG_NOSIGNAL`: a peer that has gone away ends the send with `EPIPE`,
    /// not the test process with `SIGPIPE`.
    /// - Returns: Whether every byte was sent; `false` when the peer has gone, stopped reading
    ///   for the whole timeout, or the server stops.
    static func sendAll(_ bytes: some Collection<UInt8>, to descriptor: Int32, wake: WakeSignal,
                        timeoutMilliseconds: Int32 = 10_000) -> Bool
    {
        let bytes = Array(bytes)
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes {
                send(descriptor, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
            }
            if sent > 0 {
                offset += sent
            } else if sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                let readiness = wait(descriptor, for: Int16(POLLOUT), wake: wake,
                                     timeoutMilliseconds: timeoutMilliseconds)
                guard case .ready = readiness else { return false }
            } else {
                return false
            }
        }
        return true
    }

    /// Receives what is there into `buffer`.
    /// - Returns: The byte count, 0 at the end of the stream, `nil` when nothing is there yet,
    ///   or -1 on an error (a reset connection).
    static func receive(from descriptor: Int32, into buffer: inout [UInt8]) -> Int? {
        let received = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        if received < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) { return nil }
        return received < 0 ? -1 : received
    }

    /// Reads and drops what the peer sends until it closes, for at most `timeoutMilliseconds`,
    /// after this side has half-closed: closing a socket with received bytes unread resets the
    /// connection, and a reset can discard the end of the body before the client has read it.
    static func drain(_ descriptor: Int32, wake: WakeSignal, timeoutMilliseconds: Int32 = 2000) {
        let deadline = ContinuousClock.now + .milliseconds(Int(timeoutMilliseconds))
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero,
                  case .ready = wait(descriptor, for: Int16(POLLIN), wake: wake,
                                     timeoutMilliseconds: remaining.pollMilliseconds)
            else { return }
            if let count = receive(from: descriptor, into: &buffer), count <= 0 { return }
        }
    }

    /// The local port a socket is bound to.
    static func port(of descriptor: Int32) throws -> Int {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let result = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard result == 0 else { throw TestServerError.system(.socketFailed, "getsockname") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// A TCP socket, close-on-exec (atomically, `SOCK_CLOEXEC`) and non-blocking.
    private static func makeSocket() throws -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw TestServerError.system(.socketFailed, "socket") }
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        return descriptor
    }

    /// 127.0.0.1 at `port`, in network byte order.
    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr = in_addr(s_addr: in_addr_t(0x7F00_0001).bigEndian)
        return address
    }
}

/// A stop signal every thread of a server polls alongside its sockets: a pipe that becomes
/// readable, for good, when the server stops, so that one write wakes every waiting thread.
final class WakeSignal: Sendable {
    /// The pipe's read end, for `poll`.
    let descriptor: Int32
    private let writeEnd: Int32

    /// Makes the pipe.
    /// - Throws: `TestServerError.Code.socketFailed` when `pipe` fails.
    init() throws {
        var ends: [Int32] = [0, 0]
        let result = Socket.inheritanceLock.withLock { _ -> Int32 in
            let result = pipe(&ends)
            if result == 0 { for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) } }
            return result
        }
        guard result == 0 else { throw TestServerError.system(.socketFailed, "pipe") }
        descriptor = ends[0]
        writeEnd = ends[1]
    }

    deinit {
        close(descriptor)
        close(writeEnd)
    }

    /// Waits until the signal fires or the timeout passes.
    /// - Returns: Whether the signal fired.
    func wait(timeoutMilliseconds: Int32) -> Bool {
        var descriptors = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)]
        while true {
            let count = poll(&descriptors, 1, timeoutMilliseconds)
            if count < 0 && errno == EINTR { continue }
            return count > 0
        }
    }

    /// Makes the read end readable: every `poll` on it returns, now and from now on.
    func signal() {
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }
}

extension Duration {
    /// The duration in whole milliseconds, rounded up, for `poll`'s timeout; at least 0.
    var pollMilliseconds: Int32 {
        let (seconds, attoseconds) = components
        let milliseconds = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: max(0, milliseconds))
    }
}
