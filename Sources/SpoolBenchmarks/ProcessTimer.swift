import Foundation
import SpoolCore
#if canImport(Glibc)
import Glibc
#endif

/// Times whole processes the one way every benchmark side is timed: `posix_spawn`, then a
/// blocking `wait4` — no polling, so the figure is the process's life to within the
/// scheduler's wake-up, not to a poll interval — with the monotonic clock read on both sides
/// and the child's CPU time taken from the `rusage` that `wait4` returns.
enum ProcessTimer {
    struct Measurement {
        /// Seconds from just before the spawn to the return of `wait4`.
        let wallSeconds: Double
        /// User plus system CPU seconds of the child.
        let cpuSeconds: Double
    }

    /// Runs `command` (looked up on `PATH` unless it holds a slash) with standard input and
    /// error on /dev/null and standard output on `sink`.
    /// - Returns: The measurement, or `nil` when it could not start or exited non-zero.
    static func run(_ command: [String], sink: String = "/dev/null") -> Measurement? {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for fd in [STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO] {
            posix_spawn_file_actions_addopen(&actions, fd, fd == STDOUT_FILENO ? sink : "/dev/null",
                                             fd == STDIN_FILENO ? O_RDONLY : O_WRONLY, 0)
        }
        var argv: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var pid: pid_t = 0
        let start = HostTime.seconds(from: 0, to: HostTime.now())
        guard posix_spawnp(&pid, command[0], &actions, nil, &argv, environ) == 0 else { return nil }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 {
            guard errno == EINTR else { return nil }
        }
        let wall = HostTime.seconds(from: 0, to: HostTime.now()) - start
        // WIFEXITED && WEXITSTATUS == 0
        guard status & 0x7F == 0, (status >> 8) & 0xFF == 0 else { return nil }
        func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) * 1e-6 }
        return Measurement(wallSeconds: wall, cpuSeconds: seconds(usage.ru_utime) + seconds(usage.ru_stime))
    }

    /// A device that discards what is written to it, for the output of timed processes:
    /// /dev/null, or /dev/zero where /dev/null is not the character device (a sandbox may
    /// leave a regular file there, and writing to it costs what writing a file costs, more
    /// for the side that writes more bytes). null(4): what is written to either is
    /// discarded.
    /// - Returns: The path, and whether it is a character device (false: /dev/null as it is).
    static var discardingSink: (path: String, isDevice: Bool) {
        for path in ["/dev/null", "/dev/zero"] {
            var info = stat()
            if stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFCHR { return (path, true) }
        }
        return ("/dev/null", false)
    }

    /// The running executable, for benchmarks that time the `spool` tool as a whole process.
    static var selfExecutable: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }
}
