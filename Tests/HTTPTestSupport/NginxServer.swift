import Foundation
import SpoolCore
#if canImport(Glibc)
import Glibc
#endif

/// A real nginx of the test's own on 127.0.0.1, serving a folder: whole files, ranges of them
/// (nginx answers `Range:` on static files, with `ETag` and `Last-Modified`), and a few
/// locations that stand for what a streaming client meets on the web.
///
/// | Path | Answer |
/// |---|---|
/// | `/<file>` | the file from `root`, with its MIME type (`audio/mpeg` for `.mp3`, …) |
/// | `/rate/<bytesPerSecond>/<file>` | the same file, sent at that rate (`limit_rate`) |
/// | `/redirect/<file>` | `302` to `/<file>` |
/// | `/redirect-twice/<file>` | `302` to `/redirect/<file>` |
/// | `/status/403`, `/status/404`, `/status/500` | that status, with a small `text/html` body |
/// | `/html/<anything>` | `200`, `text/html`: an error page served as a success |
///
/// Redirects carry a relative `Location` (`absolute_redirect off`), so that a client that came
/// through a `FaultProxy` is sent back through it, not straight to nginx.
///
/// nginx runs in the foreground of a child process (`daemon off`, `master_process off`: one
/// process to stop), with its configuration, logs, pid file and temporary folders in a
/// temporary directory of its own, which `stop()` removes.
public final class NginxServer: Sendable {
    /// The folder the server serves.
    public let root: URL
    /// The temporary directory holding the configuration (`nginx.conf`), the logs
    /// (`error.log`, `access.log`) and nginx's temporary folders.
    public let directory: URL
    /// The port the server listens on.
    public let port: Int
    /// nginx's process, until it is stopped.
    private let process: Locked<pid_t?>

    /// The nginx the servers run: Debian's (`apt-get install nginx`, see scripts/setup.sh).
    public static let executable = "/usr/sbin/nginx"

    /// Starts nginx serving `root` and waits until it takes connections.
    /// - Parameter root: The folder whose files the server serves.
    /// - Throws: `TestServerError.Code.fileFailed` when the temporary directory cannot be
    ///   written, `.spawnFailed` when nginx cannot be started, and `.startTimedOut` when it
    ///   ends or takes no connection within 5 s; the message then holds the tail of its error
    ///   log.
    public init(root: URL) throws {
        let root = root.standardizedFileURL
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spool-nginx-\(UUID().uuidString)")
        do {
            try FileManager.default.createDirectory(at: directory.appendingPathComponent("temp"),
                                                    withIntermediateDirectories: true)
        } catch {
            throw TestServerError(.fileFailed, "cannot make \(directory.path): \(error)")
        }
        do {
            let (port, pid) = try Self.launch(root: root, directory: directory)
            self.port = port
            process = Locked(pid)
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
        self.root = root
        self.directory = directory
    }

    deinit {
        stop()
    }

    /// The server's address for `path`: `http://127.0.0.1:PORT/path`.
    /// - Parameter path: The path, with or without its leading `/`.
    public func url(_ path: String) -> URL {
        let path = path.hasPrefix("/") ? String(path.dropFirst()) : path
        return URL(string: "http://127.0.0.1:\(port)/\(path)")!
    }

    /// Stops nginx (SIGTERM, then SIGKILL if it has not ended within 3 s), waits for its
    /// process to end, and removes the temporary directory. Safe to call more than once;
    /// `deinit` calls it.
    public func stop() {
        let pid = process.withLock { pid in
            defer { pid = nil }
            return pid
        }
        guard let pid else { return }
        Self.end(pid)
        try? FileManager.default.removeItem(at: directory)
    }

    /// Starts nginx at a free port, and again at another one when another process took that
    /// port first (nginx then ends with `EADDRINUSE` in its log), up to five times.
    /// - Returns: The port and the running process.
    private static func launch(root: URL, directory: URL) throws -> (port: Int, pid: pid_t) {
        var attempt = 1
        while true {
            let port = try Socket.freePort()
            let configuration = directory.appendingPathComponent("nginx.conf")
            do {
                try self.configuration(root: root, directory: directory, port: port)
                    .write(to: configuration, atomically: true, encoding: .utf8)
            } catch {
                throw TestServerError(.fileFailed, "cannot write \(configuration.path): \(error)")
            }
            let pid = try spawn(configuration: configuration, directory: directory)
            switch waitUntilListening(pid: pid, port: port) {
            case .listening:
                return (port, pid)
            case .exited where attempt < 5 && errorLogTail(directory).contains("Address already in use"):
                attempt += 1
            case .exited:
                throw TestServerError(.startTimedOut, "nginx ended at start:\n\(errorLogTail(directory))")
            case .timedOut:
                end(pid)
                throw TestServerError(.startTimedOut,
                                      "nginx took no connection on port \(port) within 5 s:\n\(errorLogTail(directory))")
            }
        }
    }

    /// How waiting for a new nginx to listen ended.
    private enum Start {
        case listening, exited, timedOut
    }

    /// Tries to connect to nginx every 20 ms for 5 s, watching that it still runs.
    private static func waitUntilListening(pid: pid_t, port: Int) -> Start {
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid { return .exited }
            if let connection = Socket.connect(port: port, timeoutMilliseconds: 200) {
                close(connection)
                return .listening
            }
            usleep(20_000)
        }
        return .timedOut
    }

    /// Spawns nginx with `posix_spawn`, its output to `stderr.log`. Its signal mask is cleared
    /// and its signal actions reset: a test process's threads block signals, a child inherits
    /// that, and a blocked SIGTERM would not stop it. The spawn holds the lock under which the
    /// servers mark their descriptors close-on-exec, so that nginx inherits none of them.
    private static func spawn(configuration: URL, directory: URL) throws -> pid_t {
        let errorLog = directory.appendingPathComponent("error.log").path
        // -e: nginx opens its compiled-in error log (/var/log/nginx) before it reads the
        // configuration's `error_log`, unless told another.
        let arguments = [executable, "-c", configuration.path, "-p", directory.path + "/", "-e", errorLog]
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for string in argv + envp { free(string) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        let output = directory.appendingPathComponent("stderr.log").path
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var signals = sigset_t()
        sigemptyset(&signals)
        posix_spawnattr_setsigmask(&attributes, &signals)
        sigfillset(&signals)
        posix_spawnattr_setsigdefault(&attributes, &signals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var pid: pid_t = 0
        let status = Socket.inheritanceLock.withLock { _ in
            posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        }
        guard status == 0 else {
            throw TestServerError(.spawnFailed, "cannot start \(executable)", errorNumber: status)
        }
        return pid
    }

    /// Ends nginx: SIGTERM, up to 3 s for it to exit, then SIGKILL; reaps the process.
    private static func end(_ pid: pid_t) {
        var status: Int32 = 0
        _ = kill(pid, SIGTERM)
        let deadline = ContinuousClock.now + .seconds(3)
        while ContinuousClock.now < deadline {
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid || (result < 0 && errno == ECHILD) { return }
            usleep(10_000)
        }
        _ = kill(pid, SIGKILL)
        _ = waitpid(pid, &status, 0)
    }

    /// The last 20 lines of nginx's error log and of its standard error, for an error message.
    private static func errorLogTail(_ directory: URL) -> String {
        ["error.log", "stderr.log"].map { name in
            let text = (try? String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)) ?? ""
            return text.split(separator: "\n", omittingEmptySubsequences: true).suffix(20).joined(separator: "\n")
        }.filter { !$0.isEmpty }.joined(separator: "\n")
    }
}
