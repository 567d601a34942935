import Foundation
import Spool

/// `spool bench latency`: start latency, output latency, refill turnaround and underruns of
/// each back-end at each device configuration, on the same output. Every configuration runs
/// in a process of its own (`spool bench latency-worker`), because OpenAL Soft reads its
/// period settings once per process.
enum LatencyBench {
    static let help = """
        usage: spool bench latency [--backends queue,openal] [--output null|default|pulse[:SINK]|alsa:NAME,...]
                                   [--buffer-frames 128,256,512,1024] [--buffers 2,3,4] [--configs 128x2,1024x3]
                                   [--rate HZ] [--starts N] [--seconds S] [--load] [--no-reference]
                                   [--rewind on|off|both] [--json PATH] [--chart PATH.svg] [--acoustic]

        For each back-end, output and device configuration (F frames × P periods):
          start latency    start call → first frame leaving the device, over N starts: p50, p99, max
          output latency   audio held ahead of the speaker in steady playback (median): the voice's
                           queued buffers and the device's part (device ms: the server's, ALSA's or
                           OpenAL Soft's own figure)
          refill           buffer consumed → refill callback (queue) or unqueue (OpenAL): p50, p99
          underruns        during S seconds of steady playback (--load keeps the other cores busy)
        and the floor: new audio starts between (P−1)·F and P·F frames later. --output takes several
        outputs, measured in one run: the queue plays on each; OpenAL on null and default only (OpenAL
        Soft picks its own driver, PulseAudio first), and on default when only pulse or ALSA outputs
        are given. default is the native PulseAudio output for the queue where a server answers;
        alsa:default is ALSA's plug-in to it. --configs lists F×P pairs instead of every --buffer-frames with
        every --buffers. The granted column shows a PulseAudio stream's tlength/minreq/prebuf in
        frames. The queue back-end is measured with and without starting below the floor (--rewind,
        both by default): on a device that rewinds, a start re-mixes the frames not yet played
        instead of waiting behind them; the rewind column says on, off, or cannot (a device that
        does not rewind). Reference rows show each back-end at its usual defaults. --acoustic, at
        the first F × P given, records the sound server's monitor with its own timing (so each
        recorded frame has the host time it was heard), starts a click on each back-end alone (the
        queue on the first output that reaches the server, with and without rewind) and then on
        both at one host time, and checks each start latency heard against the one its back-end
        reports, and the offset between them (exit 1 when any disagrees by more than one period + 2 ms).
        """

    static func run(_ words: [String]) throws {
        guard let bench = try BenchInvocation(
            words, valued: ["backends", "output", "buffer-frames", "buffers", "configs", "rate", "starts", "seconds", "chart",
                     "rewind"],
            switches: ["load", "acoustic", "no-reference"], help: help
        ) else { return }
        let args = bench.arguments
        let backends = try bench.backends(allowed: ["queue", "openal"], defaults: ["queue", "openal"])
        let outputs = (args.string("output") ?? "null").split(separator: ",").map {
            String($0).trimmingCharacters(in: .whitespaces)
        }
        var targets: [(text: String, target: OutputTarget)] = []
        for text in outputs { targets.append((text, try parseOutput(text))) }
        guard !targets.isEmpty else { throw UsageError("--output takes one or more outputs, comma-separated") }
        // OpenAL Soft chooses its own driver (PulseAudio first) for `default`: it plays on the
        // null and default outputs given, and on `default` when only pulse or ALSA outputs are.
        let openALOutputs = targets.filter {
            switch $0.target {
            case .null, .default: return true
            default: return false
            }
        }.map(\.text)
        let configurations: [(frames: Int, periods: Int)]
        if let configs = args.string("configs") {
            guard args.string("buffer-frames") == nil, args.string("buffers") == nil else {
                throw UsageError("--configs lists F×P pairs: give it instead of --buffer-frames and --buffers")
            }
            configurations = try pairs(configs)
        } else {
            let frames = try list(args.string("buffer-frames") ?? "128,256,512,1024", name: "buffer-frames", range: 16...16_384)
            let periods = try list(args.string("buffers") ?? "2,3,4", name: "buffers", range: 2...16)
            configurations = frames.flatMap { f in periods.map { (f, $0) } }
        }
        let rate = try args.double("rate", in: 8_000...192_000) ?? 48_000
        let starts = try args.int("starts", in: 1...10_000) ?? 50
        let seconds = try args.double("seconds", in: 0.1...3_600) ?? 5
        let load = args.has("load")
        let rewinds: [String]
        switch args.string("rewind") ?? "both" {
        case "both": rewinds = ["on", "off"]
        case "on": rewinds = ["on"]
        case "off": rewinds = ["off"]
        case let other: throw UsageError("--rewind takes on, off or both, not '\(other)'")
        }

        var jobs: [[String]] = []
        for backend in backends {
            let outputs = backend == "queue" ? targets.map(\.text) : (openALOutputs.isEmpty ? ["default"] : openALOutputs)
            for output in outputs {
                for (f, p) in configurations {
                    // OpenAL Soft mixes ahead and does not rewind: one row.
                    for rewind in backend == "queue" ? rewinds : ["off"] {
                        jobs.append(["--backend", backend, "--output", output, "--buffer-frames", "\(f)", "--buffers", "\(p)",
                                     "--rate", "\(rate)", "--starts", "\(starts)", "--seconds", "\(seconds)", "--kind", "measured",
                                     "--rewind", rewind] + (load ? ["--load"] : []))
                    }
                }
                if !args.has("no-reference") {
                    // Each back-end's usual defaults: 1024 × 3 at 44.1 kHz (OpenAL Soft's own
                    // settings; an Audio Queue program's 3 buffers of 0.5 s on the queue).
                    jobs.append(["--backend", backend, "--output", output, "--buffer-frames", "1024", "--buffers", "3",
                                 "--rate", "44100", "--starts", "\(starts)", "--seconds", "\(seconds)", "--kind", "reference",
                                 "--rewind", "off"] + (load ? ["--load"] : []))
                }
            }
        }
        var rows: [LatencyRow] = []
        for job in jobs {
            let label = job.contains("reference") ? " (reference)" : ""
            let rewind = job[1] == "queue" && label.isEmpty ? ", rewind \(job[17])" : ""
            printError("spool: measuring \(job[1]) on \(job[3]) \(job[5])×\(job[7])\(label)\(rewind)")
            rows.append(try runWorker(job))
        }
        print(table(rows))
        if rows.contains(where: { $0.periodFrames != $0.requestedPeriodFrames || $0.periods != $0.requestedPeriods }) {
            print("* the device did not honour the F×P asked; floors are computed from what it runs with")
        }
        if let chart = args.string("chart") { try LatencyChart.write(rows, to: chart) }
        guard args.has("acoustic") else { return try bench.writeReport(rows) }
        // The queue on the first output that reaches the sound server (ALSA `default` when none does).
        let heardOutput = targets.first { if case .null = $0.target { return false } else { return true } }?.target ?? .default
        let result = try AcousticCheck.run(rate: rate, queueOutput: heardOutput, periodFrames: configurations[0].frames,
                                           periods: configurations[0].periods)
        print(AcousticCheck.report(result))
        try bench.writeReport(Report(rows: rows, acoustic: result))
        if !result.agrees { throw ExitFailure(AudioError(.deviceUnavailable, "acoustic check failed")) }
    }

