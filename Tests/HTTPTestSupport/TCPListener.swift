#if canImport(Glibc)
import Glibc
#endif
import SpoolCore

/// The listening half the fault proxy and the ICY server share: a socket on 127.0.0.1 at a
/// port of the system's choosing, an accepting thread, and a thread per connection that runs
/// the server's handler and then closes the connection. `stop()` ends and joins them all; the
/// owner must call it, since the threads hold the listener until they end.
final class TCPListener: Sendable {
    /// What a connection's thread runs: the accepted descriptor (non-blocking; the listener
    /// closes it when the handler returns) and the signal that fires when the server stops.
    typealias Handler = @Sendable (_ descriptor: Int32, _ wake: WakeSignal) -> Void

    /// The threads, and whether the listener has stopped. A connection's thread is recorded
    /// by the accepting thread, so once `stop()` has joined that one the record is complete.
    private struct State {
        var acceptingThread: JoinableThread?
        var connectionThreads: [Int: JoinableThread] = [:]
        var finishedConnections: Set<Int> = []
        var nextConnection = 0
        var isStopped = false
    }

    /// The port the listener accepts connections on.
    let port: Int
    private let descriptor: Int32
    private let wake: WakeSignal
    private let state = Locked(State())

    /// Starts listening and accepting.
    /// - Parameter handler: Runs once for each connection, on a thread of its own.
    /// - Throws: `TestServerError.Code.socketFailed` when the socket or a thread cannot be made.
    init(handler: @escaping Handler) throws {
        (descriptor, port) = try Socket.listening()
        do {
            wake = try WakeSignal()
        } catch {
            close(descriptor)
            throw error
        }
        do {
            let thread = try JoinableThread { [self] in acceptConnections(handler) }
            state.withLock { $0.acceptingThread = thread }
        } catch {
            close(descriptor)
            throw error
        }
    }

    /// Stops accepting, wakes every connection's thread, waits for them all to end, and
    /// closes the listening socket. Safe to call more than once.
    func stop() {
        let (wasStopped, accepting) = state.withLock { state in
            defer {
                state.isStopped = true
                state.acceptingThread = nil
            }
            return (state.isStopped, state.acceptingThread)
        }
        guard !wasStopped else { return }
        wake.signal()
        accepting?.join()  // after this no connection thread starts
        let connections = state.withLock { state in
            defer { state.connectionThreads = [:] }
            return Array(state.connectionThreads.values)
        }
        for thread in connections { thread.join() }
        close(descriptor)
    }

    /// The accepting thread's loop: until the wake signal fires, accept and start a thread for
    /// each connection, joining the threads of connections that have ended.
    private func acceptConnections(_ handler: @escaping Handler) {
        while true {
            switch Socket.wait(descriptor, for: Int16(POLLIN), wake: wake, timeoutMilliseconds: 1000) {
            case .stopped: return
            case .timedOut: continue
            case .ready: break
            }
            joinFinishedConnections()
            guard let connection = Socket.accept(from: descriptor) else { continue }
            let number = state.withLock { state in
                defer { state.nextConnection += 1 }
                return state.nextConnection
            }
            let wake = self.wake
            let thread = try? JoinableThread { [self] in
                handler(connection, wake)
                close(connection)
                state.withLock { _ = $0.finishedConnections.insert(number) }
            }
            guard let thread else {
                close(connection)
                continue
            }
            state.withLock { $0.connectionThreads[number] = thread }
        }
    }

    /// Joins the threads of connections whose handlers have returned.
    private func joinFinishedConnections() {
        let finished = state.withLock { state in
            let numbers = state.finishedConnections.filter { state.connectionThreads[$0] != nil }
            state.finishedConnections.subtract(numbers)
            return numbers.compactMap { state.connectionThreads.removeValue(forKey: $0) }
        }
        for thread in finished { thread.join() }
    }
}
