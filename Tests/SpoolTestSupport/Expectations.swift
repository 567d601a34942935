import Foundation
import SpoolCore
import Testing

/// Expects `body` to throw an `AudioError` with `code`; `what` names the call in the message.
public func expectError(_ code: AudioError.Code, _ what: String? = nil, sourceLocation: SourceLocation = #_sourceLocation,
                        _ body: () throws -> Void) {
    let label = what.map { "\($0): " } ?? ""
    do {
        try body()
        Issue.record("\(label)expected \(code), nothing was thrown", sourceLocation: sourceLocation)
    } catch let error as AudioError {
        #expect(error.code == code, "\(label)\(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("\(label)expected AudioError \(code), got \(error)", sourceLocation: sourceLocation)
    }
}

/// Expects `body`, which would return a value, to throw an `AudioError` with `code`.
public func expectError<Value>(_ code: AudioError.Code, _ what: String? = nil,
                               sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Value) {
    expectError(code, what, sourceLocation: sourceLocation) { _ = try body() }
}

/// The kernel's name of the calling thread (`/proc/thread-self/comm`).
public func currentThreadName() -> String {
    ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "?")
        .trimmingCharacters(in: .whitespacesAndNewlines)
}

/// Threads of this process (`/proc/self/task`).
public func threadCount() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? -1
}
