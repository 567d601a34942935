import Foundation
import Spool

/// `spool decode FILE --output PATH|- [--start SECONDS] [--duration SECONDS]`
enum DecodeCommand {
    static let help = """
        usage: spool decode FILE --output PATH|- [--start SECONDS] [--duration SECONDS]

        Decodes FILE to Float32 PCM. PATH ending in .wav gets a WAV file (IEEE float);
        any other PATH, or - for standard output, gets raw interleaved float32 little-endian.
        Warnings (a truncated file, skipped corrupt bytes) go to standard error.
        """

    static func run(_ words: [String]) throws {
        let args = try Arguments(words, valued: ["output", "start", "duration"], switches: ["help"])
        if args.has("help") { print(help); return }
        guard args.operands.count == 1, let path = args.operands.first else { throw UsageError("decode needs exactly one FILE") }
        guard let output = args.string("output") else { throw UsageError("decode needs --output PATH or --output -") }
        let start = try args.double("start", in: 0...1e9) ?? 0
        let duration = try args.double("duration", in: 0...1e9)

        let decoder = try DecoderRegistry.shared.open(path: path)
        let format = decoder.format
        let startFrame = format.frames(forSeconds: start)
        guard startFrame <= decoder.frameCount else {
            throw AudioError(.outOfRange, "\(path): --start \(start) s is past the end (\(String(format: "%.3f", decoder.duration)) s)")
        }
        try decoder.seek(toFrame: startFrame)
        var remaining = duration.map { format.frames(forSeconds: $0) } ?? Int.max

        let sink: PCMSink = output.lowercased().hasSuffix(".wav")
            ? try WAVSink(path: output, format: format) : try RawSink(path: output)
        var chunk = [Float](repeating: 0, count: 8192 * format.channelCount)
        var reported = 0
        var written = 0
        func reportWarnings() {
            for warning in decoder.warnings.dropFirst(reported) { printError("spool: \(path): warning: \(warning)") }
            reported = decoder.warnings.count
        }
        do {
            while remaining > 0 {
                let want = min(8192, remaining) * format.channelCount
                let frames = try chunk.withUnsafeMutableBufferPointer {
                    try decoder.read(into: UnsafeMutableBufferPointer(rebasing: $0[0..<want]))
                }
                reportWarnings()
                if frames == 0 { break }
                try chunk.withUnsafeBufferPointer { try sink.write(UnsafeBufferPointer(rebasing: $0[0..<(frames * format.channelCount)])) }
                remaining -= frames
                written += frames
            }
        } catch let error as AudioError {
            // What decoded before the error stays, under a header true to it.
            reportWarnings()
            try sink.finish()
            throw AudioError(error.code, "\(error.message) (\(output == "-" ? "standard output" : output) holds the \(written) frames decoded before it)",
                             underlying: error.underlying)
        }
        try sink.finish()
    }
}

protocol PCMSink {
    func write(_ samples: UnsafeBufferPointer<Float>) throws
    func finish() throws
}

struct WAVSink: PCMSink {
    let writer: WAVFileWriter
    init(path: String, format: AudioFormat) throws { writer = try WAVFileWriter(path: path, format: format) }
    func write(_ samples: UnsafeBufferPointer<Float>) throws { try writer.write(samples) }
    func finish() throws { try writer.finish() }
}

struct RawSink: PCMSink {
    let handle: FileHandle
    let path: String
    init(path: String) throws {
        self.path = path
        if path == "-" {
            handle = .standardOutput
        } else {
            guard FileManager.default.createFile(atPath: path, contents: nil),
                  let handle = FileHandle(forWritingAtPath: path) else {
                throw AudioError(.writeFailed, "\(path): cannot create the file")
            }
            self.handle = handle
        }
    }
    func write(_ samples: UnsafeBufferPointer<Float>) throws {
        do { try handle.write(contentsOf: Data(buffer: samples)) } catch {
            throw AudioError(.writeFailed, "\(path): write failed", underlying: error)
        }
    }
    func finish() throws { if path != "-" { try handle.close() } }
}
