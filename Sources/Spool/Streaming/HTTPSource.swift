import Foundation
import SpoolCore

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The bytes of an HTTP(S) resource, downloaded ahead of the reader within a budget and read
/// in order, with seeks: what a stream parser reads when audio plays while it downloads.
///
/// **Read-ahead.** A server that takes `Range` requests (a static file) is read a window at a
/// time (`Configuration.requestBytes`); a window is asked for only while the bytes buffered
/// ahead of the reader are below the budget, so the download pauses when the budget is full
/// and resumes as the reader drains it. The budget is `readAheadBytes`, or fewer: the bytes of
/// `readAheadSeconds` once `byteRate` is known. A server that takes no ranges, and a live
/// stream (no length), are read in one response; a live stream that fills the budget while
/// nobody reads is dropped, and joined again when the reader comes back (a live stream has
/// no past to resume). A live stream whose server closes the connection has ended: on the
/// wire that is what the end of a broadcast looks like (an answer without a length ends where
/// its connection does); one that fails with an error is joined again, as a broken static
/// download is resumed.
///
/// **Resuming.** A connection that breaks is opened again with a `Range` from the byte where it
/// broke (up to `Configuration.retries` times in a row), so the reader sees every byte once.
/// Each response must carry the first one's `ETag` (or, without one, `Last-Modified`): a file
/// changed on the server between two requests is an error, never bytes of two files spliced.
///
/// **Errors** name the URL and what is wrong: an HTTP status of 400 or more (`.fileNotFound`
/// for 404 and 410, `.readFailed` for the rest), an HTML body such as an error page
/// (`.unsupportedFormat`; other types are left to the bytes, which the parser judges), a broken connection after the retries (`.readFailed`), a changed
/// file (`.readFailed`), and a seek in a live stream (`.unsupported`).
///
/// **Radio metadata.** Every request asks for Icecast/SHOUTcast metadata (`Icy-MetaData: 1`);
/// when the response has `icy-metaint`, the metadata blocks are taken out of the bytes and
/// each `StreamTitle` is handed to `onTitle` with the audio byte it precedes.
///
/// Redirects are followed (the final URL is used for the later ranges). The closest Apple
/// pieces are the `URLSession` data task and the stream parser it feeds (AudioFileStream).
public final class HTTPSource: @unchecked Sendable {
    /// How much to read ahead, how to ask, and how long to wait.
    public struct Configuration: Sendable {
        /// Most bytes held ahead of the reader.
        public var readAheadBytes: Int
        /// Most seconds of audio held ahead of the reader, once `byteRate` says how many bytes
        /// they are.
        public var readAheadSeconds: Double
        /// Bytes asked for in one `Range` request.
        public var requestBytes: Int
        /// Seconds without a byte after which a request counts as broken.
        public var timeout: Double
        /// Times in a row a broken request is made again before the reader gets an error.
        public var retries: Int
        /// Bytes kept behind the reader, for a seek back without a request.
        public var keepBehindBytes: Int

        /// The defaults: 1 MiB or 10 s ahead, 256 KiB requests, 15 s timeout, 3 retries,
        /// 64 KiB behind.
        public init(readAheadBytes: Int = 1 << 20, readAheadSeconds: Double = 10, requestBytes: Int = 256 << 10,
                    timeout: Double = 15, retries: Int = 3, keepBehindBytes: Int = 64 << 10) {
            self.readAheadBytes = readAheadBytes
            self.readAheadSeconds = readAheadSeconds
            self.requestBytes = requestBytes
            self.timeout = timeout
            self.retries = retries
            self.keepBehindBytes = keepBehindBytes
        }

        /// The configuration with every value checked and clamped to what works.
        func checked() throws -> Configuration {
            guard readAheadBytes >= 1, requestBytes >= 1, retries >= 0, keepBehindBytes >= 0 else {
                throw AudioError(.invalidParameter, "an HTTP source needs a read-ahead and a request size of at least 1 byte and no negative counts")
            }
            guard readAheadSeconds.isFinite, readAheadSeconds > 0, timeout.isFinite, timeout > 0 else {
                throw AudioError(.invalidParameter, "an HTTP source's read-ahead seconds and timeout must be finite and above 0 (got \(readAheadSeconds), \(timeout))")
            }
            var result = self
            result.requestBytes = min(requestBytes, 64 << 20)
            result.readAheadBytes = min(readAheadBytes, 1 << 30)
            result.timeout = min(timeout, 3600)
            return result
        }
    }

