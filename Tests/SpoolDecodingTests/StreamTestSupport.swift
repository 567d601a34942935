import Foundation
import SpoolCore
@testable import SpoolDecoding
import SpoolTestSupport

/// How a test cuts a stream into the pieces it feeds a `StreamParser`.
enum Pieces: CustomStringConvertible, Sendable {
    /// The whole stream in one call.
    case whole
    /// One byte per call.
    case single
    /// Pieces of 1 to `maximum` bytes, their sizes drawn from `seed`.
    case random(seed: UInt64, maximum: Int)

    /// Every way of cutting; under a sanitizer (`SPOOL_SANITIZER`), without the 1-byte pieces
    /// of every fixture, which cost the sanitized runs minutes: the plain run feeds them, and
    /// pieces of up to 17 bytes take the sanitizers through the same paths.
    static let all: [Pieces] = underSanitizer
        ? [.whole, .random(seed: 7, maximum: 4_096), .random(seed: 99, maximum: 17)]
        : [.whole, .single, .random(seed: 7, maximum: 4_096), .random(seed: 99, maximum: 17)]

    static let underSanitizer = TestEnvironment.underSanitizer

    var description: String {
        switch self {
        case .whole: "whole"
        case .single: "1-byte pieces"
        case .random(let seed, let maximum): "random pieces up to \(maximum) bytes (seed \(seed))"
        }
    }

    /// The ranges of `count` bytes, in order.
    func ranges(_ count: Int) -> [Range<Int>] {
        switch self {
        case .whole: return [0..<count]
        case .single: return (0..<count).map { $0..<($0 + 1) }
        case .random(let seed, let maximum):
            var generator = SplitMix(seed: seed)
            var ranges: [Range<Int>] = [], start = 0
            while start < count {
                let size = 1 + Int(generator.next() % UInt64(maximum))
                ranges.append(start..<min(count, start + size))
                start += size
            }
            return ranges
        }
    }
}

/// A small seeded generator, the same on every machine.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Bytes placed so that the page after the last one cannot be read: a parser that reads
/// one byte past what it was given stops the test process at once.
final class GuardedBytes {
    private let base: UnsafeMutableRawPointer
    private let mappedBytes: Int
    /// The bytes, ending at the guard page.
    private(set) var buffer: UnsafeRawBufferPointer
    /// Bytes that fit before the guard page.
    let capacity: Int

    init(_ bytes: ArraySlice<UInt8>) {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let dataPages = (bytes.count + page - 1) / page
        mappedBytes = (dataPages + 1) * page
        guard let mapped = mmap(nil, mappedBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
              mapped != MAP_FAILED else { fatalError("mmap failed") }
        base = mapped
        capacity = dataPages * page
        mprotect(base + dataPages * page, page, PROT_NONE)
        let start = base + dataPages * page - bytes.count
        bytes.withUnsafeBytes { if let source = $0.baseAddress { start.copyMemory(from: source, byteCount: bytes.count) } }
        buffer = UnsafeRawBufferPointer(start: start, count: bytes.count)
    }

    /// Puts other bytes (at most `capacity`) in place of these, ending at the guard page.
    func replace(with bytes: ArraySlice<UInt8>) -> UnsafeRawBufferPointer {
        let start = base + capacity - bytes.count
        bytes.withUnsafeBytes { if let source = $0.baseAddress { start.copyMemory(from: source, byteCount: bytes.count) } }
        buffer = UnsafeRawBufferPointer(start: start, count: bytes.count)
        return buffer
    }

    deinit { munmap(base, mappedBytes) }
}

/// One guarded mapping reused for piece after piece: each is copied to end at the guard
/// page, so feeding a stream a byte at a time costs a copy per piece, not a mapping.
/// A piece is valid until the next is placed.
final class GuardedArena {
    private var mapping: GuardedBytes?

