import SpoolCore

/// Decodes MPEG audio packets (not yet built).
final class MPEGPacketDecoder: StreamPacketDecoder {
    init(_ dataFormat: StreamDataFormat) throws {
        throw AudioError(.unsupported, "MPEG audio packets are not decoded yet")
    }

    func decode(_ packet: StreamPacket, into output: inout [Float]) throws -> Int { 0 }
    func reset() {}
    var warnings: [DecodeWarning] { [] }
}