    /// What the first response said about the resource.
    public struct Response: Sendable, Equatable {
        /// The URL the bytes come from, after redirects.
        public var url: URL
        /// The resource's length in bytes; nil for a live stream.
        public var contentLength: Int?
        /// The `Content-Type`, without parameters, lowercased.
        public var contentType: String?
        /// The server takes `Range` requests: seeks and resumes are exact.
        public var acceptsRanges: Bool
        /// The validators a later response must repeat.
        public var entityTag: String?
        public var lastModified: String?
        /// Audio bytes between metadata blocks (`icy-metaint`), when the server interleaves them.
        public var metadataInterval: Int?
        /// The station's name (`icy-name`), for a radio stream.
        public var stationName: String?

        /// Neither a length nor ranges: a stream that plays as it is broadcast.
        public var isLive: Bool { contentLength == nil }
    }

    /// The URL asked for.
    public let url: URL
    public let configuration: Configuration
    /// The first response (set once, while the initializer runs).
    public private(set) var response: Response
    /// Called on the download's queue with each `StreamTitle` of a radio stream and the
    /// audio byte offset it comes before. Titles that arrive before it is set are not
    /// repeated: pass it to the initializer not to miss the first.
    public var onTitle: (@Sendable (String, Int) -> Void)? {
        get { state.withLock { $0.onTitle } }
        set { state.withLock { $0.onTitle = newValue } }
    }

    private let state: Locked<State>
    private let signal = NSCondition()
    private let session: URLSession
    private let delegate: Delegate

