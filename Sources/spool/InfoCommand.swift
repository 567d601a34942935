import Foundation
import Spool
import SpoolBenchmarks

/// `spool info [--json] FILE…`
enum InfoCommand {
    static let help = """
        usage: spool info [--json] FILE...

        Prints, for each file: container, codec, sample rate, channels, exact frames,
        duration, bit rate, VBR or CBR, and tags. FILE - reads standard input as a stream
        (to its end, so that the frames are those it decodes to). --json prints a JSON array instead, with
        an entry {"file", "error": {"code", "message"}} for a file that cannot be read.
        Exit status 1 when any file cannot be read (the others are still printed).
        """

    /// A file that cannot be read, in the JSON output: its path and the error.
    struct Failure: Encodable {
        struct Reason: Encodable {
            let code: String
            let message: String
        }
        let file: String
        let error: Reason
    }

    /// One entry of the JSON array: a file's facts, or why it cannot be read.
    enum Entry: Encodable {
        case report(Report)
        case failure(Failure)

        func encode(to encoder: any Encoder) throws {
            switch self {
            case .report(let report): try report.encode(to: encoder)
            case .failure(let failure): try failure.encode(to: encoder)
            }
        }
    }

    struct Report: Encodable {
        let file: String
        let container: String
        let codec: String
        let sampleRate: Double
        let channels: Int
        let frames: Int
        /// False when `frames` is a header's claim that decoding has not confirmed.
        let framesExact: Bool
        let duration: Double
        let bitRate: Int
        let isVBR: Bool
        let tags: [String: String]
        let warnings: [String]
    }

    static func run(_ words: [String]) throws {
        let args = try Arguments(words, valued: [], switches: ["json", "help"])
        if args.has("help") { print(help); return }
        guard !args.operands.isEmpty else { throw UsageError("info needs at least one FILE") }
        var entries: [Entry] = []
        var failure: AudioError?
        for path in args.operands {
            do {
                let decoder: any AudioDecoder
                if let url = StandardInput.remoteURL(path) {
                    // Read to the end where the stream states no exact count (and has an end).
                    let (remote, source) = try RemoteAudio.open(url)
                    if !remote.isFrameCountExact, !source.response.isLive { try StandardInput.readToEnd(remote) }
                    decoder = remote
                } else {
                    decoder = try StandardInput.open(path)
                    if StandardInput.names(path) { try StandardInput.readToEnd(decoder) }
                }
                let info = decoder.info
                entries.append(.report(Report(
                    file: path, container: info.container, codec: info.codec,
                    sampleRate: decoder.format.sampleRate, channels: decoder.format.channelCount,
                    frames: decoder.frameCount, framesExact: decoder.isFrameCountExact, duration: decoder.duration, bitRate: info.bitRate,
                    isVBR: info.isVBR, tags: info.tags.fields, warnings: decoder.warnings.map(\.description))))
            } catch let error as AudioError {
                printError("spool: \(error.message)")
                entries.append(.failure(Failure(file: path, error: .init(code: "\(error.code)", message: error.message))))
                failure = error
            }
        }
        if args.has("json") {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(entries), as: UTF8.self))
        } else {
            for case .report(let report) in entries { print(text(report)) }
        }
        if let failure { throw ExitFailure(failure) }
    }

    static func text(_ r: Report) -> String {
        var lines = [
            r.file,
            "  container   \(r.container)",
            "  codec       \(r.codec)",
            "  format      \(Int(r.sampleRate)) Hz, \(r.channels) ch",
            "  frames      \(r.frames)\(r.framesExact ? "" : " (the header's claim, not verified)")",
            "  duration    \(String(format: "%.3f", r.duration)) s",
            "  bit rate    \(r.bitRate / 1000) kbit/s \(r.isVBR ? "VBR" : "CBR")",
        ]
        // Tag names are printed whole: a name longer than the column pushes its value along.
        for (key, value) in r.tags.sorted(by: { $0.key < $1.key }) {
            lines.append("  \(key.padding(toLength: max(11, key.count), withPad: " ", startingAt: 0)) \(value)")
        }
        for warning in r.warnings { lines.append("  warning     \(warning)") }
        return lines.joined(separator: "\n")
    }
}