    /// The JSON document with `--acoustic`: the rows and the acoustic result.
    struct Report: Encodable {
        let rows: [LatencyRow]
        let acoustic: AcousticCheck.Result
    }

    static func list(_ text: String, name: String, range: ClosedRange<Int>) throws -> [Int] {
        let values = text.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !values.isEmpty, values.allSatisfy({ $0.map(range.contains) ?? false }) else {
            throw UsageError("--\(name) takes comma-separated whole numbers within \(range.lowerBound)...\(range.upperBound)")
        }
        return values.compactMap { $0 }
    }

    /// `128x2,1024x3` (× or x) as (frames, periods) pairs.
    static func pairs(_ text: String) throws -> [(frames: Int, periods: Int)] {
        let pairs = text.split(separator: ",").map { pair -> (Int, Int)? in
            let parts = pair.replacingOccurrences(of: "×", with: "x").split(separator: "x")
            guard parts.count == 2, let f = Int(parts[0].trimmingCharacters(in: .whitespaces)),
                  let p = Int(parts[1].trimmingCharacters(in: .whitespaces)),
                  (16...16_384).contains(f), (2...16).contains(p) else { return nil }
            return (f, p)
        }
        guard !pairs.isEmpty, pairs.allSatisfy({ $0 != nil }) else {
            throw UsageError("--configs takes comma-separated FxP pairs, F within 16...16384 and P within 2...16 (e.g. 128x2,1024x3)")
        }
        return pairs.compactMap { $0 }
    }

    static func parseOutput(_ text: String) throws -> OutputTarget {
        do { return try OutputTarget(parsing: text) } catch let error as AudioError { throw UsageError(error.message) }
    }

    /// Runs one configuration in a child process and reads its row.
    static func runWorker(_ arguments: [String]) throws -> LatencyRow {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL
        if !FileManager.default.isExecutableFile(atPath: process.executableURL!.path) {
            process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        }
        process.arguments = ["bench", "latency-worker"] + arguments
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw AudioError(.deviceUnavailable, "latency worker for \(arguments.joined(separator: " ")) failed (exit \(process.terminationStatus))")
        }
        do { return try JSONDecoder().decode(LatencyRow.self, from: data) } catch {
            throw AudioError(.libraryFailure, "latency worker printed no result", underlying: error)
        }
    }

    static func table(_ rows: [LatencyRow]) -> String {
        func ms(_ v: Double?) -> String { v.map { $0.isNaN ? "-" : String(format: "%.2f", $0) } ?? "—" }
        return BenchTable.render(
            ["backend", "output", "timing", "rewind", "F×P asked", "F×P got", "granted", "rate", "floor min/med/max ms", "start p50",
             "p99", "max", "timeouts", "output ms", "device ms", "refill p50", "p99", "underruns", "xruns"],
            rows.map { r in
                [r.kind == "reference" ? "\(r.backend) (ref)" : r.backend, r.output, r.timing, r.rewind,
                 "\(r.requestedPeriodFrames)×\(r.requestedPeriods)",
                 "\(r.periodFrames)×\(r.periods)\(r.periodFrames == r.requestedPeriodFrames && r.periods == r.requestedPeriods ? "" : " *")",
                 r.granted ?? "—", "\(Int(r.sampleRate))",
                 "\(ms(r.floorMinMs))/\(ms(r.floorMedianMs))/\(ms(r.floorMaxMs))",
                 ms(r.startP50Ms), ms(r.startP99Ms), ms(r.startMaxMs), "\(r.startTimeouts)", ms(r.outputLatencyMs), ms(r.deviceLatencyMs),
                 ms(r.refillP50Ms), ms(r.refillP99Ms), "\(r.underruns)\(r.load ? " (load)" : "")", "\(r.xruns)"]
            })
    }
}