    /// Opens `url` and waits for the first response's headers.
    /// - Parameters:
    ///   - url: An http or https URL.
    ///   - configuration: The read-ahead, request size, timeout and retries.
    ///   - onTitle: As the property: given here, no title of the first bytes is missed (the
    ///     download starts before the initializer returns).
    /// - Throws: `.invalidParameter` for a URL that is not http(s) or a bad configuration;
    ///   the errors listed above for the response.
    public init(url: URL, configuration: Configuration = Configuration(),
                onTitle: (@Sendable (String, Int) -> Void)? = nil) throws {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", url.host != nil else {
            throw AudioError(.invalidParameter, "\(url.absoluteString): an HTTP source needs an http or https URL")
        }
        self.url = url
        self.configuration = try configuration.checked()
        let delegate = Delegate()
        self.delegate = delegate
        let settings = URLSessionConfiguration.ephemeral
        settings.timeoutIntervalForRequest = self.configuration.timeout
        settings.requestCachePolicy = .reloadIgnoringLocalCacheData
        // No URL cache at all: FoundationNetworking looks a request up in its cache on a
        // background queue before the request's protocol exists, and a task cancelled in that
        // window (every seek cancels the request the last one started) reports its failure
        // after the session has forgotten the task, which traps. Audio is read once anyway.
        settings.urlCache = nil
        settings.httpMaximumConnectionsPerHost = 1
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.name = "spool.http"
        session = URLSession(configuration: settings, delegate: delegate, delegateQueue: queue)
        state = Locked(State(onTitle: onTitle))
        response = Response(url: url, contentLength: nil, contentType: nil, acceptsRanges: false, entityTag: nil,
                            lastModified: nil, metadataInterval: nil, stationName: nil)
        delegate.source = Weak(self)
        let first = try openFirst()
        response = first
        state.withLock { $0.response = first }
    }

    deinit {
        session.invalidateAndCancel()
    }

    // MARK: Reading

    /// The stream offset of the next byte `read` returns.
    public var position: Int { state.withLock { $0.position } }

    /// Bytes downloaded and not yet read.
    public var bufferedBytes: Int { state.withLock { $0.ahead } }

    /// Bytes held in all: those ahead of the reader and those kept behind it.
    var heldBytes: Int { state.withLock { $0.bytes.count } }

    /// The read-ahead budget now: `readAheadBytes`, or the bytes of `readAheadSeconds` at
    /// `byteRate` when that is fewer.
    public var budgetBytes: Int { state.withLock { budget($0) } }

    /// The stream's bytes per second, once known (a parser's bit rate / 8): sets the
    /// seconds budget. Nil or not above 0: bytes only.
    public var byteRate: Double? {
        get { state.withLock { $0.byteRate } }
        set {
            state.withLock { $0.byteRate = newValue.flatMap { $0.isFinite && $0 > 0 ? $0 : nil } }
            pump()
        }
    }

    /// Reads up to `buffer.count` bytes, waiting for them to arrive; 0 at the end.
    /// - Throws: The source's `AudioError` once the bytes before it have been read.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard !buffer.isEmpty else { return 0 }
        signal.lock()
        defer { signal.unlock() }
        while true {
            let outcome: ReadOutcome = state.withLock { state in
                if state.closed { return .failed(AudioError(.invalidState, "\(url.absoluteString): the HTTP source is closed")) }
                let available = state.ahead
                if available > 0 {
                    let count = min(available, buffer.count)
                    let start = state.position - state.bufferStart
                    state.bytes.withUnsafeBytes { from in
                        buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: from[start..<(start + count)]))
                    }
                    state.position += count
                    state.trimBehind(keeping: configuration.keepBehindBytes)
                    return .read(count)
                }
                if let error = state.failure { return .failed(error) }
                if let length = state.response?.contentLength, state.position >= length { return .read(0) }
                if state.ended { return .read(0) }
                return .wait
            }
            switch outcome {
            case .read(let count):
                pump()
                return count
            case .failed(let error):
                throw error
            case .wait:
                pump()
                _ = signal.wait(until: Date().addingTimeInterval(0.25))
            }
        }
    }

    /// Moves the reader to byte `offset`: within what is held at once, otherwise by a `Range`
    /// request from there.
    /// - Throws: `.unsupported` for a server that takes no ranges (a live stream),
    ///   `.outOfRange` for an offset below 0 or past the end.
    public func seek(toByte offset: Int) throws {
        try state.withLock { state in
            if let length = response.contentLength, offset > length {
                throw AudioError(.outOfRange, "\(url.absoluteString): byte \(offset) is past the end (\(length) bytes)")
            }
            guard offset >= 0 else { throw AudioError(.outOfRange, "\(url.absoluteString): byte \(offset) is before the start") }
            if offset >= state.bufferStart, offset <= state.bufferEnd {
                state.position = offset
                return
            }
            guard response.acceptsRanges else {
                throw AudioError(.unsupported, "\(url.absoluteString): the server takes no ranges, so the stream cannot seek to byte \(offset)")
            }
            state.generation += 1
            state.task?.cancel()
            state.task = nil
            state.bytes.removeAll(keepingCapacity: true)
            state.bufferStart = offset
            state.position = offset
            state.failure = nil
            state.failures = 0
            state.ended = false
        }
        pump()
    }

    /// Stops the download; a `read` after it throws `.invalidState`.
    public func close() {
        state.withLock { state in
            state.closed = true
            state.generation += 1
            state.task?.cancel()
            state.task = nil
        }
        wake()
    }

    // MARK: The download

    private enum ReadOutcome {
        case read(Int)
        case failed(AudioError)
        case wait
    }

    /// Everything the reader and the download share, under one lock.
    private struct State {
        var response: Response?
        /// Downloaded bytes from `bufferStart`.
        var bytes: [UInt8] = []
        var bufferStart = 0
        var position = 0
        var task: URLSessionDataTask?
        /// Counts requests started, so that a cancelled one's late callbacks are ignored.
        var generation = 0
        /// The stream offset the running request's next byte has.
        var taskOffset = 0
        var taskIsRange = false
        var failures = 0
        var failure: AudioError?
        var ended = false
        var closed = false
        var byteRate: Double?
        var onTitle: (@Sendable (String, Int) -> Void)?
        /// Radio metadata being taken out of the bytes.
        var metadata = IcyMetadataReader(interval: nil)
        /// A response without ranges was dropped while the budget was full: asked for again
        /// when it has room (a live stream is joined again; a static one is read again up to
        /// where the buffer ends).
        var dropped = false
        /// Bytes the running request has delivered.
        var taskBytes = 0
        /// The first response, before `response` is set (the opening request's).
        var opening: OpeningOutcome?

        var bufferEnd: Int { bufferStart + bytes.count }
        var ahead: Int { max(0, bufferEnd - position) }

        mutating func trimBehind(keeping keep: Int) {
            let drop = position - bufferStart - keep
            guard drop > 64 << 10, drop >= bytes.count / 2 else { return }
            bytes.removeSubrange(0..<drop)
            bufferStart += drop
        }
    }

    private enum OpeningOutcome {
        case response(Response)
        case failed(AudioError)
    }

    private func budget(_ state: State) -> Int {
        var bytes = configuration.readAheadBytes
        if let rate = state.byteRate {
            let seconds = rate * configuration.readAheadSeconds
            if seconds < Double(bytes) { bytes = max(configuration.requestBytes, Int(seconds)) }
        }
        return bytes
    }

    /// Makes the first request (a range from 0 where the server takes them) and waits for its headers.
    private func openFirst() throws -> Response {
        state.withLock { state in
            startTask(&state, at: 0, asRange: true)
        }
        let deadline = Date().addingTimeInterval(configuration.timeout + 1)
        signal.lock()
        var outcome: Result<Response, AudioError>?
        while outcome == nil {
            switch state.withLock({ $0.opening }) {
            case .response(let response)?: outcome = .success(response)
            case .failed(let error)?: outcome = .failure(error)
            case nil:
                if Date() >= deadline {
                    outcome = .failure(AudioError(.readFailed, "\(url.absoluteString): no response in \(configuration.timeout) s"))
                } else {
                    _ = signal.wait(until: min(deadline, Date().addingTimeInterval(0.25)))
                }
            }
        }
        signal.unlock()
        switch outcome {
        case .success(let response)?: return response
        case .failure(let error)?:
            close()
            throw error
        case nil: throw AudioError(.readFailed, "\(url.absoluteString): no response")
        }
    }

    /// Starts a request at `offset`: a window when ranges work, else the rest of the resource.
    private func startTask(_ state: inout State, at offset: Int, asRange: Bool) {
        var request = URLRequest(url: state.response?.url ?? url)
        request.setValue("1", forHTTPHeaderField: "Icy-MetaData")
        request.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        if asRange {
            var last = offset + configuration.requestBytes - 1
            if let length = state.response?.contentLength { last = min(last, length - 1) }
            request.setValue("bytes=\(offset)-\(last)", forHTTPHeaderField: "Range")
            if let tag = state.response?.entityTag {
                request.setValue(tag, forHTTPHeaderField: "If-Range")
            } else if let modified = state.response?.lastModified {
                request.setValue(modified, forHTTPHeaderField: "If-Range")
            }
        }
        state.generation += 1
        state.taskOffset = offset
        state.taskIsRange = asRange
        state.taskBytes = 0
        state.metadata = IcyMetadataReader(interval: state.response?.metadataInterval)
        let task = session.dataTask(with: request)
        task.taskDescription = "\(state.generation)"
        state.task = task
        task.resume()
    }

    /// Starts the next request when the budget has room and none runs.
    private func pump() {
        state.withLock { state in
            guard !state.closed, state.task == nil, state.failure == nil, let response = state.response else { return }
            let next = state.bufferEnd
            if let length = response.contentLength, next >= length { return }
            if state.ended { return }
            if state.ahead >= budget(state) { return }
            if !response.acceptsRanges {
                // Asked for again only after it was dropped while full, or broke.
                guard state.dropped else { return }
                state.dropped = false
            }
            startTask(&state, at: next, asRange: response.acceptsRanges)
        }
    }

    private func wake() {
        signal.lock()
        signal.broadcast()
        signal.unlock()
    }

    // MARK: The delegate's calls

    /// Checks a response; for the first, makes the `Response`.
    fileprivate func received(_ urlResponse: URLResponse, task: URLSessionDataTask) -> Bool {
        let accepted: Bool = state.withLock { state in
            guard task.taskDescription == "\(state.generation)", !state.closed else { return false }
            guard let http = urlResponse as? HTTPURLResponse else {
                fail(&state, AudioError(.readFailed, "\(url.absoluteString): the answer is not HTTP"))
                return false
            }
            let status = http.statusCode
            let name = HTTPURLResponse.localizedString(forStatusCode: status)
            if status >= 400 {
                let code: AudioError.Code = status == 404 || status == 410 ? .fileNotFound : .readFailed
                fail(&state, AudioError(code, "\(url.absoluteString): the server answered HTTP \(status) (\(name))"))
                return false
            }
            guard status == 200 || status == 206 else {
                fail(&state, AudioError(.readFailed, "\(url.absoluteString): the server answered HTTP \(status) (\(name)), not audio"))
                return false
            }
            let header = { (field: String) in http.value(forHTTPHeaderField: field) }
            let type = header("Content-Type").map { $0.split(separator: ";")[0].trimmingCharacters(in: .whitespaces).lowercased() }
            // A web page is no audio; other types (text/plain, octet-stream from a server that
            // does not know the format) are left to the bytes, which decide.
            if let type, type == "text/html" || type == "application/xhtml+xml" {
                fail(&state, AudioError(.unsupportedFormat, "\(url.absoluteString): the server sent \(type), not audio (an error page?)"))
                return false
            }
            let range = header("Content-Range").flatMap(ContentRange.init)
            let length: Int? = range?.total ?? (status == 200 ? http.expectedContentLength > 0 ? Int(http.expectedContentLength) : nil : nil)
            guard let first = state.response else {
                // The opening request: a 206 says ranges work; a 200 is the whole resource.
                let response = Response(
                    url: http.url ?? url, contentLength: length, contentType: type,
                    acceptsRanges: status == 206 && length != nil, entityTag: header("ETag"),
                    lastModified: header("Last-Modified"), metadataInterval: header("icy-metaint").flatMap { Int($0) }.flatMap { $0 > 0 ? $0 : nil },
                    stationName: header("icy-name"))
                state.response = response
                state.opening = .response(response)
                state.taskIsRange = status == 206
                state.metadata = IcyMetadataReader(interval: response.metadataInterval)
                return true
            }
            // A later request: the same resource, from where it was asked.
            if state.taskIsRange, status == 200, state.taskOffset > 0 {
                fail(&state, changed(first, http))
                return false
            }
            if let tag = first.entityTag, let now = header("ETag"), tag != now {
                fail(&state, changed(first, http))
                return false
            }
            if first.entityTag == nil, let modified = first.lastModified, let now = header("Last-Modified"), modified != now {
                fail(&state, changed(first, http))
                return false
            }
            if let total = first.contentLength, let length, length != total {
                fail(&state, changed(first, http))
                return false
            }
            if state.taskIsRange, let range, range.first != state.taskOffset {
                fail(&state, AudioError(.readFailed, "\(url.absoluteString): asked for byte \(state.taskOffset), the server sent from byte \(range.first)"))
                return false
            }
            if !state.taskIsRange || status == 200 {
                // A whole response again (a live stream joined anew, or no ranges): bytes up to
                // where the buffer ends are skipped for a static resource.
                state.taskIsRange = false
                if !first.isLive { state.taskOffset = 0 }
            }
            return true
        }
        wake()
        return accepted
    }

    private func changed(_ first: Response, _ http: HTTPURLResponse) -> AudioError {
        let was = first.entityTag ?? first.lastModified ?? "length \(first.contentLength.map(String.init) ?? "?")"
        let now = http.value(forHTTPHeaderField: "ETag") ?? http.value(forHTTPHeaderField: "Last-Modified") ?? "a whole new body"
        return AudioError(.readFailed, "\(url.absoluteString): the file changed on the server between requests (\(was), now \(now)); its bytes are not spliced")
    }

    fileprivate func received(_ data: Data, task: URLSessionDataTask) {
        var titles: [(String, Int)] = []
        let handler: (@Sendable (String, Int) -> Void)? = state.withLock { state in
            guard task.taskDescription == "\(state.generation)", !state.closed, state.failure == nil else { return nil }
            data.withUnsafeBytes { raw in
                var audio: [UInt8] = []
                audio.reserveCapacity(raw.count)
                state.metadata.split(raw, audio: &audio, titles: &titles)
                // Titles are placed by the stream offset of the audio byte they come before.
                let base = state.taskOffset
                titles = titles.map { ($0.0, base + $0.1) }
                var bytes = audio[...]
                if state.taskOffset < state.bufferEnd {
                    // Bytes the buffer has already (a whole response after a break): skipped.
                    let skip = min(bytes.count, state.bufferEnd - state.taskOffset)
                    bytes = bytes.dropFirst(skip)
                    state.taskOffset += skip
                }
                if state.taskOffset > state.bufferEnd, !(state.response?.isLive ?? false) {
                    fail(&state, AudioError(.readFailed, "\(url.absoluteString): the bytes from \(state.bufferEnd) to \(state.taskOffset) never came"))
                    return
                }
                state.bytes.append(contentsOf: bytes)
                state.taskOffset = state.bufferEnd
                state.taskBytes += bytes.count
                if !bytes.isEmpty { state.failures = 0 }
            }
            if let response = state.response, !response.acceptsRanges, state.ahead > budget(state) + configuration.requestBytes {
                // A response that cannot be paused fills the budget: dropped rather than held,
                // and asked for again when the reader has made room.
                state.task?.cancel()
                state.task = nil
                state.generation += 1
                state.dropped = true
            }
            return state.onTitle
        }
        if let handler { for (title, offset) in titles { handler(title, offset) } }
        wake()
    }

    fileprivate func completed(_ task: URLSessionTask, error: (any Error)?) {
        let retry: Double? = state.withLock { state in
            guard task.taskDescription == "\(state.generation)", !state.closed else { return nil }
            state.task = nil
            guard state.failure == nil else { return nil }
            guard let response = state.response else {
                let message = error.map { "\($0.localizedDescription)" } ?? "no response"
                fail(&state, AudioError(.readFailed, "\(url.absoluteString): cannot open: \(message)"))
                return nil
            }
            let complete = response.contentLength.map { state.bufferEnd >= $0 } ?? false
            if error == nil, complete || (response.isLive ? false : !response.acceptsRanges) {
                state.ended = true
                return nil
            }
            if error == nil, response.acceptsRanges, state.taskBytes > 0 {
                return 0  // the window is done: the next one when the budget has room
            }
            if error == nil, response.isLive {
                state.ended = true
                return nil
            }
            state.failures += 1
            if state.failures > configuration.retries {
                let text = error.map { $0.localizedDescription } ?? "the body ended early"
                fail(&state, AudioError(.readFailed, "\(url.absoluteString): the connection broke at byte \(state.bufferEnd) and \(configuration.retries) retries did not mend it: \(text)"))
                return nil
            }
            if !response.acceptsRanges { state.dropped = true }
            return 0.1 * Double(1 << min(state.failures - 1, 4))
        }
        wake()
        guard let retry else { return }
        if retry == 0 {
            pump()
        } else {
            DispatchQueue.global().asyncAfter(deadline: .now() + retry) { [weak self] in self?.pump() }
        }
    }

    private func fail(_ state: inout State, _ error: AudioError) {
        if state.response == nil { state.opening = .failed(error) }
        state.failure = error
        state.task?.cancel()
        state.task = nil
    }
}

