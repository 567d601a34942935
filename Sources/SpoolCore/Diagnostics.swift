/// One line a C library that Spool drives wrote about itself: libasound's error reports,
/// OpenAL Soft's log. Spool keeps these off standard error; a program that wants them asks
/// with `Diagnostics.setLibraryMessageHandler(_:)`.
public struct LibraryMessage: Sendable, CustomStringConvertible {
    /// The library: `libasound` or `OpenAL Soft`.
    public let library: String
    /// What it said, one line, without its own prefix.
    public let text: String

    public var description: String { "\(library): \(text)" }
}

/// Where the C libraries' own messages go: nowhere unless a program asks. libasound prints its
/// errors to standard error and OpenAL Soft logs there; without this, a program with no sound
/// card or server printed a dozen lines of theirs before its own notice.
public enum Diagnostics {
    private static let handler = Locked<(@Sendable (LibraryMessage) -> Void)?>(nil)

    /// Sets what receives the libraries' messages, on the thread the library wrote on (keep
    /// it short; it may be a device's thread); `nil`, the default, drops them.
    /// - Parameter handler: The handler, or `nil`.
    public static func setLibraryMessageHandler(_ handler: (@Sendable (LibraryMessage) -> Void)?) {
        self.handler.withLock { $0 = handler }
    }

    /// Hands a library's line to the handler, if any.
    package static func report(library: String, _ text: String) {
        guard let handler = handler.withLock({ $0 }) else { return }
        handler(LibraryMessage(library: library, text: text))
    }
}
