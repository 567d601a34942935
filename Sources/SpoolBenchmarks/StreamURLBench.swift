import Foundation
import Spool

/// `spool bench stream --url URL [--memory-url URL]`: audio played while it downloads.
///
/// First audio (`--url`, a link throttled to about twice the audio's bit rate): each start
/// opens an `AudioPlayer` on the URL and plays it on the null device (the buffer queue, 256 × 2
/// frames); *first audio* is the time from the start of the opening to the first frame heard
/// (`firstFrameHeard`, as every latency bench times it). Its peer, timed from the same point in
/// the same run, is the time the link takes to deliver the player's first chunk (4096
/// frames): a `StreamingDecoder` on the URL, opened and read until those frames decode. The
/// target is first audio ≤ that chunk's arrival + one device period; each row says how far.
///
/// Memory (`--memory-url`, a long resource, an hour of audio served as fast as the link
/// goes): every frame is decoded through `RemoteAudio` as fast as the CPU allows, `VmRSS`
/// read after the first minute of audio and at its peak, beside the source's read-ahead budget.
/// It runs first, before any player has made its threads and devices.
enum StreamURLBench {
    struct StartRow: Encodable {
        let url: String
        let starts: Int
        let periodMilliseconds: Double
        let chunkArrivalMedianMilliseconds: Double
        let firstAudioMedianMilliseconds: Double
        let firstAudioWorstMilliseconds: Double
        /// The output's latency as the player reports it (part of first audio).
        let outputLatencyMilliseconds: Double
        /// First audio − (chunk arrival + one period), median: 0 or less meets the target.
        let marginMilliseconds: Double
        let kind = "observed"
    }

    struct MemoryRow: Encodable {
        let url: String
        let audioSeconds: Double
        let bytesDownloaded: Int
        let budgetBytes: Int
        let rssAfterFirstMinuteKiB: Int
        let rssPeakKiB: Int
        let growthKiB: Int
        let wallSeconds: Double
        let kind = "observed"
    }

    struct Report: Encodable {
        let start: StartRow?
        let memory: MemoryRow?
    }

    static let periodFrames = 256

    static func run(_ bench: BenchInvocation) throws {
        let args = bench.arguments
        let starts = try args.int("starts", in: 1...1000) ?? 10
        var start: StartRow?
        var memory: MemoryRow?
        // The resident set first, in a process that has played nothing yet.
        if let text = args.string("memory-url") {
            memory = try streamWhole(try url(text))
            if let m = memory {
                print("resident set while every frame of a URL decodes as fast as the CPU allows; observed")
                print(BenchTable.render(
                    ["url", "audio s", "MiB downloaded", "budget KiB", "RSS after 1 min KiB", "peak KiB", "growth KiB", "wall s"],
                    [[m.url, String(format: "%.0f", m.audioSeconds), String(format: "%.1f", Double(m.bytesDownloaded) / 1_048_576),
                      "\(m.budgetBytes / 1024)", "\(m.rssAfterFirstMinuteKiB)", "\(m.rssPeakKiB)", "\(m.growthKiB)",
                      String(format: "%.1f", m.wallSeconds)]]))
            }
        }
        if let text = args.string("url") {
            start = try firstAudio(try url(text), starts: starts)
            if let r = start {
                print("\nplay while downloading: opening to first frame heard, against the link's first chunk (4096 frames) + one period, median of \(r.starts); observed")
                print(BenchTable.render(
                    ["url", "chunk arrives ms", "first audio ms", "worst ms", "output latency ms", "period ms", "first audio − (chunk + period) ms"],
                    [[r.url, f(r.chunkArrivalMedianMilliseconds), f(r.firstAudioMedianMilliseconds), f(r.firstAudioWorstMilliseconds),
                      f(r.outputLatencyMilliseconds), f(r.periodMilliseconds), f(r.marginMilliseconds)]]))
            }
        }
        try bench.writeReport(Report(start: start, memory: memory))
    }

