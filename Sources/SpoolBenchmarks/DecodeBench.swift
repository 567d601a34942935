import Foundation
import Spool

/// `spool bench decode FILE…`: Spool's decoder against each format's reference command-line
/// decoder, both timed the same way doing the same work.
///
/// Each side is a whole process that decodes the file and writes the PCM to standard output,
/// the same discarding device for both (`ProcessTimer.discardingSink`: /dev/null, or /dev/zero
/// where /dev/null is not a device): `spool decode FILE --output -` (Float32) against, for
/// MP3, `mpg123 -q -e f32 -s` (Float32) and, for every format sox reads, `sox FILE -t f32 -`
/// (Float32); `oggdec` and `flac` only write 16-bit integers, so their rows say `s16`. Both
/// are started and reaped by `ProcessTimer` (posix_spawn, a blocking wait4), so start-up
/// costs count on both sides alike. One untimed run of each first; then the sides alternate,
/// `--repeat` runs each, the one that goes first changing every round so neither always
/// follows the other; the median counts, and the spread (fastest–slowest) is printed beside
/// it.
enum DecodeBench {
    struct Row: Encodable {
        let file: String
        let codec: String
        let frames: Int
        let seconds: Double
        /// The peer's command line, and the sample format both sides write.
        let peer: String
        let peerOutput: String
        let spoolOutput: String
        let repeats: Int
        /// Where both sides' standard output goes.
        let sink: String
        let spoolMedianSeconds: Double
        let spoolMinSeconds: Double
        let spoolMaxSeconds: Double
        let spoolCPUSeconds: Double
        let peerMedianSeconds: Double
        let peerMinSeconds: Double
        let peerMaxSeconds: Double
        let peerCPUSeconds: Double
        /// The peer's median wall time divided by Spool's: above 1, Spool is faster.
        let ratio: Double
        /// Every figure here is observed: wall and CPU time of real processes.
        let kind = "observed"
    }

    static func run(_ words: [String]) throws {
        guard let bench = try BenchInvocation(words, valued: ["repeat"], switches: ["in-process"]) else { return }
        let args = bench.arguments
        guard !args.operands.isEmpty else { throw UsageError("bench decode needs at least one FILE") }
        let repeats = try args.int("repeat", in: 1...1000) ?? 5
        if args.has("in-process") {
            return try DecodeLoopBench.run(bench, paths: args.operands, repeats: repeats)
        }
        let spool = ProcessTimer.selfExecutable
        let sink = ProcessTimer.discardingSink
        var rows: [Row] = []
        for path in args.operands {
            let probe = try DecoderRegistry.shared.open(path: path)
            let spoolCommand = [spool, "decode", path, "--output", "-"]
            guard ProcessTimer.run(spoolCommand, sink: sink.path) != nil else {
                throw AudioError(.readFailed, "\(path): 'spool decode' failed on it")
            }
            for (peer, output) in peers(for: probe.info, path: path) {
                // Not installed, or it cannot read the file.
                guard ProcessTimer.run(peer, sink: sink.path) != nil else { continue }
                var ours: [ProcessTimer.Measurement] = [], theirs: [ProcessTimer.Measurement] = []
                for round in 0..<repeats {
                    func runSpool() { if let m = ProcessTimer.run(spoolCommand, sink: sink.path) { ours.append(m) } }
                    func runPeer() { if let m = ProcessTimer.run(peer, sink: sink.path) { theirs.append(m) } }
                    if round % 2 == 0 { runSpool(); runPeer() } else { runPeer(); runSpool() }
                }
                guard !ours.isEmpty, !theirs.isEmpty else { continue }
                let (a, b) = (ours.map(\.wallSeconds).sorted(), theirs.map(\.wallSeconds).sorted())
                rows.append(Row(
                    file: path, codec: probe.info.codec, frames: probe.frameCount, seconds: probe.duration,
                    peer: peer.joined(separator: " "), peerOutput: output, spoolOutput: "f32", repeats: repeats, sink: sink.path,
                    spoolMedianSeconds: median(a), spoolMinSeconds: a[0], spoolMaxSeconds: a[a.count - 1],
                    spoolCPUSeconds: median(ours.map(\.cpuSeconds).sorted()),
                    peerMedianSeconds: median(b), peerMinSeconds: b[0], peerMaxSeconds: b[b.count - 1],
                    peerCPUSeconds: median(theirs.map(\.cpuSeconds).sorted()),
                    ratio: median(b) / median(a)))
            }
        }
        if !sink.isDevice {
            printError("spool: warning: /dev/null is not a character device here, and no other discarding device was found: output costs what writing a file costs")
        }
        print("whole processes writing PCM to \(sink.path), median of \(repeats) alternating runs (spread: fastest–slowest); observed")
        print(BenchTable.render(
            ["file", "codec", "frames", "spool ms", "spread", "cpu ms", "peer", "out", "peer ms", "spread", "cpu ms", "ratio"],
            rows.map { r in
                [URL(fileURLWithPath: r.file).lastPathComponent, r.codec, "\(r.frames)",
                 ms(r.spoolMedianSeconds), "\(ms(r.spoolMinSeconds))–\(ms(r.spoolMaxSeconds))", ms(r.spoolCPUSeconds),
                 URL(fileURLWithPath: r.peer.split(separator: " ").first.map(String.init) ?? "").lastPathComponent, r.peerOutput,
                 ms(r.peerMedianSeconds), "\(ms(r.peerMinSeconds))–\(ms(r.peerMaxSeconds))", ms(r.peerCPUSeconds),
                 String(format: "%.2f", r.ratio)]
            }))
        try bench.writeReport(rows)
    }

    private static func ms(_ seconds: Double) -> String { String(format: "%.1f", seconds * 1000) }

    /// The median of values already sorted.
    static func median(_ sorted: [Double]) -> Double {
        let n = sorted.count
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2
    }

    /// The reference decoders for the format, each with the sample format it writes to stdout.
    static func peers(for info: AudioFileInfo, path: String) -> [([String], String)] {
        let sox = (["sox", path, "-t", "f32", "-"], "f32")
        switch (info.container, info.codec) {
        case ("MP3", _): return [(["mpg123", "-q", "-e", "f32", "-s", path], "f32")]
        case ("Ogg", "Opus"): return [(["opusdec", "--quiet", "--float", path, "-"], "f32")]
        case ("Ogg", _): return [(["oggdec", "-Q", "-R", "-o", "-", path], "s16"), sox]
        case ("FLAC", _): return [(["flac", "-d", "-s", "-c", path], "s16"), sox]
        default: return [sox]
        }
    }
}
