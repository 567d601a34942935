import SpoolCore

/// Decodes FLAC packets (not yet built).
final class FLACPacketDecoder: StreamPacketDecoder {
    init(_ dataFormat: StreamDataFormat, magicCookie: [UInt8]?) throws {
        throw AudioError(.unsupported, "FLAC packets are not decoded yet")
    }

    func decode(_ packet: StreamPacket, into output: inout [Float]) throws -> Int { 0 }
    func reset() {}
    var warnings: [DecodeWarning] { [] }
}
