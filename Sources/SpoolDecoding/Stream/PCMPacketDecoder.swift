import SpoolCore

/// Decodes the packets of uncompressed and simply coded audio (integer and float PCM,
/// A-law, µ-law, IMA ADPCM) to Float32, sample for sample as libsndfile converts them with
/// `SFC_SET_NORM_FLOAT`: an integer of `n` bits is scaled by 2^-(n-1) (8-bit unsigned less
/// 128 first), float is copied, double rounded to float, A-law and µ-law go through the
/// G.711 16-bit tables and then 1/32768, and IMA ADPCM decodes to 16-bit samples first.
final class PCMPacketDecoder: StreamPacketDecoder {
    private enum Kind {
        case integer(bytes: Int, bigEndian: Bool, signed: Bool)
        case float32(bigEndian: Bool)
        case float64(bigEndian: Bool)
        case table([Float])
        case imaADPCM(blockBytes: Int, framesPerBlock: Int)
    }

    private let kind: Kind
    private let channels: Int

    /// Makes a decoder for a PCM, A-law, µ-law or IMA ADPCM stream.
    /// - Throws: `.unsupportedFormat` for any other codec or an impossible layout.
    init(_ dataFormat: StreamDataFormat) throws {
        channels = dataFormat.channelCount
        switch dataFormat.codec {
        case .pcm(let layout):
            switch (layout.isFloat, layout.bitsPerSample) {
            case (false, 8), (false, 16), (false, 24), (false, 32):
                kind = .integer(bytes: layout.bytesPerSample, bigEndian: layout.isBigEndian, signed: layout.isSigned)
            case (true, 32): kind = .float32(bigEndian: layout.isBigEndian)
            case (true, 64): kind = .float64(bigEndian: layout.isBigEndian)
            default:
                throw AudioError(.unsupportedFormat, "\(layout.bitsPerSample)-bit \(layout.isFloat ? "float" : "integer") PCM is not decoded")
            }
        case .aLaw: kind = .table(Self.aLawTable)
        case .muLaw: kind = .table(Self.muLawTable)
        case .imaADPCM(let blockBytes, let framesPerBlock):
            guard (1...2).contains(channels), blockBytes > 4 * channels, framesPerBlock > 0,
                  framesPerBlock <= 2 * (blockBytes - 4 * channels) / channels + 1 else {
                throw AudioError(.unsupportedFormat, "IMA ADPCM blocks of \(blockBytes) bytes and \(framesPerBlock) frames for \(channels) channels are not decoded")
            }
            kind = .imaADPCM(blockBytes: blockBytes, framesPerBlock: framesPerBlock)
        default:
            throw AudioError(.unsupportedFormat, "the PCM decoder does not decode \(dataFormat.codec)")
        }
    }

    func decode(_ packet: StreamPacket, into output: inout [Float]) throws -> Int {
        let bytes = packet.bytes
        switch kind {
        case .integer(let width, let bigEndian, let signed):
            let frames = bytes.count / (width * channels)
            bytes.withUnsafeBytes { raw in
                output.appendSamples(frames * channels) { out in
                    Self.convertIntegers(raw, width: width, bigEndian: bigEndian, signed: signed, into: out)
                }
            }
            return frames
        case .float32(let bigEndian):
            let frames = bytes.count / (4 * channels)
            bytes.withUnsafeBytes { raw in
                output.appendSamples(frames * channels) { out in
                    for i in out.indices {
                        let value = raw.loadUnaligned(fromByteOffset: 4 * i, as: UInt32.self)
                        out[i] = Float(bitPattern: bigEndian ? value.bigEndian : value.littleEndian)
                    }
                }
            }
            return frames
        case .float64(let bigEndian):
            let frames = bytes.count / (8 * channels)
            bytes.withUnsafeBytes { raw in
                output.appendSamples(frames * channels) { out in
                    for i in out.indices {
                        let value = raw.loadUnaligned(fromByteOffset: 8 * i, as: UInt64.self)
                        out[i] = Float(Double(bitPattern: bigEndian ? value.bigEndian : value.littleEndian))
                    }
                }
            }
            return frames
        case .table(let table):
            let frames = bytes.count / channels
            bytes.withUnsafeBufferPointer { codes in
                table.withUnsafeBufferPointer { table in
                    output.appendSamples(frames * channels) { out in
                        for i in out.indices { out[i] = table[Int(codes[i])] }
                    }
                }
            }
            return frames
        case .imaADPCM(let blockBytes, let framesPerBlock):
            var block = bytes.prefix(blockBytes).map { $0 }
            // A block cut short decodes as a whole one, its missing codes 0.
            if block.count < blockBytes { block += [UInt8](repeating: 0, count: blockBytes - block.count) }
            Self.decodeIMABlock(block, channels: channels, frames: framesPerBlock, into: &output)
            return framesPerBlock
        }
    }

