import SpoolCore

/// FLAC's STREAMINFO block: what every frame of the stream shares.
struct FLACStreamInfo: Equatable {
    var minimumBlockSize: Int
    var maximumBlockSize: Int
    var minimumFrameBytes: Int
    var maximumFrameBytes: Int
    var sampleRate: Int
    var channelCount: Int
    var bitsPerSample: Int
    /// Frames in the stream, or 0 when the encoder did not know.
    var totalFrames: Int

    /// Reads the 34-byte body.
    /// - Throws: `.corruptData` for a block of the wrong size or impossible values.
    init(_ body: ArraySlice<UInt8>) throws {
        let b = Array(body)
        guard b.count == 34 else { throw AudioError(.corruptData, "the FLAC STREAMINFO block has \(b.count) bytes, not 34") }
        minimumBlockSize = Int(b[0]) << 8 | Int(b[1])
        maximumBlockSize = Int(b[2]) << 8 | Int(b[3])
        minimumFrameBytes = Int(b[4]) << 16 | Int(b[5]) << 8 | Int(b[6])
        maximumFrameBytes = Int(b[7]) << 16 | Int(b[8]) << 8 | Int(b[9])
        sampleRate = Int(b[10]) << 12 | Int(b[11]) << 4 | Int(b[12]) >> 4
        channelCount = Int(b[12] >> 1 & 7) + 1
        bitsPerSample = (Int(b[12] & 1) << 4 | Int(b[13]) >> 4) + 1
        totalFrames = Int(b[13] & 0x0F) << 32 | Int(b[14]) << 24 | Int(b[15]) << 16 | Int(b[16]) << 8 | Int(b[17])
        guard sampleRate > 0 else { throw AudioError(.corruptData, "the FLAC STREAMINFO block gives a sample rate of 0") }
        guard bitsPerSample >= 4 else { throw AudioError(.corruptData, "the FLAC STREAMINFO block gives \(bitsPerSample) bits per sample") }
        guard maximumBlockSize >= 16, minimumBlockSize <= maximumBlockSize else {
            throw AudioError(.corruptData, "the FLAC STREAMINFO block gives blocks of \(minimumBlockSize) to \(maximumBlockSize) frames")
        }
    }

    /// The most bytes any frame of this stream can take: the larger of the stated maximum
    /// and a frame of verbatim subframes (a side channel has one bit more) with its headers.
    var frameBytesLimit: Int {
        let verbatim = maximumBlockSize * channelCount * (bitsPerSample + 1 + 7) / 8 + 18 + 2 * channelCount
        return min(StreamInput.limit / 2, max(maximumFrameBytes, verbatim) + 16)
    }
}

/// A FLAC frame header, checked: sync code, reserved bits, codes that are allowed, its
/// CRC-8, and agreement with STREAMINFO.
struct FLACFrameHeader: Equatable {
    /// Bytes of the header, CRC-8 included.
    var length: Int
    /// Frames the frame decodes to.
    var blockSize: Int
    /// Variable block size: `number` is a sample number, not a frame number.
    var isVariable: Bool
    var number: Int

    /// Most bytes a header takes: sync and codes 4, coded number 7, block size 2, rate 2, CRC 1.
    static let maximumLength = 16

    enum Result { case valid(FLACFrameHeader), invalid, needMore }

