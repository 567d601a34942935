import Foundation
import SpoolCore
@testable import SpoolDecoding

/// What every decoder fuzz target does with one input: open it from memory with one factory,
/// decode a bounded number of frames, seek once (to a frame the input's bytes choose) and
/// decode a little more. Errors are the expected outcome for most inputs; a crash, a trap, a
/// hang or a sanitizer report is the finding.
enum FuzzDecoder {
    /// Frames decoded per input at most: enough to cross several packets, few enough that a
    /// run makes thousands of executions a second.
    static let frameBudget = 1 << 12

    static func run(_ factory: DecoderFactory, _ bytes: UnsafePointer<UInt8>, _ count: Int) {
        let data = Data(bytes: bytes, count: count)
        guard let decoder = try? factory.open(.memory(data, name: "fuzz")) else { return }
        let channels = decoder.format.channelCount
        var buffer = [Float](repeating: 0, count: 1024 * channels)
        func decode(_ budget: Int) {
            var decoded = 0
            while decoded < budget {
                guard let got = try? buffer.withUnsafeMutableBufferPointer({ try decoder.read(into: $0) }), got > 0 else { return }
                decoded += got
            }
        }
        decode(frameBudget)
        _ = decoder.info
        _ = decoder.warnings
        let total = decoder.frameCount
        guard total > 0 else { return }
        let choice = count >= 4 ? Int(bytes[count - 1]) << 8 | Int(bytes[count - 2]) : 0
        try? decoder.seek(toFrame: choice % (total + 1))
        decode(4096)
    }
}

/// The registry's sniffing and candidate ordering, with a type hint the input's first byte
/// chooses.
enum FuzzSniff {
    static let hints: [String?] = [nil, "mp3", "ogg", "opus", "wav", "flac", "aiff", "caf", "bin"]

    static func run(_ bytes: UnsafePointer<UInt8>, _ count: Int) {
        let data = Data(bytes: bytes, count: count)
        let hint = count > 0 ? hints[Int(bytes[0]) % hints.count] : nil
        _ = try? DecoderRegistry.shared.candidates(for: .memory(data, name: "fuzz", typeHint: hint))
    }
}

/// What the stream fuzz targets do with one input: its first two bytes choose a type hint and
/// where the rest is cut into pieces; the pieces are fed to a `StreamParser` one by one; once
/// the parser is ready, a seek (to a time the input chooses) is asked for and the bytes from
/// its offset, where they were fed, are fed again with `discontinuity`. With `decode`, every
/// packet goes through a `StreamDecoder` (within a frame budget).
enum FuzzStream {
    static let hints: [String?] = [nil, "mp3", "ogg", "opus", "wav", "aiff", "caf", "flac"]
    static let frameBudget = 1 << 14

    static func run(_ bytes: UnsafePointer<UInt8>, _ count: Int, decode: Bool) {
        guard count >= 2 else { return }
        let hint = hints[Int(bytes[0]) % hints.count]
        var seed = UInt64(bytes[1]) &* 0x9E37_79B9_7F4A_7C15 | 1
        let body = UnsafeRawBufferPointer(start: bytes + 2, count: count - 2)
        final class Sink { var packets: [StreamPacket] = [] }
        let sink = Sink()
        let parser = StreamParser(typeHint: hint, propertyListener: { _ in }, packets: { sink.packets.append(contentsOf: $0) })
        var decoder: StreamDecoder?
        var decoded = 0
        var output: [Float] = []
        func drain() {
            if decode, decoder == nil, parser.readyToProducePackets { decoder = try? StreamDecoder(parser: parser) }
            if let decoder, decoded < frameBudget {
                output.removeAll(keepingCapacity: true)
                decoded += (try? decoder.decode(sink.packets, into: &output)) ?? frameBudget
            }
            sink.packets.removeAll(keepingCapacity: true)
        }
        var start = 0
        var sought = false
        while start < body.count {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let size = 1 + Int(seed >> 33) % 1_500
            let piece = UnsafeRawBufferPointer(rebasing: body[start..<min(body.count, start + size)])
            guard (try? parser.parse(piece)) != nil else { return }
            drain()
            start += piece.count
            if !sought, parser.readyToProducePackets, let duration = parser.duration {
                sought = true
                let seconds = duration.seconds.isFinite ? duration.seconds * Double(seed >> 56) / 255 : 0
                guard let point = try? parser.seek(toTime: seconds) else { continue }
                guard point.byteOffset >= 0, point.byteOffset <= body.count else { return }
                decoder?.seek(to: point)
                start = point.byteOffset
                let rest = UnsafeRawBufferPointer(rebasing: body[start..<min(body.count, start + size)])
                guard (try? parser.parse(rest, discontinuity: true)) != nil else { return }
                drain()
                start += rest.count
            }
        }
        _ = try? parser.finish()
        drain()
        _ = (parser.tags, parser.bitRate, parser.audioDataPacketCount, parser.packetTableInfo, decoder?.warnings)
    }
}