    /// `bytes`, ending at an unreadable page.
    func place(_ bytes: ArraySlice<UInt8>) -> UnsafeRawBufferPointer {
        guard let mapping, mapping.capacity >= bytes.count else {
            let made = GuardedBytes(bytes)
            self.mapping = made
            return made.buffer
        }
        return mapping.replace(with: bytes)
    }
}

/// What a parser reported while a whole stream was fed to it.
struct StreamRecording {
    /// Properties in the order reported, each time it was.
    var properties: [StreamProperty] = []
    /// Every packet, in order.
    var packets: [StreamPacket] = []
    /// The number of packets delivered when `readyToProducePackets` was reported.
    var packetsBeforeReady: Int?
    let parser: StreamParser
}

enum StreamFeeding {
    /// Feeds `bytes` to a new parser in `pieces` (each in a guarded buffer), then finishes.
    static func record(_ bytes: [UInt8], _ pieces: Pieces, typeHint: String? = nil) throws -> StreamRecording {
        final class Box { var recording: StreamRecording? }
        let box = Box()
        // The callbacks hold the box weakly: the recording it holds holds the parser.
        let parser = StreamParser(typeHint: typeHint, propertyListener: { [weak box] property in
            guard let box else { return }
            box.recording?.properties.append(property)
            if property == .readyToProducePackets {
                let delivered = box.recording?.packets.count
                box.recording?.packetsBeforeReady = delivered
            }
        }, packets: { [weak box] packets in box?.recording?.packets.append(contentsOf: packets) })
        box.recording = StreamRecording(parser: parser)
        let arena = GuardedArena()
        for range in pieces.ranges(bytes.count) { try parser.parse(arena.place(bytes[range])) }
        try parser.finish()
        return box.recording!
    }

    /// The PCM of `bytes` through `StreamParser` and `StreamDecoder`, fed in `pieces`.
    static func decode(_ bytes: [UInt8], _ pieces: Pieces, typeHint: String? = nil) throws -> (format: AudioFormat, samples: [Float], warnings: [DecodeWarning]) {
        let recording = try record(bytes, pieces, typeHint: typeHint)
        let parser = recording.parser
        let decoder = try StreamDecoder(parser: parser)
        let samples = try decoder.decode(recording.packets)
        return (decoder.format, samples, decoder.warnings)
    }

    /// The PCM of `bytes` through `StreamParser` and `StreamDecoder` as they arrive: the
    /// decoder is made at `readyToProducePackets` and given each batch when it is parsed,
    /// as a player does.
    static func decodeLive(_ bytes: [UInt8], _ pieces: Pieces) throws -> (format: AudioFormat, samples: [Float], warnings: [DecodeWarning]) {
        final class Box { var parser: StreamParser?; var decoder: StreamDecoder?; var samples: [Float] = []; var error: (any Error)? }
        let box = Box()
        let parser = StreamParser(packets: { [weak box] packets in
            guard let box else { return }
            do {
                if box.decoder == nil, let parser = box.parser { box.decoder = try StreamDecoder(parser: parser) }
                box.decoder?.updatePacketTableInfo(box.parser?.packetTableInfo)
                try box.decoder?.decode(packets, into: &box.samples)
            } catch { box.error = error }
        })
        box.parser = parser
        let arena = GuardedArena()
        for range in pieces.ranges(bytes.count) { try parser.parse(arena.place(bytes[range])) }
        try parser.finish()
        if let error = box.error { throw error }
        guard let decoder = box.decoder else { throw AudioError(.truncated, "no packet") }
        return (decoder.format, box.samples, decoder.warnings)
    }

    /// The file decoder's PCM for the same file.
    static func fileDecode(_ path: String) throws -> (format: AudioFormat, samples: [Float], warnings: [DecodeWarning], decoder: any AudioDecoder) {
        let decoder = try openDecoder(.file(path: path))
        let buffer = try decoder.decodeAll()
        return (decoder.format, buffer.samples, decoder.warnings, decoder)
    }

    static func bytes(_ path: String) throws -> [UInt8] { Array(try readFile(path)) }

    /// A file's bytes. An empty file is not read: Foundation's `Data(contentsOf:)` leaks its
    /// 4 KiB read buffer on one (LeakSanitizer reports it).
    static func readFile(_ path: String) throws -> Data {
        let size = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        return size == 0 ? Data() : try Data(contentsOf: URL(fileURLWithPath: path))
    }
}