    /// The header at `start` of `input`, when one is there.
    static func read(_ input: StreamInput, at start: Int, _ info: FLACStreamInfo) -> Result {
        let held = input.count - start
        func byte(_ i: Int) -> Int? { i < held ? Int(input[start + i]) : nil }
        guard let b0 = byte(0) else { return .needMore }
        guard b0 == 0xFF else { return .invalid }
        guard let b1 = byte(1) else { return .needMore }
        guard b1 & 0xFE == 0xF8 else { return .invalid }
        guard let b2 = byte(2), let b3 = byte(3), let b4 = byte(4) else { return .needMore }
        let blockCode = b2 >> 4, rateCode = b2 & 0x0F, channelCode = b3 >> 4, sizeCode = b3 >> 1 & 7
        guard blockCode != 0, rateCode != 15, channelCode < 11, sizeCode != 3, b3 & 1 == 0 else { return .invalid }
        // The frame or sample number, coded as UTF-8 is (up to 36 bits).
        var length = 4
        var number: Int
        if b4 & 0x80 == 0 {
            number = b4
            length += 1
        } else {
            let ones = (0..<8).prefix { b4 & (0x80 >> $0) != 0 }.count
            guard ones >= 2, ones <= 7 else { return .invalid }
            number = b4 & (0x7F >> ones)
            for i in 1..<ones {
                guard let next = byte(4 + i) else { return .needMore }
                guard next & 0xC0 == 0x80 else { return .invalid }
                number = number << 6 | next & 0x3F
            }
            length += ones
        }
        let isVariable = b1 & 1 == 1
        if !isVariable && number >= 1 << 31 { return .invalid }
        var blockSize: Int
        switch blockCode {
        case 1: blockSize = 192
        case 2...5: blockSize = 576 << (blockCode - 2)
        case 6:
            guard let v = byte(length) else { return .needMore }
            blockSize = v + 1
            length += 1
        case 7:
            guard let hi = byte(length), let lo = byte(length + 1) else { return .needMore }
            blockSize = (hi << 8 | lo) + 1
            length += 2
        default: blockSize = 256 << (blockCode - 8)
        }
        var rate: Int?
        switch rateCode {
        case 0: rate = nil
        case 12:
            guard let v = byte(length) else { return .needMore }
            rate = v * 1000
            length += 1
        case 13, 14:
            guard let hi = byte(length), let lo = byte(length + 1) else { return .needMore }
            rate = (hi << 8 | lo) * (rateCode == 13 ? 1 : 10)
            length += 2
        default: rate = [0, 88_200, 176_400, 192_000, 8_000, 16_000, 22_050, 24_000, 32_000, 44_100, 48_000, 96_000][rateCode]
        }
        guard let crc = byte(length) else { return .needMore }
        var computed: UInt8 = 0
        for i in 0..<length { computed = crc8Table[Int(computed ^ input[start + i])] }
        guard Int(computed) == crc else { return .invalid }
        let channels = channelCode < 8 ? channelCode + 1 : 2
        let bits = [0, 8, 12, 0, 16, 20, 24, 32][sizeCode]
        guard channels == info.channelCount, bits == 0 || bits == info.bitsPerSample,
              rate.map({ $0 == info.sampleRate }) ?? true, blockSize <= info.maximumBlockSize else { return .invalid }
        return .valid(FLACFrameHeader(length: length + 1, blockSize: blockSize, isVariable: isVariable, number: number))
    }

    /// The stream frame of this frame's first sample.
    func startFrame(_ info: FLACStreamInfo) -> Int {
        if isVariable { return number }
        let fixed = info.minimumBlockSize == info.maximumBlockSize ? info.maximumBlockSize : blockSize
        return number * fixed
    }

    /// Whether `next` is the header of the frame after this one.
    func isFollowed(by next: FLACFrameHeader, _ info: FLACStreamInfo) -> Bool {
        guard next.isVariable == isVariable else { return false }
        return isVariable ? next.number == number + blockSize : next.number == number + 1
    }

    /// CRC-8, polynomial x^8 + x^2 + x + 1, over a frame header.
    static let crc8Table: [UInt8] = (0..<256).map { value in
        var crc = UInt8(value)
        for _ in 0..<8 { crc = crc & 0x80 != 0 ? crc << 1 ^ 0x07 : crc << 1 }
        return crc
    }

    /// CRC-16, polynomial x^16 + x^15 + x^2 + 1, over a whole frame (its footer makes it 0).
    static let crc16Table: [UInt16] = (0..<256).map { value in
        var crc = UInt16(value) << 8
        for _ in 0..<8 { crc = crc & 0x8000 != 0 ? crc << 1 ^ 0x8005 : crc << 1 }
        return crc
    }

    /// `crc16Slices[k << 8 | b]`: the CRC-16 of byte `b` followed by `k` zero bytes, for
    /// k in 0..<8 (slice-by-8: eight bytes in one step, each through its own table).
    static let crc16Slices: [UInt16] = {
        var tables = crc16Table
        for k in 1..<8 {
            for b in 0..<256 {
                let previous = tables[(k - 1) << 8 | b]
                tables.append(previous << 8 ^ crc16Table[Int(previous >> 8)])
            }
        }
        return tables
    }()

    /// The CRC-16 after one more byte.
    @inline(__always)
    static func crc16(_ crc: UInt16, _ byte: UInt8) -> UInt16 {
        crc << 8 ^ crc16Table[Int(UInt8(truncatingIfNeeded: crc >> 8) ^ byte)]
    }
}
