import SpoolCore

/// The WAV, AIFF and CAF stream parser (not yet built).
struct ChunkStreamParser: StreamFormatParser {
    init(format: StreamFileFormat) throws {
        throw AudioError(.unsupported, "streams of WAV, AIFF and CAF are not parsed yet")
    }

    mutating func parse(_ input: inout StreamInput, _ events: inout StreamEvents) throws {}
    mutating func finish(_ input: inout StreamInput, _ events: inout StreamEvents) throws {}
    func seekPoint(toFrame frame: Int, _ properties: StreamProperties) throws -> StreamSeekPoint {
        throw AudioError(.unsupported, "streams of WAV, AIFF and CAF are not parsed yet")
    }
    mutating func discontinuity(at point: StreamSeekPoint?) {}
}
