import Foundation
import Spool
internal import CMPG123
internal import COpusFile
internal import CSndFile
internal import CVorbisFile

/// `spool bench decode --in-process FILE…`: Spool's decode loop against the bare C library's,
/// in one process, both timed the same way doing the same work.
///
/// Both sides open the file by its path and read every frame into one interleaved Float32
/// buffer of 4 096 frames, which nobody looks at: Spool through `DecoderRegistry` and the
/// decoder's `read(into:)`, the bare side straight through the library Spool's decoder wraps —
/// libmpg123 (`mpg123_open`, `mpg123_read`, Float32 output, its own gapless trim), libvorbisfile
/// (`ov_fopen`, `ov_read_float`, interleaved into the buffer as Spool does it), libopusfile (`op_open_file`,
/// `op_read_float`) and libsndfile (`sf_open`, `sf_readf_float`). The bare side is the limit:
/// no frame walk, no checks, no warnings. Each side's cost is the measuring thread's CPU time
/// (`CLOCK_THREAD_CPUTIME_ID`) and the wall time, open to last frame; one untimed run of each
/// first (the file is then in the page cache for both), then the sides alternate, the one that
/// goes first changing every round, and the median counts.
enum DecodeLoopBench {
    struct Row: Encodable {
        let file: String
        let codec: String
        /// The C library the bare side calls.
        let library: String
        let spoolFrames: Int
        let bareFrames: Int
        let repeats: Int
        let spoolMedianCPUSeconds: Double
        let spoolMinCPUSeconds: Double
        let spoolMaxCPUSeconds: Double
        let spoolMedianWallSeconds: Double
        let bareMedianCPUSeconds: Double
        let bareMinCPUSeconds: Double
        let bareMaxCPUSeconds: Double
        let bareMedianWallSeconds: Double
        /// The bare library's median CPU time divided by Spool's: 1 is the limit, and 0.95
        /// means Spool's loop costs 5 % more than the library's own.
        let ratio: Double
        let kind = "observed"
    }

    /// One run: frames read, CPU and wall seconds.
    struct Run {
        var frames = 0
        var cpuSeconds = 0.0
        var wallSeconds = 0.0
    }

    static let chunkFrames = 4_096

    static func run(_ bench: BenchInvocation, paths: [String], repeats: Int) throws {
        var rows: [Row] = []
        for path in paths {
            let probe = try DecoderRegistry.shared.open(path: path)
            let info = probe.info
            guard let bare = BareDecoder(info: info) else {
                printError("spool: \(path): no bare library loop for \(info.container) \(info.codec); skipped")
                continue
            }
            let channels = probe.format.channelCount
            var buffer = [Float](repeating: 0, count: chunkFrames * max(channels, 1))
            func spoolRun() throws -> Run {
                try timed {
                    let decoder = try DecoderRegistry.shared.open(path: path)
                    return try buffer.withUnsafeMutableBufferPointer { whole in
                        let chunk = UnsafeMutableBufferPointer(rebasing: whole[0..<(chunkFrames * decoder.format.channelCount)])
                        var frames = 0
                        while case let got = try decoder.read(into: chunk), got > 0 { frames += got }
                        return frames
                    }
                }
            }
            func bareRun() throws -> Run {
                try timed { try buffer.withUnsafeMutableBufferPointer { try bare.decode(path: path, into: $0, channels: channels) } }
            }
            let spoolFrames = try spoolRun().frames
            let bareFrames = try bareRun().frames
            var ours: [Run] = [], theirs: [Run] = []
            for round in 0..<repeats {
                if round % 2 == 0 {
                    ours.append(try spoolRun()); theirs.append(try bareRun())
                } else {
                    theirs.append(try bareRun()); ours.append(try spoolRun())
                }
            }
            let (a, b) = (ours.map(\.cpuSeconds).sorted(), theirs.map(\.cpuSeconds).sorted())
            rows.append(Row(
                file: path, codec: info.codec, library: bare.library, spoolFrames: spoolFrames, bareFrames: bareFrames,
                repeats: repeats,
                spoolMedianCPUSeconds: DecodeBench.median(a), spoolMinCPUSeconds: a[0], spoolMaxCPUSeconds: a[a.count - 1],
                spoolMedianWallSeconds: DecodeBench.median(ours.map(\.wallSeconds).sorted()),
                bareMedianCPUSeconds: DecodeBench.median(b), bareMinCPUSeconds: b[0], bareMaxCPUSeconds: b[b.count - 1],
                bareMedianWallSeconds: DecodeBench.median(theirs.map(\.wallSeconds).sorted()),
                ratio: DecodeBench.median(b) / DecodeBench.median(a)))
        }
        print("in one process, open to last frame into a 4096-frame Float32 buffer: CPU time of the measuring thread, median of \(repeats) alternating runs (spread: fastest–slowest); observed")
        print(BenchTable.render(
            ["file", "codec", "library", "spool frames", "bare frames", "spool cpu ms", "spread", "bare cpu ms", "spread", "ratio"],
            rows.map { r in
                [URL(fileURLWithPath: r.file).lastPathComponent, r.codec, r.library, "\(r.spoolFrames)", "\(r.bareFrames)",
                 ms(r.spoolMedianCPUSeconds), "\(ms(r.spoolMinCPUSeconds))–\(ms(r.spoolMaxCPUSeconds))",
                 ms(r.bareMedianCPUSeconds), "\(ms(r.bareMinCPUSeconds))–\(ms(r.bareMaxCPUSeconds))",
                 String(format: "%.3f", r.ratio)]
            }))
        print("ratio = bare library's median ÷ Spool's: 1 is the limit; at or above 0.95, Spool's loop is within 5 % of the library's own")
        try bench.writeReport(rows)
    }

