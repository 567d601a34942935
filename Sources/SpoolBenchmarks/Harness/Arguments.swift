import Foundation
import SpoolCore

/// A usage mistake on the command line: exit status 2.
package struct UsageError: Error {
    package let message: String
    package init(_ message: String) { self.message = message }
}

/// The words after a subcommand: `--name value` options, `--flag` switches, and operands.
package struct Arguments {
    private var options: [String: String] = [:]
    private var flags: Set<String> = []
    package private(set) var operands: [String] = []
    private var consumed: Set<String> = []

    /// Parses `words`; `valued` names the options that take a value, `switches` the ones that don't.
    package init(_ words: [String], valued: Set<String>, switches: Set<String>) throws {
        var i = 0
        while i < words.count {
            let word = words[i]
            if word == "--" {
                operands += words[(i + 1)...]
                break
            }
            if word.hasPrefix("--") && word.count > 2 {
                var name = String(word.dropFirst(2))
                var value: String?
                if let equals = name.firstIndex(of: "=") {
                    value = String(name[name.index(after: equals)...])
                    name = String(name[..<equals])
                }
                if switches.contains(name), value == nil {
                    flags.insert(name)
                } else if valued.contains(name) {
                    if value == nil {
                        i += 1
                        guard i < words.count else { throw UsageError("--\(name) needs a value") }
                        value = words[i]
                    }
                    options[name] = value
                } else {
                    throw UsageError("unknown option --\(name)")
                }
            } else {
                operands.append(word)
            }
            i += 1
        }
    }

    package func has(_ flag: String) -> Bool { flags.contains(flag) }
    package func string(_ name: String) -> String? { options[name] }

    package func double(_ name: String, in range: ClosedRange<Double>? = nil) throws -> Double? {
        guard let text = options[name] else { return nil }
        guard let value = Double(text), value.isFinite else { throw UsageError("--\(name) takes a number, not '\(text)'") }
        if let range, !range.contains(value) { throw UsageError("--\(name) must be within \(range.lowerBound)...\(range.upperBound)") }
        return value
    }

    package func int(_ name: String, in range: ClosedRange<Int>? = nil) throws -> Int? {
        guard let text = options[name] else { return nil }
        guard let value = Int(text) else { throw UsageError("--\(name) takes a whole number, not '\(text)'") }
        if let range, !range.contains(value) { throw UsageError("--\(name) must be within \(range.lowerBound)...\(range.upperBound)") }
        return value
    }
}

/// An error already reported on stderr; only the exit status is left to set.
package struct ExitFailure: Error {
    package let error: AudioError
    package init(_ error: AudioError) { self.error = error }
}

/// Writes a line to standard error.
package func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}
