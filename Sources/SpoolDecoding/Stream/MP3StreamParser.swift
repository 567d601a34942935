import SpoolCore

/// The MP3 stream parser (not yet built).
struct MP3StreamParser: StreamFormatParser {
    init(leadingTags tags: AudioTags) throws {
        throw AudioError(.unsupported, "streams of MP3 are not parsed yet")
    }

    mutating func parse(_ input: inout StreamInput, _ events: inout StreamEvents) throws {}
    mutating func finish(_ input: inout StreamInput, _ events: inout StreamEvents) throws {}
    func seekPoint(toFrame frame: Int, _ properties: StreamProperties) throws -> StreamSeekPoint {
        throw AudioError(.unsupported, "streams of MP3 are not parsed yet")
    }
    mutating func discontinuity(at point: StreamSeekPoint?) {}
}
