import Foundation
import Spool
import SpoolBenchmarks
#if canImport(Glibc)
import Glibc
#endif

/// `spool decode FILE --output PATH|- [--start SECONDS] [--duration SECONDS]`
enum DecodeCommand {
    static let help = """
        usage: spool decode FILE --output PATH|- [--start SECONDS] [--duration SECONDS]

        Decodes FILE (- for standard input, read as a stream) to Float32 PCM. PATH ending in .wav gets a WAV file (IEEE float);
        any other PATH, or - for standard output, gets raw interleaved float32 little-endian.
        Warnings (a truncated file, skipped corrupt bytes) go to standard error.
        Exit status 1 when the file is damaged (every frame that decodes is still written,
        under a header true to it) or cannot be read; as 'spool play'.
        """

    static func run(_ words: [String]) throws {
        let args = try Arguments(words, valued: ["output", "start", "duration"], switches: ["help"])
        if args.has("help") { print(help); return }
        guard args.operands.count == 1, let path = args.operands.first else { throw UsageError("decode needs exactly one FILE") }
        guard let output = args.string("output") else { throw UsageError("decode needs --output PATH or --output -") }
        let start = try args.double("start", in: 0...1e9) ?? 0
        let duration = try args.double("duration", in: 0...1e9)

        let decoder = try StandardInput.open(path)
        // --start is a frame, exact as from the file, even where a stream can only estimate it.
        (decoder as? StreamingDecoder)?.seeksExactly = true
        let format = decoder.format
        let startFrame = format.frames(forSeconds: start)
        guard startFrame <= decoder.frameCount || !decoder.isFrameCountExact else {
            throw AudioError(.outOfRange, "\(path): --start \(start) s is past the end (\(String(format: "%.3f", decoder.duration)) s)")
        }
        // A decoder opens at frame 0: seeking there anyway made the Vorbis decoder open
        // libvorbisfile a second time (its codebooks built twice) and libmpg123 seek.
        if startFrame > 0 { try decoder.seek(toFrame: startFrame) }
        var remaining = duration.map { format.frames(forSeconds: $0) } ?? Int.max

        let sink: PCMSink = output.lowercased().hasSuffix(".wav")
            ? try WAVSink(path: output, format: format) : try RawSink(path: output, frameBytes: format.channelCount * 4)
        var chunk = [Float](repeating: 0, count: 8192 * format.channelCount)
        var reported = 0
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
            }
        } catch let error as AudioError {
            // What decoded before the error stays, under a header true to it.
            reportWarnings()
            try sink.finish()
            throw AudioError(error.code, "\(error.message) (\(output == "-" ? "standard output" : output) holds the \(sink.framesWritten) frames decoded before it)",
                             underlying: error.underlying)
        }
        try sink.finish()
        // Damage is a failure, whatever was played past: the warnings have said what it is.
        if let damage = decoder.warnings.first {
            throw ExitFailure(AudioError(.corruptData, "\(path): \(damage)"))
        }
    }
}

protocol PCMSink {
    func write(_ samples: UnsafeBufferPointer<Float>) throws
    func finish() throws
    /// Whole frames the output holds.
    var framesWritten: Int { get }
}

struct WAVSink: PCMSink {
    let writer: WAVFileWriter
    init(path: String, format: AudioFormat) throws { writer = try WAVFileWriter(path: path, format: format) }
    func write(_ samples: UnsafeBufferPointer<Float>) throws { try writer.write(samples) }
    func finish() throws { try writer.finish() }
    var framesWritten: Int { writer.framesWritten }
}

/// Raw float32 samples written straight from the decoder's buffer with write(2): no copy into
/// a `Data` per chunk, as `FileHandle.write(contentsOf:)` needs. The file is opened in place
/// (`O_CREAT | O_TRUNC`), so a link is written through and a device or pipe stays what it is
/// (`FileManager.createFile` renamed a new file over the path: `--output /dev/null` run as
/// root replaced /dev/null with a regular file).
///
/// A write that fails part-way (a full disk; the file-size limit, past which the tool's writes
/// fail with EFBIG rather than raise SIGXFSZ) leaves a regular file cut back to the whole
/// frames written before it.
final class RawSink: PCMSink {
    private let fd: Int32
    private let path: String
    private let frameBytes: Int
    private var bytesWritten = 0
    private var closed = false
    var framesWritten: Int { bytesWritten / frameBytes }

    init(path: String, frameBytes: Int) throws {
        self.path = path
        self.frameBytes = max(1, frameBytes)
        if path == "-" {
            fd = STDOUT_FILENO
        } else {
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o666)
            guard fd >= 0 else {
                throw AudioError(.writeFailed, "\(path): cannot create the file: \(String(cString: strerror(errno)))")
            }
            self.fd = fd
        }
    }

    deinit { if fd != STDOUT_FILENO, !closed { close(fd) } }

    func write(_ samples: UnsafeBufferPointer<Float>) throws {
        guard let base = samples.baseAddress else { return }
        let bytes = UnsafeRawPointer(base)
        let count = samples.count * MemoryLayout<Float>.size
        var done = 0
        while done < count {
            let n = Glibc.write(fd, bytes + done, count - done)
            if n < 0 {
                if errno == EINTR { continue }
                let reason = String(cString: strerror(errno))
                var status = stat()
                if fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG {
                    bytesWritten -= bytesWritten % frameBytes
                    _ = ftruncate(fd, off_t(bytesWritten))
                }
                throw AudioError(.writeFailed, "\(path == "-" ? "standard output" : path): write failed: \(reason)")
            }
            done += n
            bytesWritten += n
        }
    }

    func finish() throws {
        guard fd != STDOUT_FILENO, !closed else { return }
        closed = true
        guard close(fd) == 0 else {
            throw AudioError(.writeFailed, "\(path): write failed: \(String(cString: strerror(errno)))")
        }
    }
}
