import Foundation

/// What the tests are running under, as `scripts/sanitize.sh` says through the environment.
public enum TestEnvironment {
    /// Whether a sanitizer build is running the tests (`SPOOL_SANITIZER` set and not empty).
    /// A sanitizer slows every call several times over: tests that race a deadline give it
    /// longer, and checks of real-time timing are left to the plain run.
    public static let underSanitizer = ProcessInfo.processInfo.environment["SPOOL_SANITIZER"].map { !$0.isEmpty } ?? false
}
