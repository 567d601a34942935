import Foundation
import SpoolCore
#if canImport(Glibc)
import Glibc
#endif

/// A PulseAudio server of the test's own, on a socket in a temporary directory: a null sink
/// (`null`, 48 kHz stereo, the default sink) and `module-role-cork` with its default roles (a
/// `phone` stream corks `music` and `video` streams on its sink). A test may kill it and start
/// it again on the same socket without disturbing the shared server the other tests play to.
///
/// The daemon runs in the foreground of a child process (`--daemonize=no`), with `HOME`,
/// `XDG_RUNTIME_DIR` and `PULSE_RUNTIME_PATH` in the directory, so that it finds no other
/// server's runtime files, and no pid file. As root it warns that it is not meant to run as
/// root and runs. The socket takes anonymous clients, so that no cookie is needed.
public final class PrivateSoundServer {
    /// The temporary directory holding the socket, the runtime files and the server's log.
    public let directory: URL
    /// The server's address for `pa_context_connect` and `pactl --server`.
    public var address: String { "unix:\(directory.appendingPathComponent("native").path)" }
    private var pid: pid_t?

    /// Starts the server and waits until `pactl info` answers.
    /// - Throws: When the server cannot be started or does not answer within 5 s.
    public init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("spool-pulse-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("runtime"),
                                                withIntermediateDirectories: true)
        try start()
    }

    deinit {
        kill()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Whether the server's process runs.
    public var isRunning: Bool {
        guard let pid else { return false }
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == 0 else {
            self.pid = nil  // it has ended, and is now reaped
            return false
        }
        return true
    }

    /// Kills the server at once (SIGKILL: no goodbye to its clients, as a crash) and waits
    /// for its process to end.
    public func kill() {
        guard let pid else { return }
        _ = Glibc.kill(pid, SIGKILL)
        var status: Int32 = 0
        _ = waitpid(pid, &status, 0)
        self.pid = nil
    }

    /// Kills the server if it runs, then starts it again on the same socket (the new server
    /// removes the stale socket file) and waits until it answers.
    public func restart() throws {
        kill()
        try start()
    }

    /// Runs `pactl` on this server.
    /// - Returns: Its exit status and standard output.
    @discardableResult
    public func pactl(_ arguments: String...) throws -> (status: Int32, output: String) {
        try SoundServer.run("pactl", ["--server", address] + arguments)
    }

    /// Spawns the daemon with `posix_spawnp`, not `Process`: the daemon closes every file
    /// descriptor it inherits, Foundation's among them, which Foundation takes for the child's
    /// exit and then waits for it, blocking the thread that reaps every other child (`pactl`).
    private func start() throws {
        let arguments = [
            "pulseaudio", "-n", "--daemonize=no", "--exit-idle-time=-1", "--use-pid-file=no",
            "-L", "module-null-sink rate=48000 channels=2",
            "-L", "module-native-protocol-unix socket=\(directory.appendingPathComponent("native").path) auth-anonymous=1",
            "-L", "module-role-cork",
        ]
        var environment = ProcessInfo.processInfo.environment
        environment["HOME"] = directory.path
        environment["XDG_RUNTIME_DIR"] = directory.path
        environment["PULSE_RUNTIME_PATH"] = directory.appendingPathComponent("runtime").path
        environment["PULSE_STATE_PATH"] = directory.appendingPathComponent("state").path
        environment.removeValue(forKey: "PULSE_SERVER")
        let log = directory.appendingPathComponent("server.log").path
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for string in argv + envp { free(string) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, log, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        var pid: pid_t = 0
        let status = posix_spawnp(&pid, "pulseaudio", &actions, nil, argv, envp)
        guard status == 0 else {
            throw CocoaError(.featureUnsupported, userInfo: [NSLocalizedDescriptionKey: "cannot start pulseaudio: \(status)"])
        }
        self.pid = pid
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline {
            if try pactl("info").status == 0 { return }
            guard isRunning else { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        kill()
        throw CocoaError(.featureUnsupported, userInfo: [NSLocalizedDescriptionKey: "pulseaudio did not answer: \(output)"])
    }

    /// Plays a tone of `seconds` (3 s unless told) with `media.role=phone` on the server
    /// (`paplay`), in the background: the call ends when the test hangs up (`hangUp(_:)`) or
    /// when paplay is done, which waits for an idle null sink to drain its 2 s.
    public func playPhoneCall(seconds: Double = 3) throws -> Process {
        try SoundServer.playPhoneCall(server: address, directory: directory, seconds: seconds)
    }

    /// Ends a call at once. SIGKILL: the SIGTERM of `Process.terminate()` reached paplay
    /// blocked (a test process's threads block it, and a child inherits that).
    public static func hangUp(_ call: Process) {
        _ = Glibc.kill(call.processIdentifier, SIGKILL)
        call.waitUntilExit()
    }
}
