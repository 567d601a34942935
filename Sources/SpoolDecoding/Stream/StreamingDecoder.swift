import Foundation
import SpoolCore

/// An `AudioDecoder` over bytes read in order from a pipe, a socket or any reader: a
/// `StreamParser` and a `StreamDecoder` behind the decoder protocol, so that what plays a
/// file plays standard input too (`cat song.mp3 | spool play -`).
///
/// The initializer reads until the parser is ready to produce packets (the format is then
/// known); `read(into:)` reads on as it needs. `frameCount` is the parser's duration: exact
/// when the stream states it, otherwise an estimate (`isFrameCountExact` false) until the
/// stream ends. Without a `seeker` (a pipe), a stream read once cannot go back far:
/// `seek(toFrame:)` goes forward by decoding and dropping frames, back over the last
/// `rewindFrames` read from what it kept, and refuses to go further back with `.unsupported`.
/// With a `seeker` (an HTTP source that takes ranges), a seek further back, or further ahead
/// than `forwardDecodeSeconds`, asks the parser for the byte to read from
/// (`StreamParser.seek(toFrame:)`), moves the reader there and feeds on with a discontinuity:
/// exact where the parser's point is (CBR, PCM, frames seen), from an estimate otherwise.
public final class StreamingDecoder: AudioDecoder {
    /// Reads up to `buffer.count` bytes into `buffer`; returns 0 at the end of the stream.
    public typealias Reader = (UnsafeMutableRawBufferPointer) throws -> Int
    /// Moves the reader so that its next byte is the stream's byte at the given offset.
    public typealias Seeker = (Int) throws -> Void

    public let format: AudioFormat
    public private(set) var frameCount: Int
    public private(set) var isFrameCountExact: Bool
    public private(set) var position = 0
    public private(set) var info: AudioFileInfo
    /// The container's damage the parser found, then what the decoder found, each once (the
    /// same bytes can be both a gap between packets and a packet the codec refused).
    public var warnings: [DecodeWarning] {
        var seen: [DecodeWarning] = []
        for warning in parser.warnings + decoder.warnings where !seen.contains(warning) { seen.append(warning) }
        return seen
    }

    private let name: String
    private let reader: Reader
    private let seeker: Seeker?
    /// The next bytes follow a seek.
    private var discontinuous = false
    private let parser: StreamParser
    private let decoder: StreamDecoder
    private let box: PacketBox
    /// Decoded frames not yet read, from `pendingStart` (in samples).
    private var pending: [Float] = []
    private var pendingStart = 0
    private var ended = false
    private var chunk = [UInt8](repeating: 0, count: 64 << 10)
    /// The smallest and largest packet seen, in bytes.
    private var packetBytes = (lowerBound: Int.max, upperBound: 0)

    /// Packets the parser delivered and the decoder has not yet been given.
    private final class PacketBox {
        var packets: [StreamPacket] = []
    }

    /// Reads a stream's first bytes until its format is known.
    /// - Parameters:
    ///   - name: What messages call the stream (`<standard input>`).
    ///   - typeHint: A file extension or MIME type; it only breaks ties.
    ///   - reader: Reads the stream's next bytes.
    /// - Throws: The parser's `AudioError` (`.emptyInput`, `.unsupportedFormat`, …), or the reader's.
    ///   - seeker: Moves the reader to a byte offset, for a reader that can (nil: a pipe).
    public init(name: String, typeHint: String? = nil, reader: @escaping Reader, seeker: Seeker? = nil) throws {
        self.name = name
        self.reader = reader
        self.seeker = seeker
        let box = PacketBox()
        self.box = box
        let parser = StreamParser(typeHint: typeHint, packets: { box.packets.append(contentsOf: $0) })
        self.parser = parser
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while !parser.readyToProducePackets {
            let count = try Self.read(reader, into: &chunk, name: name)
            do {
                if count == 0 { try parser.finish() } else { try chunk.withUnsafeBytes { try parser.parse(UnsafeRawBufferPointer(rebasing: $0[0..<count])) } }
            } catch let error as AudioError {
                throw AudioError(error.code, "\(name): \(error.message)", underlying: error.underlying)
            }
        }
        decoder = try StreamDecoder(parser: parser)
        format = decoder.format
        (frameCount, isFrameCountExact) = Self.count(parser)
        info = Self.info(parser)
    }

