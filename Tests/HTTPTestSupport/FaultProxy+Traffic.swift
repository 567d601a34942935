/// Where a `FaultProxy` cuts a connection's response.
enum ResponseCut: Sendable {
    /// After this many bytes of the response, headers included.
    case afterBytes(Int)
    /// After this many bytes following the response's first `\r\n\r\n`.
    case afterBodyBytes(Int)
}

/// Counts a connection's response bytes toward its cut.
struct ResponseCutter {
    /// The number of response bytes after which to cut, once known (for a body cut, when the
    /// end of the headers has been seen).
    private var limit: Int?
    private let bodyBytes: Int
    private var forwarded = 0
    /// How much of `\r\n\r\n` the bytes just seen end with.
    private var matched = 0

    /// Starts counting toward `cut`.
    init(_ cut: ResponseCut) {
        switch cut {
        case .afterBytes(let count):
            limit = count
            bodyBytes = 0
        case .afterBodyBytes(let count):
            limit = nil
            bodyBytes = count
        }
    }

    /// Counts the next bytes the server sent.
    /// - Returns: How many of them to forward, and whether to cut the connection after them.
    mutating func take(_ bytes: ArraySlice<UInt8>) -> (forward: Int, cut: Bool) {
        if limit == nil {
            let terminator: [UInt8] = [13, 10, 13, 10]
            for (offset, byte) in bytes.enumerated() {
                matched = byte == terminator[matched] ? matched + 1 : (byte == 13 ? 1 : 0)
                if matched == terminator.count {
                    limit = forwarded + offset + 1 + bodyBytes
                    break
                }
            }
        }
        guard let limit else {
            forwarded += bytes.count
            return (bytes.count, false)
        }
        let forward = min(bytes.count, max(0, limit - forwarded))
        forwarded += forward
        return (forward, forwarded == limit)
    }
}

/// Picks the heads of the requests out of the bytes a client sends on one connection,
/// skipping each request's body by its `Content-Length`.
struct RequestRecorder {
    private var pending: [UInt8] = []
    private var bodyBytesToSkip = 0

    /// Takes the next bytes from the client.
    /// - Returns: The heads of the requests these bytes complete: request line and header
    ///   lines joined by `\r\n`, without the blank line.
    mutating func feed(_ bytes: ArraySlice<UInt8>) -> [String] {
        pending += bytes
        var heads: [String] = []
        while true {
            if bodyBytesToSkip > 0 {
                let skipped = min(bodyBytesToSkip, pending.count)
                pending.removeFirst(skipped)
                bodyBytesToSkip -= skipped
                if bodyBytesToSkip > 0 { break }
            }
            guard let end = HTTPHead.end(in: pending) else { break }
            let head = String(decoding: pending[..<end], as: UTF8.self)
            pending.removeFirst(end + 4)
            heads.append(head)
            bodyBytesToSkip = HTTPHead.headers(head)["content-length"].flatMap { Int($0) } ?? 0
        }
        if pending.count > 1 << 20 { pending.removeAll() }  // not HTTP: give up on it
        return heads
    }
}