    static func url(_ text: String) throws -> URL {
        guard let url = URL(string: text), RemoteAudio.handles(url) else {
            throw UsageError("\(text): --url and --memory-url take an http(s) URL")
        }
        return url
    }

    /// Alternates a chunk-arrival run and a player start, `starts` times each.
    static func firstAudio(_ url: URL, starts: Int) throws -> StartRow {
        var arrivals: [Double] = [], firsts: [Double] = []
        var latency = 0.0
        var period = 0.0
        for _ in 0..<starts {
            // The peer: the link delivering the first chunk's bytes, decoded.
            let t0 = HostTime.now()
            let (decoder, _) = try RemoteAudio.open(url)
            var chunk = [Float](repeating: 0, count: 4096 * decoder.format.channelCount)
            var got = 0
            while got < 4096 {
                let n = try chunk.withUnsafeMutableBufferPointer { try decoder.read(into: UnsafeMutableBufferPointer(rebasing: $0[(got * decoder.format.channelCount)...])) }
                if n == 0 { break }
                got += n
            }
            arrivals.append(Double(HostTime.now() &- t0) * 1e-9)

            let configuration = OutputConfiguration(sampleRate: decoder.format.sampleRate, channelCount: 2,
                                                    periodFrames: periodFrames, periodCount: 2)
            let backend = try BufferQueueBackend(device: NullDevice(configuration: configuration))
            period = Double(periodFrames) / decoder.format.sampleRate
            let t1 = HostTime.now()
            let player = try AudioPlayer(contentsOf: url, backend: backend)
            try player.play()
            guard let heard = firstFrameHeard(since: t1, rate: player.format.sampleRate, timeout: 30,
                                              played: { player.currentFrame }, latency: { player.outputLatency }) else {
                throw AudioError(.readFailed, "\(url.absoluteString): no frame played within 30 s")
            }
            firsts.append(heard)
            latency = player.outputLatency
            try player.stop()
        }
        let arrival = StreamBench.median(arrivals), first = StreamBench.median(firsts)
        return StartRow(url: url.absoluteString, starts: starts, periodMilliseconds: period * 1000,
                        chunkArrivalMedianMilliseconds: arrival * 1000, firstAudioMedianMilliseconds: first * 1000,
                        firstAudioWorstMilliseconds: (firsts.max() ?? 0) * 1000,
                        outputLatencyMilliseconds: latency * 1000,
                        marginMilliseconds: (first - arrival - period) * 1000)
    }

    /// Decodes every frame of `url` as fast as the CPU allows, reading the resident set.
    static func streamWhole(_ url: URL) throws -> MemoryRow {
        let t0 = HostTime.now()
        let (decoder, source) = try RemoteAudio.open(url)
        let rate = decoder.format.sampleRate
        var buffer = [Float](repeating: 0, count: 4096 * decoder.format.channelCount)
        var frames = 0, firstMinute = 0, peak = 0, nextSample = 0
        while true {
            let n = try buffer.withUnsafeMutableBufferPointer { try decoder.read(into: $0) }
            if n == 0 { break }
            frames += n
            if firstMinute == 0, Double(frames) >= 60 * rate { firstMinute = PlayerBench.residentKiB() }
            if frames >= nextSample {
                peak = max(peak, PlayerBench.residentKiB())
                nextSample = frames + Int(rate)
            }
        }
        peak = max(peak, PlayerBench.residentKiB())
        return MemoryRow(url: url.absoluteString, audioSeconds: Double(frames) / rate, bytesDownloaded: source.position,
                         budgetBytes: source.budgetBytes, rssAfterFirstMinuteKiB: firstMinute, rssPeakKiB: peak,
                         growthKiB: firstMinute > 0 ? peak - firstMinute : 0, wallSeconds: Double(HostTime.now() &- t0) * 1e-9)
    }

    private static func f(_ value: Double) -> String { String(format: "%.1f", value) }
}
