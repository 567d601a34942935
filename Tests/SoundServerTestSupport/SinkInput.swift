import Foundation

/// One sink input as `pactl list sink-inputs` shows it.
public struct SinkInput {
    public var sink = ""
    public var sampleSpecification = ""
    public var bufferMicroseconds = 0
    public var sinkMicroseconds = 0
    public var muted = false
    public var properties: [String: String] = [:]

    /// The sink input numbered `index` on `server` (the shared one when nil), or nil when
    /// pactl does not list it.
    public static func find(index: Int, server: String? = nil) throws -> SinkInput? {
        try all(server: server)[index]
    }

    /// Every sink input on `server` (the shared one when nil), by index.
    public static func all(server: String? = nil) throws -> [Int: SinkInput] {
        let listing = try SoundServer.run("pactl", (server.map { ["--server", $0] } ?? []) + ["list", "sink-inputs"]).output
        var inputs: [Int: SinkInput] = [:]
        var current: Int?
        for line in listing.split(separator: "\n") {
            if line.hasPrefix("Sink Input #") {
                current = Int(line.dropFirst("Sink Input #".count))
                if let current { inputs[current] = SinkInput() }
                continue
            }
            guard let index = current else { continue }
            let text = line.trimmingCharacters(in: .whitespaces)
            func value(_ key: String) -> String? {
                text.hasPrefix(key) ? String(text.dropFirst(key.count)).trimmingCharacters(in: .whitespaces) : nil
            }
            func microseconds(_ text: String) -> Int { Int(text.split(separator: " ").first ?? "") ?? -1 }
            if let sink = value("Sink:") { inputs[index]?.sink = sink }
            if let spec = value("Sample Specification:") { inputs[index]?.sampleSpecification = spec }
            if let buffer = value("Buffer Latency:") { inputs[index]?.bufferMicroseconds = microseconds(buffer) }
            if let sink = value("Sink Latency:") { inputs[index]?.sinkMicroseconds = microseconds(sink) }
            if let mute = value("Mute:") { inputs[index]?.muted = mute == "yes" }
            if let equals = text.range(of: " = \""), text.hasSuffix("\"") {
                inputs[index]?.properties[String(text[..<equals.lowerBound])] = String(text[equals.upperBound...].dropLast())
            }
        }
        return inputs
    }
}
