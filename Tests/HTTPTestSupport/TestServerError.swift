#if canImport(Glibc)
import Glibc
#endif

/// A failure to start or run one of the test servers: a code a test can switch on, a message
/// naming what failed, and the `errno` of the system call at fault, if there was one.
public struct TestServerError: Error, CustomStringConvertible, Sendable {
    /// What kind of failure this is.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Kind: String, Hashable, Sendable {
            case socketFailed, spawnFailed, startTimedOut, fileFailed
        }
        private let kind: Kind
        private init(_ kind: Kind) { self.kind = kind }

        /// A socket could not be made, bound, listened on or connected.
        public static let socketFailed = Code(.socketFailed)
        /// The server's process could not be started (`posix_spawn`).
        public static let spawnFailed = Code(.spawnFailed)
        /// The server did not take connections in time, or ended before it did.
        public static let startTimedOut = Code(.startTimedOut)
        /// The server's temporary directory or configuration could not be written.
        public static let fileFailed = Code(.fileFailed)

        /// The code's name, as `socketFailed`.
        public var description: String { kind.rawValue }
    }

    /// What kind of failure this is.
    public let code: Code
    /// What failed, for a person: the call, the port or the file, and for nginx the tail of its
    /// error log.
    public let message: String
    /// The `errno` of the failed system call, or `nil` when none failed.
    public let errorNumber: Int32?

    /// Makes an error.
    /// - Parameters:
    ///   - code: What kind of failure this is.
    ///   - message: What failed, for a person.
    ///   - errorNumber: The `errno` of the failed system call, if there was one.
    public init(_ code: Code, _ message: String, errorNumber: Int32? = nil) {
        self.code = code
        self.message = message
        self.errorNumber = errorNumber
    }

    /// The message, with the system's text for `errorNumber` when there is one.
    public var description: String {
        guard let errorNumber else { return "\(code): \(message)" }
        return "\(code): \(message): \(String(cString: strerror(errorNumber))) (errno \(errorNumber))"
    }

    /// An error for the system call that just failed, from the current `errno`.
    static func system(_ code: Code, _ message: String) -> TestServerError {
        TestServerError(code, message, errorNumber: errno)
    }
}
