import Foundation
import Spool

/// `spool bench stream [FILE…]`: the stream parser and stream decoder against the file
/// decoder on the same bytes, and the resident set while an hour of audio streams through.
///
/// Throughput: each file is read into memory once; one side opens it with the file decoder
/// (`openDecoder(.memory(…))`) and reads every frame, the other feeds the same bytes to a
/// `StreamParser` in 64 KiB pieces and decodes every packet with a `StreamDecoder`, one at a
/// time into one reused buffer (as the file side reads 4096 frames at a time into one). Both run
/// in this process, timed by the same monotonic clock, producing the same Float32 frames
/// (the frame counts are checked equal, else the row says so); one untimed run each, then
/// `--repeat` rounds alternating which goes first; the median counts. The ratio is the file
/// decoder's time over the stream's: at 1 the stream costs what the file does.
///
/// Memory: a file's bytes are fed over and over (an MP3's frames, an Ogg stream's links, a
/// WAV's data chunk), generated piece by piece and never held, until `--hours` of audio have
/// been decoded; `VmRSS` is read after the first minute and at its peak.
enum StreamBench {
    struct Row: Encodable {
        let file: String
        let format: String
        let frames: Int
        let streamFrames: Int
        let repeats: Int
        let fileMedianSeconds: Double
        let streamMedianSeconds: Double
        /// File decoder time over stream time: 1 or more, the stream is as fast.
        let ratio: Double
        let kind = "observed"
    }

    struct MemoryRow: Encodable {
        let file: String
        let audioSeconds: Double
        let bytesFed: Int
        let rssAfterFirstMinuteKiB: Int
        let rssPeakKiB: Int
        let growthKiB: Int
        let kind = "observed"
    }

    struct Report: Encodable {
        let throughput: [Row]
        let memory: [MemoryRow]
    }

    static let defaultFiles = [
        "Fixtures/mp3-44100-stereo.mp3", "Fixtures/vorbis-44100-stereo.ogg", "Fixtures/opus/opus-48000-stereo.opus",
        "Fixtures/flac-44100-stereo-s16.flac", "Fixtures/wav-44100-stereo-s16.wav", "Fixtures/aiff-44100-stereo-s16.aiff",
        "Fixtures/caf-44100-stereo-s16.caf",
    ]
    static let memoryFiles = ["Fixtures/mp3-44100-stereo.mp3", "Fixtures/vorbis-44100-stereo.ogg", "Fixtures/wav-44100-stereo-s16.wav"]

    static func run(_ words: [String]) throws {
        guard let bench = try BenchInvocation(words, valued: ["repeat", "hours", "url", "memory-url", "starts"],
                                              switches: ["no-memory"]) else { return }
        let args = bench.arguments
        if args.string("url") != nil || args.string("memory-url") != nil { return try StreamURLBench.run(bench) }
        let repeats = try args.int("repeat", in: 1...1000) ?? 5
        let hours = try args.double("hours", in: 0.001...10) ?? 1
        let files = args.operands.isEmpty ? defaultFiles.filter { FileManager.default.fileExists(atPath: $0) } : args.operands
        var rows: [Row] = []
        for path in files {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
            var fileTimes: [Double] = [], streamTimes: [Double] = []
            var fileFrames = try decodeFile(bytes, name: path), streamFrames = try decodeStream(bytes)
            for round in 0..<repeats {
                func fileSide() throws { fileTimes.append(try timed { fileFrames = try decodeFile(bytes, name: path) }) }
                func streamSide() throws { streamTimes.append(try timed { streamFrames = try decodeStream(bytes) }) }
                if round % 2 == 0 { try fileSide(); try streamSide() } else { try streamSide(); try fileSide() }
            }
            let (f, s) = (median(fileTimes), median(streamTimes))
            let format = try openDecoder(.memory(bytes, name: path)).info
            rows.append(Row(file: path, format: "\(format.container) \(format.codec)", frames: fileFrames, streamFrames: streamFrames,
                            repeats: repeats, fileMedianSeconds: f, streamMedianSeconds: s, ratio: f / s))
        }
        print("file decoder against StreamParser + StreamDecoder on the same bytes in memory, median of \(repeats) alternating runs; observed")
        print(BenchTable.render(
            ["file", "format", "frames", "file ms", "stream ms", "ratio"],
            rows.map { r in
                [URL(fileURLWithPath: r.file).lastPathComponent, r.format,
                 r.frames == r.streamFrames ? "\(r.frames)" : "\(r.frames) ≠ \(r.streamFrames)",
                 ms(r.fileMedianSeconds), ms(r.streamMedianSeconds), String(format: "%.2f", r.ratio)]
            }))
        var memory: [MemoryRow] = []
        if !args.has("no-memory") {
            for path in memoryFiles where FileManager.default.fileExists(atPath: path) {
                memory.append(try streamForHours(path, hours: hours))
            }
            print("\nresident set while \(hours == 1 ? "an hour" : "\(hours) h") of audio streams through StreamParser + StreamDecoder; observed")
            print(BenchTable.render(
                ["file", "audio s", "MiB fed", "RSS after 1 min KiB", "peak KiB", "growth KiB"],
                memory.map { m in
                    [URL(fileURLWithPath: m.file).lastPathComponent, String(format: "%.0f", m.audioSeconds),
                     String(format: "%.0f", Double(m.bytesFed) / 1_048_576), "\(m.rssAfterFirstMinuteKiB)", "\(m.rssPeakKiB)",
                     "\(m.growthKiB)"]
                }))
        }
        try bench.writeReport(Report(throughput: rows, memory: memory))
    }

