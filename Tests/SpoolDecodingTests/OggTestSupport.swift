// Helpers shared by the Ogg and Vorbis test suites.

import Foundation
import SpoolCore
@testable import SpoolDecoding
import SpoolTestSupport

/// Spool's seedable generator, so that random inputs repeat from run to run.
typealias SeededGenerator = SplitMix

extension SplitMix {
    /// `count` pseudo-random bytes.
    static func bytes(_ count: Int, seed: UInt64) -> [UInt8] {
        var generator = SplitMix(seed: seed)
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            var i = 0
            while i < count {
                var word = generator.next()
                for _ in 0..<min(8, count - i) {
                    buffer[i] = UInt8(truncatingIfNeeded: word)
                    word >>= 8
                    i += 1
                }
            }
            initialized = count
        }
    }
}

/// The damaged Ogg fixtures (`Fixtures/ogg/`) and what `Fixtures/make-ogg-fixtures.sh`
/// recorded about each in `cases.json`.
enum OggCases {
    struct Case: Decodable {
        let note: String
        let frames: Int?
        let changedPage: Int?
        let removedPage: Int?
        let removedBytes: Int?
        let badChecksumPage: Int?
        let badChecksumBytes: Int?
        let link1Frames: Int?
        let link2Offset: Int?
        let problem: String?
    }

    static let all: [String: Case] = {
        let url = Fixtures.directory.appendingPathComponent("ogg/cases.json")
        return try! JSONDecoder().decode([String: Case].self, from: Data(contentsOf: url))
    }()

    static func path(_ name: String) -> String { Fixtures.path("ogg/\(name)") }

    static func bytes(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: URL(fileURLWithPath: path(name))))
    }
}

/// The packets of the first logical stream of an Ogg file, each with the file offset of
/// every byte (so that a test can change a packet's bytes in place).
func oggPackets(_ bytes: [UInt8]) throws -> [(packet: [UInt8], offsets: [Int])] {
    let (pages, _) = OggPageWalker.walk(try ByteReader(source: .memory(Data(bytes), name: "packets")))
    guard let serial = pages.first?.serialNumber else { return [] }
    var packets: [(packet: [UInt8], offsets: [Int])] = []
    var packet: [UInt8] = []
    var offsets: [Int] = []
    for page in pages where page.serialNumber == serial {
        var at = page.body.startIndex
        for length in page.lacing {
            let count = Int(length)
            let fileOffset = page.offset + 27 + page.lacing.count + (at - page.body.startIndex)
            packet += page.body[at..<(at + count)]
            offsets += Array(fileOffset..<(fileOffset + count))
            at += count
            if length < 255 {
                packets.append((packet, offsets))
                packet = []
                offsets = []
            }
        }
    }
    return packets
}

/// Recomputes the checksum of every valid-looking page of `bytes` that contains one of
/// `offsets`.
func recomputeChecksums(_ bytes: inout [UInt8], around offsets: Set<Int>) {
    var at = 0
    while at + 27 <= bytes.count, bytes[at..<(at + 4)].elementsEqual("OggS".utf8) {
        let segments = Int(bytes[at + 26])
        guard at + 27 + segments <= bytes.count else { return }
        let size = 27 + segments + bytes[(at + 27)..<(at + 27 + segments)].reduce(0) { $0 + Int($1) }
        guard at + size <= bytes.count else { return }
        if offsets.contains(where: { (at..<(at + size)).contains($0) }) {
            let crc = OggPageWalker.checksum(bytes[at..<(at + size)])
            for k in 0..<4 { bytes[at + 22 + k] = UInt8(truncatingIfNeeded: crc >> (8 * k)) }
        }
        at += size
    }
}