    private static func timed(_ body: () throws -> Int) throws -> Run {
        let wall = HostTime.now(), cpu = HostTime.threadCPUSeconds()
        let frames = try body()
        return Run(frames: frames, cpuSeconds: HostTime.threadCPUSeconds() - cpu,
                   wallSeconds: HostTime.seconds(from: wall, to: HostTime.now()))
    }

    private static func ms(_ seconds: Double) -> String { String(format: "%.2f", seconds * 1000) }
}

/// The C library Spool's decoder for a format wraps, called directly: the least a decode of
/// the file can cost in this process.
enum BareDecoder {
    case mpg123, vorbisfile, opusfile, sndfile

    init?(info: AudioFileInfo) {
        switch (info.container, info.codec) {
        case ("MP3", _): self = .mpg123
        case ("Ogg", "Opus"): self = .opusfile
        case ("Ogg", "Vorbis"): self = .vorbisfile
        case ("Ogg", _): return nil
        default: self = .sndfile
        }
    }

    var library: String {
        switch self {
        case .mpg123: "libmpg123"
        case .vorbisfile: "libvorbisfile"
        case .opusfile: "libopusfile"
        case .sndfile: "libsndfile"
        }
    }

    /// Decodes the whole file into `buffer`, chunk after chunk.
    /// - Parameter chunk: Called with each chunk's frames, which fill the buffer's start.
    /// - Returns: The frames decoded.
    func decode(path: String, into buffer: UnsafeMutableBufferPointer<Float>, channels: Int,
                chunk: (Int) -> Void = { _ in }) throws -> Int {
        let chunkFrames = buffer.count / max(channels, 1)
        func failed(_ call: String, _ code: Int) -> AudioError {
            AudioError(.readFailed, "\(path): \(call) failed (\(code))")
        }
        switch self {
        case .mpg123:
            var status: Int32 = 0
            guard let handle = mpg123_new(nil, &status) else { throw failed("mpg123_new", Int(status)) }
            defer { mpg123_delete(handle) }
            mpg123_param2(handle, Int32(MPG123_ADD_FLAGS.rawValue), Int(MPG123_FORCE_FLOAT.rawValue | MPG123_QUIET.rawValue), 0)
            guard mpg123_open(handle, path) == MPG123_OK.rawValue else { throw failed("mpg123_open", 0) }
            defer { mpg123_close(handle) }
            var bytes = 0, total = 0
            while true {
                let status = mpg123_read(handle, UnsafeMutableRawPointer(buffer.baseAddress), buffer.count * 4, &bytes)
                // The last read may bring the end and the stream's last bytes at once.
                total += bytes
                if bytes > 0 { chunk(bytes / (4 * max(channels, 1))) }
                if status == MPG123_DONE.rawValue { break }
                guard status == MPG123_OK.rawValue || status == MPG123_NEW_FORMAT.rawValue else {
                    throw failed("mpg123_read", Int(status))
                }
            }
            return total / (4 * max(channels, 1))
        case .vorbisfile:
            var file = OggVorbis_File()
            let opened = ov_fopen(path, &file)
            guard opened == 0 else { throw failed("ov_fopen", Int(opened)) }
            defer { ov_clear(&file) }
            var frames = 0, section: Int32 = 0
            var planes: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>?
            while true {
                let got = Int(ov_read_float(&file, &planes, Int32(chunkFrames), &section))
                if got == 0 { break }
                if got == Int(OV_HOLE) { continue }  // libvorbisfile goes on past a hole
                guard got > 0, let planes else { throw failed("ov_read_float", got) }
                // A chained stream whose link has other channels than the first: not this loop's case.
                guard Int(ov_info(&file, -1)?.pointee.channels ?? 0) == channels else {
                    throw AudioError(.formatChanged, "\(path): a link with other channels than \(channels); the bare loop reads one layout")
                }
                if channels == 2, let left = planes[0], let right = planes[1] {
                    for frame in 0..<got {
                        buffer[2 * frame] = left[frame]
                        buffer[2 * frame + 1] = right[frame]
                    }
                    frames += got
                    chunk(got)
                    continue
                }
                for channel in 0..<channels {
                    guard let plane = planes[channel] else { continue }
                    var index = channel
                    for frame in 0..<got {
                        buffer[index] = plane[frame]
                        index += channels
                    }
                }
                frames += got
                chunk(got)
            }
            return frames
        case .opusfile:
            var status: Int32 = 0
            guard let file = op_open_file(path, &status) else { throw failed("op_open_file", Int(status)) }
            defer { op_free(file) }
            var frames = 0
            while true {
                let got = Int(op_read_float(file, buffer.baseAddress, Int32(buffer.count), nil))
                if got == 0 { break }
                if got < 0 { if got == Int(OP_HOLE) { continue }; throw failed("op_read_float", got) }
                frames += got
                chunk(got)
            }
            return frames
        case .sndfile:
            var info = SF_INFO()
            guard let file = sf_open(path, Int32(SFM_READ), &info) else { throw failed("sf_open", Int(sf_error(nil))) }
            defer { sf_close(file) }
            var frames = 0
            while case let got = Int(sf_readf_float(file, buffer.baseAddress, sf_count_t(chunkFrames))), got > 0 {
                frames += got
                chunk(got)
            }
            return frames
        }
    }
}