/// A `Content-Range: bytes first-last/total` header.
struct ContentRange: Equatable {
    var first: Int
    var last: Int
    var total: Int?

    init?(_ text: String) {
        let parts = text.trimmingCharacters(in: .whitespaces).split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bytes" else { return nil }
        let spanAndTotal = parts[1].split(separator: "/", maxSplits: 1)
        guard spanAndTotal.count == 2 else { return nil }
        let span = spanAndTotal[0].split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard span.count == 2, let first = Int(span[0]), let last = Int(span[1]), first >= 0, last >= first else { return nil }
        self.first = first
        self.last = last
        total = spanAndTotal[1] == "*" ? nil : Int(spanAndTotal[1])
        if let total, total <= last { return nil }
    }
}

/// A weak reference that may cross threads.
private struct Weak<Object: AnyObject & Sendable>: Sendable {
    weak var object: Object?
    init(_ object: Object) { self.object = object }
}

/// URLSession's delegate: holds its source weakly (the session holds the delegate until it
/// is invalidated, which the source's `deinit` does).
private final class Delegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    var source: Weak<HTTPSource>?

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        let accepted = source?.object?.received(response, task: dataTask) ?? false
        completionHandler(accepted ? .allow : .cancel)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        source?.object?.received(data, task: dataTask)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        source?.object?.completed(task, error: error)
    }
}