/// `spool bench latency-worker …`: one back-end at one configuration; prints a `LatencyRow` as JSON.
enum LatencyWorker {
    static func run(_ words: [String]) throws {
        let args = try Arguments(words, valued: ["backend", "output", "buffer-frames", "buffers", "rate", "starts",
                                                 "seconds", "kind", "rewind"], switches: ["load"])
        let backend = args.string("backend") ?? "queue"
        let outputText = args.string("output") ?? "null"
        let output = try LatencyBench.parseOutput(outputText)
        let f = try args.int("buffer-frames", in: 16...16_384) ?? 256
        let p = try args.int("buffers", in: 2...16) ?? 2
        let rate = try args.double("rate", in: 8_000...192_000) ?? 48_000
        let starts = try args.int("starts", in: 1...10_000) ?? 50
        let seconds = try args.double("seconds", in: 0.1...3_600) ?? 5
        let kind = args.string("kind") ?? "measured"
        let load = args.has("load")
        let rewind = args.string("rewind") == "on"

        let probe: any LatencyProbe
        let note: String
        switch (backend, kind) {
        case ("queue", "reference"):
            probe = try QueueLatencyProbe(output: output, rate: rate, periodFrames: f, periods: p,
                                          bufferFrames: Int(rate / 2), bufferCount: 3, rewind: false)
            note = "3 queue buffers of 0.5 s, as Audio Queue programs use"
        case ("queue", _):
            probe = try QueueLatencyProbe(output: output, rate: rate, periodFrames: f, periods: p,
                                          bufferFrames: f, bufferCount: 3, rewind: rewind)
            note = "3 queue buffers of one period (as the OpenAL probe's source buffers)"
        default:
            (probe, note) = try OpenALLatency.makeProbe(output: output, rate: rate, periodFrames: f, periods: p,
                                                        reference: kind == "reference")
        }
        let (startLatencies, timedOut) = try probe.measureStarts(count: starts)
        // After the warm-up the starts include, when a sound server's figures are in.
        let negotiated = probe.negotiated
        let cpuLoad = load ? CPULoad(threads: max(1, ProcessInfo.processInfo.activeProcessorCount - 1)) : nil
        let steady = try probe.measureSteady(seconds: seconds)
        cpuLoad?.stop()
        probe.close()
        let frameMs = 1000 / negotiated.rate
        let row = LatencyRow(
            backend: backend, output: outputText, kind: kind, note: note, sampleRate: negotiated.rate,
            requestedPeriodFrames: f, requestedPeriods: p, periodFrames: negotiated.periodFrames, periods: negotiated.periods,
            floorMinMs: Double((negotiated.periods - 1) * negotiated.periodFrames) * frameMs,
            floorMedianMs: (Double(negotiated.periods) - 0.5) * Double(negotiated.periodFrames) * frameMs,
            floorMaxMs: Double(negotiated.periods * negotiated.periodFrames) * frameMs,
            starts: startLatencies.count, startTimeouts: timedOut, timing: probe.timing, rewind: probe.rewind,
            startP50Ms: percentile(startLatencies, 50) * 1000, startP99Ms: percentile(startLatencies, 99) * 1000,
            startMaxMs: (startLatencies.max() ?? .nan) * 1000,
            outputLatencyMs: percentile(steady.latencies, 50) * 1000,
            deviceLatencyMs: steady.deviceLatencies.isEmpty ? nil : percentile(steady.deviceLatencies, 50) * 1000,
            granted: probe.granted,
            // No refill in the steady part (a buffer longer than it): no figure, rather than NaN.
            refillP50Ms: steady.turnarounds.flatMap { $0.isEmpty ? nil : percentile($0, 50) * 1000 },
            refillP99Ms: steady.turnarounds.flatMap { $0.isEmpty ? nil : percentile($0, 99) * 1000 },
            steadySeconds: seconds, load: load, underruns: steady.underruns, xruns: steady.xruns)
        let encoder = JSONEncoder()
        print(String(decoding: try encoder.encode(row), as: UTF8.self))
    }
}
