import SpoolCore

/// Decodes Vorbis packets (not yet built).
final class VorbisPacketDecoder: StreamPacketDecoder {
    init(_ dataFormat: StreamDataFormat, magicCookie: [UInt8]?) throws {
        throw AudioError(.unsupported, "Vorbis packets are not decoded yet")
    }

    func decode(_ packet: StreamPacket, into output: inout [Float]) throws -> Int { 0 }
    func reset() {}
    var warnings: [DecodeWarning] { [] }
}