    /// Reads a file descriptor (standard input is 0) until its format is known.
    public convenience init(fileDescriptor: Int32, name: String, typeHint: String? = nil) throws {
        try self.init(name: name, typeHint: typeHint) { buffer in
            while true {
                let count = Foundation.read(fileDescriptor, buffer.baseAddress, buffer.count)
                if count >= 0 { return count }
                if errno == EINTR { continue }
                throw AudioError(.readFailed, "\(name): cannot read: \(String(cString: strerror(errno)))")
            }
        }
    }

    public func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int {
        let channels = format.channelCount
        let wanted = buffer.count / channels * channels
        while pending.count - pendingStart < wanted, !ended { try decodeMore() }
        let samples = min(wanted, pending.count - pendingStart)
        for i in 0..<samples { buffer[i] = pending[pendingStart + i] }
        pendingStart += samples
        // What was read stays for a seek back of up to `rewindFrames`.
        let kept = max(0, min(keptFrames, Self.rewindFrames)) * channels
        if pendingStart > 2 * kept {
            pending.removeSubrange(0..<(pendingStart - kept))
            pendingStart = kept
        }
        position += samples / channels
        return samples / channels
    }

    /// Frames kept after they are read, so that a seek back over them (a player that read
    /// ahead and starts again from 0) needs no bytes again.
    public static let rewindFrames = 1 << 16
    /// Frames this decoder keeps after they are read (`rewindFrames` unless set lower).
    public var keptFrames = StreamingDecoder.rewindFrames

    /// How far ahead a seek decodes and drops frames rather than moving a `seeker`.
    public var forwardDecodeSeconds = 2.0

    public func seek(toFrame frame: Int) throws {
        let channels = format.channelCount
        if frame < position {
            if position - frame <= pendingStart / channels {
                pendingStart -= (position - frame) * channels
                position = frame
                return
            }
            guard seeker != nil else {
                throw AudioError(.unsupported, "\(name): a stream read once cannot seek back further than \(Self.rewindFrames) frames (from frame \(position) to \(frame))")
            }
            return try seekBytes(toFrame: frame)
        }
        let decoded = (pending.count - pendingStart) / channels
        if seeker != nil, Double(frame - position - decoded) > forwardDecodeSeconds * format.sampleRate {
            return try seekBytes(toFrame: frame)
        }
        try decodeForward(to: frame)
    }

    /// Decodes and drops frames up to `frame`.
    private func decodeForward(to frame: Int) throws {
        let channels = format.channelCount
        var scratch = [Float](repeating: 0, count: 4096 * channels)
        while position < frame {
            let want = min(4096, frame - position) * channels
            let got = try scratch.withUnsafeMutableBufferPointer { try read(into: UnsafeMutableBufferPointer(rebasing: $0[0..<want])) }
            if got == 0 { throw AudioError(.outOfRange, "\(name): frame \(frame) is past the end (\(position) frames)") }
        }
    }

    /// Whether a seek that the stream can only estimate (a VBR MP3 past the frames seen, an
    /// Ogg stream by its bit rate) decodes its way to the exact frame instead (from the
    /// start, for a seek back): slower, and every frame where the file decoder puts it.
    public var seeksExactly = false

    /// Moves the reader to the parser's seek point for `frame` and starts decoding there.
    private func seekBytes(toFrame frame: Int, estimateAllowed: Bool = false) throws {
        guard let seeker else { return }
        let point: StreamSeekPoint
        do {
            do {
                point = try parser.seek(toFrame: frame)
            } catch let error as AudioError where error.code == .unsupported && !estimateAllowed {
                // Nothing to estimate by yet (an Ogg Opus stream before its pages): decode there.
                if frame < position { try seekBytes(toFrame: 0, estimateAllowed: true) }
                return try decodeForward(to: frame)
            }
            if point.isEstimated, seeksExactly, !estimateAllowed {
                if frame < position { try seekBytes(toFrame: 0, estimateAllowed: true) }
                return try decodeForward(to: frame)
            }
            try seeker(point.byteOffset)
        } catch let error as AudioError {
            throw AudioError(error.code, "\(name): \(error.message)", underlying: error.underlying)
        }
        box.packets.removeAll(keepingCapacity: true)
        pending.removeAll(keepingCapacity: true)
        pendingStart = 0
        ended = false
        decoder.seek(to: point)
        discontinuous = true
        position = point.isEstimated ? point.frame : point.targetFrame
    }

