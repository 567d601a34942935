import Foundation
import SpoolCore
#if canImport(Glibc)
import Glibc
#endif

/// A radio station as Icecast and SHOUTcast serve one, on 127.0.0.1: every request gets the
/// same body as a live stream (`HTTP/1.0 200 OK`, no `Content-Length`, the end of the body is
/// the server closing the connection), and a client that asks for metadata (`Icy-MetaData: 1`)
/// gets the stream titles interleaved with the audio.
///
/// With metadata the answer carries `icy-metaint: <metaInterval>`, and after every
/// `metaInterval` audio bytes comes a metadata block: one length byte N, then N × 16 bytes of
/// `StreamTitle='<title>';` padded with zero bytes. The title in effect at a block is the last
/// of `titles` whose `atByte` is at most the audio byte count sent so far; a block whose title
/// has not changed since the last block sent is empty (N = 0), and so is a block with no title
/// in effect. A body whose length is a multiple of `metaInterval` ends with a block.
public final class ICYServer: Sendable {
    /// What a connection's thread needs, and what the server has seen. A class of its own, so
    /// that the threads hold it and not the server, whose `deinit` stops them.
    private final class Station: Sendable {
        let body: [UInt8]
        let metaInterval: Int
        let titles: [(atByte: Int, title: String)]
        let bytesPerSecond: Int?
        let contentType: String
        let requestHeaders = Locked<[[String: String]]>([])

        init(body: [UInt8], metaInterval: Int, titles: [(atByte: Int, title: String)], bytesPerSecond: Int?,
             contentType: String)
        {
            self.body = body
            self.metaInterval = metaInterval
            self.titles = titles
            self.bytesPerSecond = bytesPerSecond
            self.contentType = contentType
        }
    }

    /// The port the server listens on.
    public let port: Int
    private let station: Station
    private let listener: TCPListener

    /// Starts the station.
    /// - Parameters:
    ///   - body: The audio every request gets, whole.
    ///   - metaInterval: The audio byte count between metadata blocks (`icy-metaint`); at
    ///     least 1.
    ///   - titles: The stream titles and the audio byte count from which each is in effect.
    ///   - bytesPerSecond: The rate at which to send the audio, or `nil` for as fast as the
    ///     client reads. Metadata blocks do not count toward it.
    ///   - contentType: The answer's `Content-Type`.
    /// - Throws: `TestServerError.Code.socketFailed` when the listening socket or its thread
    ///   cannot be made.
    public init(body: [UInt8], metaInterval: Int, titles: [(atByte: Int, title: String)], bytesPerSecond: Int? = nil,
                contentType: String = "audio/mpeg") throws
    {
        let station = Station(body: body, metaInterval: max(1, metaInterval), titles: titles,
                              bytesPerSecond: bytesPerSecond.map { max(1, $0) }, contentType: contentType)
        listener = try TCPListener { client, wake in Self.serve(client, station: station, wake: wake) }
        self.station = station
        port = listener.port
    }

    deinit {
        listener.stop()
    }

    /// The server's address for `path`: `http://127.0.0.1:PORT/path`. Every path gets the
    /// same stream.
    /// - Parameter path: The path, with or without its leading `/`.
    public func url(_ path: String) -> URL {
        let path = path.hasPrefix("/") ? String(path.dropFirst()) : path
        return URL(string: "http://127.0.0.1:\(port)/\(path)")!
    }

    /// Closes every connection, ends and joins the server's threads, and closes its socket.
    /// Safe to call more than once; `deinit` calls it.
    public func stop() {
        listener.stop()
    }

    /// The headers of each request seen so far, in order, names lowercased (`icy-metadata`),
    /// values without surrounding white space.
    public var requestHeaders: [[String: String]] {
        station.requestHeaders.withLock { $0 }
    }

    /// A connection's thread: reads the request head (for at most 5 s), answers, sends the
    /// body with or without metadata, half-closes, and waits for the client to close.
    private static func serve(_ client: Int32, station: Station, wake: WakeSignal) {
        guard let headers = readRequestHeaders(client, wake: wake) else { return }
        station.requestHeaders.withLock { $0.append(headers) }
        let wantsMetadata = headers["icy-metadata"] == "1"
        var head = "HTTP/1.0 200 OK\r\nContent-Type: \(station.contentType)\r\nicy-name: Spool test\r\n"
        if wantsMetadata { head += "icy-metaint: \(station.metaInterval)\r\n" }
        head += "\r\n"
        guard Socket.sendAll(Array(head.utf8), to: client, wake: wake) else { return }
        let start = ContinuousClock.now
        // 50 ms of audio at a time when throttled, so that the pace is smooth.
        let chunk = station.bytesPerSecond.map { max(1, $0 / 20) } ?? 64 * 1024
        var lastTitle: String?
        var sent = 0
        while sent < station.body.count {
            if let bytesPerSecond = station.bytesPerSecond {
                let due = start + .milliseconds(sent * 1000 / bytesPerSecond)
                let wait = ContinuousClock.now.duration(to: due)
                if wait > .zero && wake.wait(timeoutMilliseconds: wait.pollMilliseconds) { return }
            }
            var count = min(chunk, station.body.count - sent)
            if wantsMetadata { count = min(count, station.metaInterval - sent % station.metaInterval) }
            guard Socket.sendAll(station.body[sent..<(sent + count)], to: client, wake: wake) else { return }
            sent += count
            if wantsMetadata && sent % station.metaInterval == 0 {
                let title = station.titles.last { $0.atByte <= sent }?.title
                let block = metadataBlock(title: title == lastTitle ? nil : title)
                if title != nil { lastTitle = title }
                guard Socket.sendAll(block, to: client, wake: wake) else { return }
            }
        }
        shutdown(client, Int32(SHUT_WR))
        Socket.drain(client, wake: wake)
    }

    /// Reads a request head, for at most 5 s and 64 KiB.
    /// - Returns: Its headers, names lowercased; `nil` when the client sent no whole head.
    private static func readRequestHeaders(_ client: Int32, wake: WakeSignal) -> [String: String]? {
        let deadline = ContinuousClock.now + .seconds(5)
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            if let end = HTTPHead.end(in: received) {
                return HTTPHead.headers(String(decoding: received[..<end], as: UTF8.self))
            }
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard received.count < 64 * 1024, remaining > .zero else { return nil }
            switch Socket.wait(client, for: Int16(POLLIN), wake: wake, timeoutMilliseconds: remaining.pollMilliseconds) {
            case .stopped, .timedOut: return nil
            case .ready: break
            }
            guard let count = Socket.receive(from: client, into: &buffer) else { continue }
            guard count > 0 else { return nil }
            received += buffer[..<count]
        }
    }
}
