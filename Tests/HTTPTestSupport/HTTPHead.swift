import Foundation

/// The little HTTP parsing the servers do: finding where a head ends, and reading its headers.
enum HTTPHead {
    /// Where the first `\r\n\r\n` in `bytes` starts, as an offset from their start.
    static func end(in bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        return (0...(bytes.count - 4)).first {
            bytes[$0] == 13 && bytes[$0 + 1] == 10 && bytes[$0 + 2] == 13 && bytes[$0 + 3] == 10
        }
    }

    /// The headers of a head (its lines after the first), names lowercased, values trimmed.
    /// A name that comes twice keeps its last value.
    static func headers(_ head: String) -> [String: String] {
        var headers: [String: String] = [:]
        for line in head.split(separator: "\r\n").dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2 else { continue }
            headers[parts[0].trimmingCharacters(in: .whitespaces).lowercased()] =
                parts[1].trimmingCharacters(in: .whitespaces)
        }
        return headers
    }
}
