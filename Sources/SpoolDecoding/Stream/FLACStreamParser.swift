import SpoolCore

/// The FLAC stream parser (not yet built).
struct FLACStreamParser: StreamFormatParser {
    init(leadingTags tags: AudioTags) throws {
        throw AudioError(.unsupported, "streams of FLAC are not parsed yet")
    }

    mutating func parse(_ input: inout StreamInput, _ events: inout StreamEvents) throws {}
    mutating func finish(_ input: inout StreamInput, _ events: inout StreamEvents) throws {}
    func seekPoint(toFrame frame: Int, _ properties: StreamProperties) throws -> StreamSeekPoint {
        throw AudioError(.unsupported, "streams of FLAC are not parsed yet")
    }
    mutating func discontinuity(at point: StreamSeekPoint?) {}
}
