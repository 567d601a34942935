/// The one error type Spool throws: a code to switch on, a message that names the file or
/// parameter at fault, and the underlying cause when there is one.
///
/// Codes are a struct over a private enum so that new codes can be added without breaking
/// callers that switch over the ones they know.
public struct AudioError: Error, CustomStringConvertible, Sendable {
    /// What kind of failure this is.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Kind: String, Hashable, Sendable {
            case fileNotFound, readFailed, writeFailed, emptyInput, unsupportedFormat
            case corruptData, truncated, formatChanged, invalidParameter, invalidState
            case outOfRange, deviceUnavailable, deviceLost, libraryFailure, unsupported
        }
        private let kind: Kind
        private init(_ kind: Kind) { self.kind = kind }

        /// The file does not exist or cannot be opened.
        public static let fileNotFound = Code(.fileNotFound)
        /// Reading the input failed (an I/O error, not bad content).
        public static let readFailed = Code(.readFailed)
        /// Writing an output file failed.
        public static let writeFailed = Code(.writeFailed)
        /// The input has no bytes, or no audio.
        public static let emptyInput = Code(.emptyInput)
        /// No decoder recognises the input, or its encoding is not supported.
        public static let unsupportedFormat = Code(.unsupportedFormat)
        /// The input claims to be a supported format but its contents are broken.
        public static let corruptData = Code(.corruptData)
        /// The input ends before its header says it should.
        public static let truncated = Code(.truncated)
        /// A stream changes sample rate or channel count part-way (a chained Ogg link).
        public static let formatChanged = Code(.formatChanged)
        /// A parameter is outside what the call accepts.
        public static let invalidParameter = Code(.invalidParameter)
        /// The call is not allowed in the object's current state.
        public static let invalidState = Code(.invalidState)
        /// A frame position or range lies outside the audio.
        public static let outOfRange = Code(.outOfRange)
        /// No audio device could be opened.
        public static let deviceUnavailable = Code(.deviceUnavailable)
        /// The audio device went away while in use.
        public static let deviceLost = Code(.deviceLost)
        /// A C library reported a failure Spool has no better code for.
        public static let libraryFailure = Code(.libraryFailure)
        /// The object cannot do what was asked at all: an optional capability it does not have
        /// (a back-end without shared buffers), not a parameter or a state at fault.
        public static let unsupported = Code(.unsupported)

        public var description: String { kind.rawValue }
    }

    /// What kind of failure this is.
    public var code: Code
    /// A sentence naming what is wrong and with which file or parameter.
    public var message: String
    /// The error that caused this one, when there is one.
    public var underlying: (any Error)?

    /// Makes an error.
    ///
    /// - Parameters:
    ///   - code: What kind of failure this is.
    ///   - message: What is wrong, naming the file or parameter.
    ///   - underlying: The cause, when there is one.
    public init(_ code: Code, _ message: String, underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    public var description: String {
        if let underlying { return "\(message) (\(underlying))" }
        return message
    }
}

/// A status code returned by one of the C libraries, kept as the cause of an `AudioError`.
public struct LibraryStatus: Error, CustomStringConvertible, Sendable {
    /// The library that returned the status, e.g. `libmpg123`.
    public var library: String
    /// The raw status code.
    public var code: Int32
    /// The library's own text for the code.
    public var text: String

    /// Makes a status value.
    public init(library: String, code: Int32, text: String) {
        self.library = library
        self.code = code
        self.text = text
    }

    public var description: String { "\(library) \(code): \(text)" }
}
