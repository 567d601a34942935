import Foundation
import Spool

/// `spool bench decode FILE…`: Spool's decode throughput against each format's reference
/// command-line decoder, timed in the same run on the same file. Each side runs `--repeat`
/// times and the fastest run counts (the least disturbed by the rest of the machine). The
/// peer's time includes its process start; use files of tens of seconds so that it is noise.
enum DecodeBench {
    struct Row: Encodable {
        let file: String
        let codec: String
        let frames: Int
        let seconds: Double
        let spoolSeconds: Double
        let spoolFramesPerSecond: Double
        let spoolRealTime: Double
        let peer: String?
        let peerSeconds: Double?
        let peerRealTime: Double?
        /// Spool's throughput divided by the peer's: above 1 is faster.
        let ratio: Double?
    }

    static func run(_ words: [String]) throws {
        let args = try Arguments(words, valued: ["repeat", "json"], switches: ["help"])
        if args.has("help") { print(BenchCommand.help); return }
        guard !args.operands.isEmpty else { throw UsageError("bench decode needs at least one FILE") }
        let repeats = try args.int("repeat", in: 1...1000) ?? 5
        var rows: [Row] = []
        for path in args.operands {
            let probe = try DecoderRegistry.shared.open(path: path)
            let duration = probe.duration
            var best = Double.infinity
            var frames = 0
            for _ in 0..<repeats {
                let start = BenchCommand.now()
                frames = try decodeToNowhere(path)
                best = min(best, BenchCommand.now() - start)
            }
            let peer = peerCommand(for: probe.info, path: path)
            var peerBest: Double?
            if let peer {
                for _ in 0..<repeats {
                    guard let t = try? time(peer) else { peerBest = nil; break }
                    peerBest = min(peerBest ?? .infinity, t)
                }
            }
            rows.append(Row(
                file: path, codec: probe.info.codec, frames: frames, seconds: duration, spoolSeconds: best,
                spoolFramesPerSecond: Double(frames) / best, spoolRealTime: duration / best,
                peer: peerBest == nil ? nil : peer?.joined(separator: " "), peerSeconds: peerBest,
                peerRealTime: peerBest.map { duration / $0 }, ratio: peerBest.map { $0 / best }))
        }
        print(BenchCommand.table(
            ["file", "codec", "frames", "spool ms", "spool ×RT", "peer", "peer ms", "peer ×RT", "ratio"],
            rows.map { r in
                [URL(fileURLWithPath: r.file).lastPathComponent, r.codec, "\(r.frames)",
                 String(format: "%.1f", r.spoolSeconds * 1000), String(format: "%.0f", r.spoolRealTime),
                 r.peer?.split(separator: " ").first.map(String.init) ?? "-",
                 r.peerSeconds.map { String(format: "%.1f", $0 * 1000) } ?? "-",
                 r.peerRealTime.map { String(format: "%.0f", $0) } ?? "-",
                 r.ratio.map { String(format: "%.2f", $0) } ?? "-"]
            }))
        if let json = args.string("json") { try BenchCommand.writeJSON(rows, to: json) }
    }

    /// Decodes the whole file into one reused buffer, as a player would, and counts frames.
    static func decodeToNowhere(_ path: String) throws -> Int {
        let decoder = try DecoderRegistry.shared.open(path: path)
        var buffer = [Float](repeating: 0, count: 4096 * decoder.format.channelCount)
        var frames = 0
        while true {
            let got = try buffer.withUnsafeMutableBufferPointer { try decoder.read(into: $0) }
            if got == 0 { return frames }
            frames += got
        }
    }

    /// The reference decoder for the format, writing nowhere.
    static func peerCommand(for info: AudioFileInfo, path: String) -> [String]? {
        switch info.container {
        case "MP3": ["mpg123", "-q", "-t", path]
        case "Ogg": ["oggdec", "-Q", "-o", "/dev/null", path]
        case "FLAC": ["flac", "-d", "-s", "-c", path]
        default: ["sox", path, "-t", "null", "-"]
        }
    }

    /// Wall-clock seconds of one run of `command`, output discarded; nil when it fails.
    static func time(_ command: [String]) throws -> Double? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = command
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let start = BenchCommand.now()
        do { try process.run() } catch { return nil }
        process.waitUntilExit()
        let elapsed = BenchCommand.now() - start
        return process.terminationStatus == 0 ? elapsed : nil
    }
}
