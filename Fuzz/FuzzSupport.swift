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
