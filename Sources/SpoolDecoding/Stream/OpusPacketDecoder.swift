import SpoolCore

/// Decodes Opus packets (not yet built).
final class OpusPacketDecoder: StreamPacketDecoder {
    init(_ dataFormat: StreamDataFormat, magicCookie: [UInt8]?) throws {
        throw AudioError(.unsupported, "Opus packets are not decoded yet")
    }

    func decode(_ packet: StreamPacket, into output: inout [Float]) throws -> Int { 0 }
    func reset() {}
    var warnings: [DecodeWarning] { [] }
}
