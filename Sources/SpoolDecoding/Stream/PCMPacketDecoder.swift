import SpoolCore

/// Decodes PCM packets (not yet built).
final class PCMPacketDecoder: StreamPacketDecoder {
    init(_ dataFormat: StreamDataFormat, layout: StreamDataFormat.PCMLayout) throws {
        throw AudioError(.unsupported, "PCM packets are not decoded yet")
    }

    func decode(_ packet: StreamPacket, into output: inout [Float]) throws -> Int { 0 }
    func reset() {}
    var warnings: [DecodeWarning] { [] }
}