    /// Every frame through the file decoder, from memory.
    static func decodeFile(_ bytes: Data, name: String) throws -> Int {
        let decoder = try openDecoder(.memory(bytes, name: name))
        var buffer = [Float](repeating: 0, count: 4096 * decoder.format.channelCount)
        var frames = 0
        while true {
            let got = try buffer.withUnsafeMutableBufferPointer { try decoder.read(into: $0) }
            if got == 0 { return frames }
            frames += got
        }
    }

    /// Every frame through the stream parser and decoder, fed in 64 KiB pieces.
    static func decodeStream(_ bytes: Data) throws -> Int {
        final class Box { var packets: [StreamPacket] = [] }
        let box = Box()
        let parser = StreamParser(packets: { box.packets.append(contentsOf: $0) })
        var decoder: StreamDecoder?
        var output: [Float] = []
        var frames = 0
        func drain() throws {
            if decoder == nil, parser.readyToProducePackets {
                let made = try StreamDecoder(parser: parser)
                decoder = made
                output.reserveCapacity(4096 * made.format.channelCount)
            }
            guard let decoder else { return }
            decoder.updatePacketTableInfo(parser.packetTableInfo)
            // A packet at a time into one buffer, as the file side reads 4096 frames at a time.
            for packet in box.packets {
                output.removeAll(keepingCapacity: true)
                frames += try decoder.decode(packet, into: &output)
            }
            box.packets.removeAll(keepingCapacity: true)
        }
        try bytes.withUnsafeBytes { raw in
            var start = 0
            while start < raw.count {
                let end = min(raw.count, start + 65_536)
                try parser.parse(UnsafeRawBufferPointer(rebasing: raw[start..<end]))
                try drain()
                start = end
            }
        }
        try parser.finish()
        try drain()
        return frames
    }

    /// Feeds `path`'s bytes again and again until `hours` of audio have decoded: an MP3's or
    /// an Ogg stream's whole bytes (frames and tags, links of a chain), or, for a WAV, one
    /// header whose data chunk holds the hours, followed by the file's samples over and over.
    static func streamForHours(_ path: String, hours: Double) throws -> MemoryRow {
        var whole = try Data(contentsOf: URL(fileURLWithPath: path))
        var repeating = whole
        if URL(fileURLWithPath: path).pathExtension.lowercased() == "wav" {
            let probe = try openDecoder(.memory(whole, name: path))
            let channels = probe.format.channelCount, rate = Int(probe.format.sampleRate)
            let samples = whole.suffix(from: max(0, whole.count - probe.frameCount * channels * 2))
            repeating = Data(samples)
            let dataBytes = UInt32(clamping: Int(hours * 3600) * rate * channels * 2)
            whole = wavHeader(channels: channels, rate: rate, dataBytes: dataBytes) + repeating
        }
        final class Box { var packets: [StreamPacket] = [] }
        let box = Box()
        let parser = StreamParser(typeHint: URL(fileURLWithPath: path).pathExtension, packets: { box.packets.append(contentsOf: $0) })
        var decoder: StreamDecoder?
        var output: [Float] = []
        var frames = 0, fed = 0, firstMinute = 0, peak = 0
        var targetFrames = Int.max
        var framesBefore = 0
        var piece = whole
        while frames < targetFrames {
            try piece.withUnsafeBytes { raw in
                var start = 0
                while start < raw.count, frames < targetFrames {
                    let end = min(raw.count, start + 65_536)
                    try parser.parse(UnsafeRawBufferPointer(rebasing: raw[start..<end]))
                    fed += end - start
                    start = end
                    if decoder == nil, parser.readyToProducePackets {
                        let made = try StreamDecoder(parser: parser)
                        decoder = made
                        targetFrames = Int(hours * 3600 * made.format.sampleRate)
                    }
                    guard let decoder else { continue }
                    output.removeAll(keepingCapacity: true)
                    // Counted as fed, not as kept: the copies after the first lie past the
                    // frame count the first copy's header states, which the decoder trims to.
                    try decoder.decode(box.packets, into: &output)
                    frames += box.packets.reduce(0) { $0 + $1.frameCount }
                    box.packets.removeAll(keepingCapacity: true)
                    if firstMinute == 0, Double(frames) >= 60 * decoder.format.sampleRate { firstMinute = PlayerBench.residentKiB() }
                    if frames % 65_536 < 4_096 { peak = max(peak, PlayerBench.residentKiB()) }
                }
            }
            piece = repeating
            guard frames > framesBefore else { throw AudioError(.corruptData, "\(path): a repeat of its bytes gave no packet") }
            framesBefore = frames
        }
        peak = max(peak, PlayerBench.residentKiB())
        let rate = decoder?.format.sampleRate ?? 1
        return MemoryRow(file: path, audioSeconds: Double(frames) / rate, bytesFed: fed, rssAfterFirstMinuteKiB: firstMinute,
                         rssPeakKiB: peak, growthKiB: peak - firstMinute)
    }

    /// A 16-bit PCM WAV header whose data chunk holds `dataBytes`.
    static func wavHeader(channels: Int, rate: Int, dataBytes: UInt32) -> Data {
        var header = Data()
        func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { header.append(contentsOf: $0) } }
        func u16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { header.append(contentsOf: $0) } }
        header.append(contentsOf: Array("RIFF".utf8)); u32(dataBytes &+ 36); header.append(contentsOf: Array("WAVEfmt ".utf8))
        u32(16); u16(1); u16(UInt16(channels)); u32(UInt32(rate)); u32(UInt32(rate * channels * 2)); u16(UInt16(channels * 2)); u16(16)
        header.append(contentsOf: Array("data".utf8)); u32(dataBytes)
        return header
    }

    static func timed(_ body: () throws -> Void) throws -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try body()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        let n = sorted.count
        guard n > 0 else { return 0 }
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2
    }

    private static func ms(_ seconds: Double) -> String { String(format: "%.1f", seconds * 1000) }
}
