import Foundation
import Glibc
import Spool
import Synchronization

/// The signal that asked the terminal player to end (SIGINT, SIGTERM, SIGHUP, SIGQUIT), 0 for
/// none: the handler only stores it (an atomic store is async-signal-safe), the player's loop
/// sees it within one refresh, puts the terminal back and dies of the signal.
let pendingSignal = Atomic<Int32>(0)

/// The terminal as the player needs it, and put back as it was.
///
/// While active, the terminal delivers each key as it is typed, echoes nothing, and the cursor
/// is hidden. `ICANON`, `ECHO`, `ISIG` and `IEXTEN` are off (Ctrl-C arrives as a byte, so a
/// Ctrl-Z cannot stop the process with the terminal left raw), as are `IXON` (Ctrl-S does not
/// freeze the screen) and `ICRNL`. Output processing stays on, so a line written to the
/// standard error in the meantime still starts at the left margin.
final class TerminalMode {
    private let input: CInt
    private let output: CInt
    private let saved: termios
    private var active = false

    /// Whether both the standard input and the standard output are a terminal.
    static var isInteractive: Bool { isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1 }

    /// Enters the player's mode on `input` (keys) and `output` (the screen), and catches the
    /// signals that end a program so the terminal is put back before it ends.
    /// - Throws: `.invalidState` when the terminal's attributes cannot be read or set.
    init(input: CInt = STDIN_FILENO, output: CInt = STDOUT_FILENO) throws {
        self.input = input
        self.output = output
        var attributes = termios()
        guard tcgetattr(input, &attributes) == 0 else {
            throw AudioError(.invalidState, "the terminal's settings cannot be read: \(String(cString: strerror(errno)))")
        }
        saved = attributes
        var raw = attributes
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO | ISIG | IEXTEN)
        raw.c_iflag &= ~tcflag_t(IXON | ICRNL)
        // read() returns as soon as one byte is there; poll() does the waiting.
        withUnsafeMutableBytes(of: &raw.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGQUIT] {
            _ = Glibc.signal(signal) { number in pendingSignal.store(number, ordering: .relaxed) }
        }
        guard tcsetattr(input, TCSANOW, &raw) == 0 else {
            throw AudioError(.invalidState, "the terminal cannot be set up for keys: \(String(cString: strerror(errno)))")
        }
        active = true
        write(Self.hideCursor)
    }

    deinit { restore() }

    /// Hides the cursor (DECTCEM reset).
    static let hideCursor = "\u{1B}[?25l"
    /// Shows the cursor (DECTCEM set): the last thing the player writes.
    static let showCursor = "\u{1B}[?25h"

    /// Puts the terminal back as it was and shows the cursor; a second call does nothing.
    /// Pending output is written first (`TCSADRAIN`), so nothing typed later is lost.
    func restore() {
        guard active else { return }
        active = false
        write(Self.showCursor)
        var attributes = saved
        _ = tcsetattr(input, TCSADRAIN, &attributes)
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGQUIT] { _ = Glibc.signal(signal, SIG_DFL) }
    }

    /// Ends the process by the signal that arrived, now that the terminal is back: the shell
    /// sees the process die of it, as it would without the player's handlers.
    func dieOf(signal number: Int32) -> Never {
        restore()
        _ = Glibc.signal(number, SIG_DFL)
        // Delivered even where the parent started the process with the signal blocked.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, number)
        pthread_sigmask(SIG_UNBLOCK, &signals, nil)
        raise(number)
        exit(128 + number)
    }

    /// Columns of the terminal, 80 when it does not say.
    var columns: Int {
        var size = winsize()
        guard ioctl(output, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 80 }
        return Int(size.ws_col)
    }

    /// Writes `text` to the screen whole, retrying after a signal or a short write.
    func write(_ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { Glibc.write(output, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                return
            }
            bytes = bytes.dropFirst(written)
        }
    }

    /// Waits up to `milliseconds` for keys and returns the bytes typed: empty after the wait
    /// or when a signal cut it short, nil when the terminal is gone (hung up, or closed).
    func readKeys(waitingAtMost milliseconds: Int32) -> [UInt8]? {
        var descriptor = pollfd(fd: input, events: Int16(POLLIN), revents: 0)
        let ready = poll(&descriptor, 1, milliseconds)
        if ready < 0 { return errno == EINTR ? [] : nil }
        guard ready > 0 else { return [] }
        guard descriptor.revents & Int16(POLLIN) != 0 else { return nil }  // POLLHUP, POLLERR, POLLNVAL
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(input, $0.baseAddress, $0.count) }
        if count < 0 { return errno == EINTR || errno == EAGAIN ? [] : nil }
        return count > 0 ? Array(buffer[0..<count]) : nil
    }
}