    /// Decodes the packets parsed and not yet decoded; with none, reads and parses the next
    /// bytes first. (The packets of the bytes read while the format was learnt are decoded
    /// before anything more is read: a slow link's first bytes play without waiting for its next.)
    private func decodeMore() throws {
        let count = box.packets.isEmpty ? try Self.read(reader, into: &chunk, name: name) : nil
        do {
            if count == 0 {
                try parser.finish()
                ended = true
            } else if let count {
                let discontinuity = discontinuous
                discontinuous = false
                try chunk.withUnsafeBytes { try parser.parse(UnsafeRawBufferPointer(rebasing: $0[0..<count]), discontinuity: discontinuity) }
            }
            decoder.updatePacketTableInfo(parser.packetTableInfo)
            let packets = box.packets
            box.packets.removeAll(keepingCapacity: true)
            for packet in packets {
                packetBytes = (min(packetBytes.lowerBound, packet.bytes.count), max(packetBytes.upperBound, packet.bytes.count))
            }
            try decoder.decode(packets, into: &pending)
        } catch let error as AudioError {
            throw AudioError(error.code, "\(name): \(error.message)", underlying: error.underlying)
        }
        (frameCount, isFrameCountExact) = Self.count(parser)
        info.tags = parser.tags
        info.bitRate = parser.bitRate ?? info.bitRate
        // MPEG frames of one bit rate differ by a padding byte at most.
        if case .mpeg? = parser.dataFormat?.codec { info.isVBR = packetBytes.upperBound - packetBytes.lowerBound > 1 }
        if ended {
            frameCount = decoder.position
            isFrameCountExact = true
        }
    }

    private static func read(_ reader: Reader, into chunk: inout [UInt8], name: String) throws -> Int {
        let count = try chunk.withUnsafeMutableBytes { try reader($0) }
        guard (0...chunk.count).contains(count) else {
            throw AudioError(.readFailed, "\(name): the reader returned \(count) bytes for a \(chunk.count)-byte buffer")
        }
        return count
    }

    private static func count(_ parser: StreamParser) -> (Int, Bool) {
        guard let duration = parser.duration else { return (0, false) }
        let frames = duration.frames ?? Int(saturating: (duration.seconds * (parser.dataFormat?.sampleRate ?? 0)).rounded())
        return (frames, !duration.isEstimated)
    }

    /// The sample depth a FLAC STREAMINFO block states (with or without its block header).
    private static func flacBitsPerSample(_ cookie: [UInt8]?) -> Int? {
        guard let cookie, cookie.count >= 34 else { return nil }
        let base = cookie.count >= 38 ? 4 : 0
        return (Int(cookie[base + 12] & 1) << 4 | Int(cookie[base + 13] >> 4)) + 1
    }

    private static func info(_ parser: StreamParser) -> AudioFileInfo {
        let container: String, codec: String
        switch parser.fileFormat {
        case .mp3?: container = "MP3"
        case .oggVorbis?, .oggOpus?: container = "Ogg"
        case let other?: container = other.rawValue
        case nil: container = "stream"
        }
        switch parser.dataFormat?.codec {
        case .mpeg(let layer)?:
            let rate = parser.dataFormat?.sampleRate ?? 0
            let version = rate >= 32_000 ? "MPEG-1" : rate >= 16_000 ? "MPEG-2" : "MPEG-2.5"
            codec = "\(version) Layer \(["I", "II", "III"][max(0, min(2, layer - 1))])"
        case .vorbis?: codec = "Vorbis"
        case .opus?: codec = "Opus"
        case .flac?: codec = "FLAC" + (flacBitsPerSample(parser.magicCookie).map { " \($0)-bit" } ?? "")
        case .pcm(let layout)?:
            let kind = layout.isFloat ? "float" : layout.bitsPerSample == 8 ? (layout.isSigned ? "signed integer" : "unsigned integer") : "integer"
            codec = "PCM \(layout.bitsPerSample)-bit \(kind)"
        case .aLaw?: codec = "A-law"
        case .muLaw?: codec = "µ-law"
        case .imaADPCM?: codec = "IMA ADPCM"
        case nil: codec = "unknown"
        }
        var isVBR = false
        switch parser.dataFormat?.codec {
        case .vorbis?, .opus?, .flac?: isVBR = true
        default: break
        }
        return AudioFileInfo(container: container, codec: codec, bitRate: parser.bitRate ?? 0, isVBR: isVBR, tags: parser.tags)
    }
}
