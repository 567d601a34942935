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
        let listing = try SoundServer.run("pactl", (server.map { ["--server", $0] } ?? []) + ["list", "sink-inputs"]).output
        var found: SinkInput?
        var inside = false
        for line in listing.split(separator: "\n") {
            if line.hasPrefix("Sink Input #") {
                if inside { break }
                inside = Int(line.dropFirst("Sink Input #".count)) == index
                if inside { found = SinkInput() }
                continue
            }
            guard inside else { continue }
            let text = line.trimmingCharacters(in: .whitespaces)
            func value(_ key: String) -> String? {
                text.hasPrefix(key) ? String(text.dropFirst(key.count)).trimmingCharacters(in: .whitespaces) : nil
            }
            func microseconds(_ text: String) -> Int { Int(text.split(separator: " ").first ?? "") ?? -1 }
            if let sink = value("Sink:") { found?.sink = sink }
            if let spec = value("Sample Specification:") { found?.sampleSpecification = spec }
            if let buffer = value("Buffer Latency:") { found?.bufferMicroseconds = microseconds(buffer) }
            if let sink = value("Sink Latency:") { found?.sinkMicroseconds = microseconds(sink) }
            if let mute = value("Mute:") { found?.muted = mute == "yes" }
            if let equals = text.range(of: " = \""), text.hasSuffix("\"") {
                found?.properties[String(text[..<equals.lowerBound])] = String(text[equals.upperBound...].dropLast())
            }
        }
        return found
    }
}