    /// Integer samples of `width` bytes to Float32, as many as `out` holds: 8-bit unsigned
    /// less 128, then each scaled by 2^-(bits-1).
    private static func convertIntegers(_ raw: UnsafeRawBufferPointer, width: Int, bigEndian: Bool, signed: Bool,
                                        into out: UnsafeMutableBufferPointer<Float>) {
        switch (width, signed) {
        case (1, false):
            for i in out.indices { out[i] = (Float(Int(raw[i])) - 128) * (1 / 128) }
        case (1, true):
            for i in out.indices { out[i] = Float(Int8(bitPattern: raw[i])) * (1 / 128) }
        case (2, _):
            if Int(bitPattern: raw.baseAddress) % 2 == 0 {
                // Aligned (a packet's own array): whole words, which the compiler vectorises.
                raw.withMemoryRebound(to: UInt16.self) { words in
                    if bigEndian {
                        for i in out.indices { out[i] = Float(Int16(bitPattern: UInt16(bigEndian: words[i]))) * (1 / 32768) }
                    } else {
                        for i in out.indices { out[i] = Float(Int16(bitPattern: UInt16(littleEndian: words[i]))) * (1 / 32768) }
                    }
                }
            } else {
                for i in out.indices {
                    let value = raw.loadUnaligned(fromByteOffset: 2 * i, as: UInt16.self)
                    out[i] = Float(Int16(bitPattern: bigEndian ? UInt16(bigEndian: value) : UInt16(littleEndian: value))) * (1 / 32768)
                }
            }
        case (3, _):
            for i in out.indices {
                let a = UInt32(raw[3 * i]), b = UInt32(raw[3 * i + 1]), c = UInt32(raw[3 * i + 2])
                let value = bigEndian ? (a << 24 | b << 16 | c << 8) : (c << 24 | b << 16 | a << 8)
                out[i] = Float(Int32(bitPattern: value)) * (1 / 2_147_483_648)
            }
        default:
            for i in out.indices {
                let value = raw.loadUnaligned(fromByteOffset: 4 * i, as: UInt32.self)
                out[i] = Float(Int32(bitPattern: bigEndian ? value.bigEndian : value.littleEndian)) * (1 / 2_147_483_648)
            }
        }
    }

    func reset() {}
    var warnings: [DecodeWarning] { [] }

    // MARK: - G.711

    /// A-law byte → sample (ITU-T G.711: invert the even bits, then segment and mantissa).
    static let aLawTable: [Float] = (0..<256).map { code in
        let a = code ^ 0x55
        let segment = (a & 0x70) >> 4
        var value = (a & 0x0F) << 4
        switch segment {
        case 0: value += 8
        case 1: value += 0x108
        default: value = (value + 0x108) << (segment - 1)
        }
        return Float(a & 0x80 != 0 ? value : -value) * (1 / 32768)
    }

    /// µ-law byte → sample (ITU-T G.711: complement, then bias 0x84 shifted by the segment).
    static let muLawTable: [Float] = (0..<256).map { code in
        let u = ~code & 0xFF
        let magnitude = ((u & 0x0F) << 3 + 0x84) << ((u & 0x70) >> 4)
        return Float(u & 0x80 != 0 ? 0x84 - magnitude : magnitude - 0x84) * (1 / 32768)
    }

    // MARK: - IMA ADPCM

    private static let stepSizes: [Int] = [
        7, 8, 9, 10, 11, 12, 13, 14, 16, 17, 19, 21, 23, 25, 28, 31, 34, 37, 41, 45, 50, 55, 60, 66, 73, 80, 88, 97,
        107, 118, 130, 143, 157, 173, 190, 209, 230, 253, 279, 307, 337, 371, 408, 449, 494, 544, 598, 658, 724, 796,
        876, 963, 1060, 1166, 1282, 1411, 1552, 1707, 1878, 2066, 2272, 2499, 2749, 3024, 3327, 3660, 4026, 4428, 4871,
        5358, 5894, 6484, 7132, 7845, 8630, 9493, 10442, 11487, 12635, 13899, 15289, 16818, 18500, 20350, 22385, 24623,
        27086, 29794, 32767,
    ]
    private static let indexAdjust = [-1, -1, -1, -1, 2, 4, 6, 8, -1, -1, -1, -1, 2, 4, 6, 8]

    /// Decodes one WAV IMA ADPCM block: per channel a 4-byte header (the first sample, little-
    /// endian, and the step index), then 4-byte groups of eight 4-bit codes per channel in turn.
    static func decodeIMABlock(_ block: [UInt8], channels: Int, frames: Int, into output: inout [Float]) {
        var samples = [Int16](repeating: 0, count: frames * channels)
        for channel in 0..<channels {
            var predictor = Int(Int16(bitPattern: UInt16(block[4 * channel]) | UInt16(block[4 * channel + 1]) << 8))
            var index = min(Int(block[4 * channel + 2]), stepSizes.count - 1)
            samples[channel] = Int16(predictor)
            var frame = 1
            var group = 4 * channels + 4 * channel
            while frame < frames, group + 4 <= block.count {
                for byte in block[group..<(group + 4)] {
                    for code in [Int(byte & 0x0F), Int(byte >> 4)] where frame < frames {
                        let step = stepSizes[index]
                        var diff = step >> 3
                        if code & 1 != 0 { diff += step >> 2 }
                        if code & 2 != 0 { diff += step >> 1 }
                        if code & 4 != 0 { diff += step }
                        predictor = min(32767, max(-32768, code & 8 != 0 ? predictor - diff : predictor + diff))
                        index = min(stepSizes.count - 1, max(0, index + indexAdjust[code]))
                        samples[frame * channels + channel] = Int16(predictor)
                        frame += 1
                    }
                }
                group += 4 * channels
            }
        }
        output.appendSamples(samples.count) { out in
            for i in out.indices { out[i] = Float(samples[i]) * (1 / 32768) }
        }
    }
}
