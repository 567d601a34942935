import Foundation
import Glibc
import SpoolTestSupport

/// The built `spool` running on a pseudo-terminal: its standard input, output and error are
/// the terminal's slave side, the test holds the master side, types keys into it and reads
/// what the program draws.
final class PseudoTerminal {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    let pid: pid_t
    private let master: CInt
    private(set) var output: [UInt8] = []
    private var exitStatus: CInt?

    /// Starts `spool` with `arguments` on a new terminal of `columns` × `rows`.
    init(_ arguments: [String], columns: UInt16 = 100, rows: UInt16 = 24) throws {
        var master: CInt = -1, slave: CInt = -1
        var size = winsize(ws_row: rows, ws_col: columns, ws_xpixel: 0, ws_ypixel: 0)
        guard openpty(&master, &slave, nil, nil, &size) == 0 else {
            throw Failure(description: "openpty: \(String(cString: strerror(errno)))")
        }
        defer { close(slave) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for descriptor in [STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO] {
            posix_spawn_file_actions_adddup2(&actions, slave, descriptor)
        }
        posix_spawn_file_actions_addclose(&actions, slave)
        posix_spawn_file_actions_addclose(&actions, master)
        // As a shell starts a program: no signal blocked, none ignored (the test runner's
        // threads block some, and a child inherits the mask).
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), handled = sigset_t()
        sigemptyset(&none)
        sigemptyset(&handled)
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGQUIT] { sigaddset(&handled, signal) }
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &handled)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let path = Tool.executable.path
        let words = [path] + arguments
        var argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
        defer { for word in argv { free(word) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, path, &actions, &attributes, &argv, environ)
        guard status == 0 else {
            close(master)
            throw Failure(description: "posix_spawn \(path): \(String(cString: strerror(status)))")
        }
        self.pid = pid
        self.master = master
    }

    deinit {
        if exitStatus == nil {
            kill(pid, SIGKILL)
            var status: CInt = 0
            waitpid(pid, &status, 0)
        }
        close(master)
    }

    /// What the program wrote, as text.
    var text: String { String(decoding: output, as: UTF8.self) }

    /// The terminal's settings as the program left them (the master reads the slave's).
    var attributes: termios {
        var attributes = termios()
        tcgetattr(master, &attributes)
        return attributes
    }

    /// Types `keys`.
    func send(_ keys: String) {
        let bytes = Array(keys.utf8)
        _ = bytes.withUnsafeBytes { write(master, $0.baseAddress, $0.count) }
    }

    /// Reads what the program writes for up to `seconds`.
    func read(for seconds: Double) {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline { readOnce(waitingAtMost: deadline.timeIntervalSinceNow) }
    }

    /// Reads until `condition` holds of the output, for up to `seconds`.
    /// - Returns: Whether it came to hold.
    @discardableResult
    func read(until condition: (PseudoTerminal) -> Bool, seconds: Double = 5) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition(self) {
            guard Date() < deadline else { return false }
            readOnce(waitingAtMost: deadline.timeIntervalSinceNow)
        }
        return true
    }

    private func readOnce(waitingAtMost seconds: Double) {
        var descriptor = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, CInt(max(1, min(100, seconds * 1000)))) > 0 else { return }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(master, $0.baseAddress, $0.count) }
        if count > 0 {
            output += buffer[0..<count]
        } else {
            usleep(10_000)  // EIO once the program closed its side: nothing more to read
        }
    }

    /// Waits for the program to end, reading what it writes meanwhile.
    /// - Returns: The status `waitpid` gave, or nil when it did not end in time.
    func waitForExit(seconds: Double = 5) -> CInt? {
        if let exitStatus { return exitStatus }
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            var status: CInt = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                read(for: 0.05)
                exitStatus = status
                return status
            }
            readOnce(waitingAtMost: 0.05)
        }
        return nil
    }

    /// The exit code of a program that exited, nil for one a signal ended.
    static func exitCode(_ status: CInt) -> CInt? { status & 0x7F == 0 ? (status >> 8) & 0xFF : nil }
    /// The signal that ended a program, nil for one that exited.
    static func terminatingSignal(_ status: CInt) -> CInt? {
        let signal = status & 0x7F
        return signal != 0 && signal != 0x7F ? signal : nil
    }
}

/// One status line of the terminal player, read back from the screen.
struct StatusReading: Equatable {
    var state: String
    var elapsed: Double
    var duration: Double

    /// The last status line in `text`.
    static func last(in text: String) -> StatusReading? {
        let pattern = /(playing|paused|stopped) +(\d+):(\d\d)\.(\d) \/ (\d+):(\d\d)\.(\d)/
        guard let match = text.matches(of: pattern).last else { return nil }
        func seconds(_ m: Substring, _ s: Substring, _ t: Substring) -> Double {
            Double(Int(m)! * 60 + Int(s)!) + Double(Int(t)!) / 10
        }
        let o = match.output
        return StatusReading(state: String(o.1), elapsed: seconds(o.2, o.3, o.4), duration: seconds(o.5, o.6, o.7))
    }
}
