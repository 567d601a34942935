import Foundation
import SpoolCore
import SpoolOutput
#if canImport(Glibc)
import Glibc
#endif

/// OpenAL Soft's log, routed into Spool's `Diagnostics` rather than standard error.
///
/// OpenAL Soft 1.19 reads `ALSOFT_LOGLEVEL` and `ALSOFT_LOGFILE` at its first call, as it reads
/// its configuration; so before that call Spool points the log file at the write end of a pipe
/// of its own (`/dev/fd/N`) and a thread reads its lines into `Diagnostics`. A program that
/// set either variable itself keeps what it set. libasound, which OpenAL Soft's ALSA driver
/// uses, is routed too (`ALSALog`).
enum OpenALLog {
    private static let installed: Void = install()

    /// Routes the log, once; called before OpenAL Soft's first call.
    static func route() { _ = installed }

    private static func install() {
        ALSALog.install()
        let environment = ProcessInfo.processInfo.environment
        guard environment["ALSOFT_LOGLEVEL"] == nil, environment["ALSOFT_LOGFILE"] == nil else { return }
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else {
            setenv("ALSOFT_LOGLEVEL", "0", 1)  // no pipe: silence rather than standard error
            return
        }
        let (reader, writer) = (ends[0], ends[1])
        // Neither end passes to a program this one starts.
        _ = fcntl(reader, F_SETFD, FD_CLOEXEC)
        _ = fcntl(writer, F_SETFD, FD_CLOEXEC)
        setenv("ALSOFT_LOGFILE", "/dev/fd/\(writer)", 1)
        setenv("ALSOFT_LOGLEVEL", "2", 1)  // errors and warnings
        let thread = Thread {
            var pending: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = chunk.withUnsafeMutableBytes { read(reader, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { break }
                pending += chunk[0..<count]
                while let newline = pending.firstIndex(of: 10) {
                    let line = String(decoding: pending[..<newline], as: UTF8.self)
                    pending.removeSubrange(...newline)
                    Diagnostics.report(library: "OpenAL Soft", strippingPrefix(line))
                }
            }
        }
        thread.name = "spool-al-log"
        thread.start()
    }

    /// The line without OpenAL Soft's own `AL lib: (EE) ` prefix.
    private static func strippingPrefix(_ line: String) -> String {
        guard line.hasPrefix("AL lib: "), let close = line.firstIndex(of: ")") else { return line }
        return String(line[line.index(after: close)...].drop(while: { $0 == " " }))
    }
}
