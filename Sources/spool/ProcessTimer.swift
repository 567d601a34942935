import Foundation
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

    /// Runs `command` (looked up on `PATH` unless it holds a slash) with standard input,
    /// output and error on /dev/null.
    /// - Returns: The measurement, or `nil` when it could not start or exited non-zero.
    static func run(_ command: [String]) -> Measurement? {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for fd in [STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO] {
            posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == STDIN_FILENO ? O_RDONLY : O_WRONLY, 0)
        }
        var argv: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var pid: pid_t = 0
        let start = BenchCommand.now()
        guard posix_spawnp(&pid, command[0], &actions, nil, &argv, environ) == 0 else { return nil }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 {
            guard errno == EINTR else { return nil }
        }
        let wall = BenchCommand.now() - start
        // WIFEXITED && WEXITSTATUS == 0
        guard status & 0x7F == 0, (status >> 8) & 0xFF == 0 else { return nil }
        func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) * 1e-6 }
        return Measurement(wallSeconds: wall, cpuSeconds: seconds(usage.ru_utime) + seconds(usage.ru_stime))
    }

    /// The running executable, for benchmarks that time the `spool` tool as a whole process.
    static var selfExecutable: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }
}
