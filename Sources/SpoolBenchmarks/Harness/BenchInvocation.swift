import Foundation
import SpoolCore

/// One `spool bench NAME …` run: its words parsed once, with the options every benchmark
/// shares — `--help`, `--json PATH`, `--backends LIST`, `--quality LEVEL|all` — read the same
/// way in each, and its report written the same way.
package struct BenchInvocation {
    /// The words, with `json` and `help` already among the options.
    package let arguments: Arguments

    /// Parses `words`.
    /// - Parameters:
    ///   - valued: The benchmark's own options that take a value (`json` is added).
    ///   - switches: Its own switches (`help` is added).
    ///   - help: What `--help` prints.
    /// - Returns: nil once `--help` has been printed: the benchmark has nothing more to do.
    /// - Throws: `UsageError` for an unknown option or a missing value.
    package init?(_ words: [String], valued: Set<String>, switches: Set<String> = [],
                  help: String = BenchCommand.help) throws {
        arguments = try Arguments(words, valued: valued.union(["json"]), switches: switches.union(["help"]))
        if arguments.has("help") {
            print(help)
            return nil
        }
    }

    /// The sides `--backends` lists (comma-separated), in its order.
    /// - Parameters:
    ///   - allowed: The sides this benchmark has.
    ///   - defaults: The sides when the option is absent.
    /// - Throws: `UsageError` naming the allowed sides for an empty list or an unknown side.
    package func backends(allowed: [String], defaults: [String]) throws -> [String] {
        guard let text = arguments.string("backends") else { return defaults }
        let listed = text.split(separator: ",").map(String.init)
        guard !listed.isEmpty, listed.allSatisfy(allowed.contains) else {
            throw UsageError("--backends lists \(allowed.joined(separator: ", ")), comma-separated")
        }
        return listed
    }

    /// The levels `--quality` names: one, or `all` (also when absent).
    /// - Throws: `UsageError` for any other word.
    package func qualities() throws -> [ResamplingQuality] {
        guard let value = arguments.string("quality"), value != "all" else { return ResamplingQuality.allCases }
        guard let quality = ResamplingQuality(rawValue: value) else {
            throw UsageError("--quality is fast, balanced, high or all")
        }
        return [quality]
    }

    /// Writes `report` as JSON to the `--json` path, when there is one.
    /// - Throws: `AudioError.Code.writeFailed` naming the path.
    package func writeReport<Report: Encodable>(_ report: Report) throws {
        guard let path = arguments.string("json") else { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        do { try encoder.encode(report).write(to: URL(fileURLWithPath: path)) } catch {
            throw AudioError(.writeFailed, "\(path): cannot write the JSON report", underlying: error)
        }
    }
}

/// The tables every benchmark prints.
package enum BenchTable {
    /// Formats rows as an aligned table: the first column left-aligned, the others right-aligned.
    package static func render(_ header: [String], _ rows: [[String]]) -> String {
        let widths = header.indices.map { i in ([header] + rows).map { $0[i].count }.max() ?? 0 }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { i, cell in
                i == 0 ? cell.padding(toLength: widths[i], withPad: " ", startingAt: 0)
                    : String(repeating: " ", count: widths[i] - cell.count) + cell
            }.joined(separator: "  ")
        }
        return ([line(header), String(repeating: "-", count: widths.reduce(0, +) + 2 * (widths.count - 1))]
                + rows.map(line)).joined(separator: "\n")
    }
}
