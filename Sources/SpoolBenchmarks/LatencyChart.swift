import Foundation
import Spool

/// The SVG chart of `spool bench latency`: start latency per configuration for each
/// back-end (a dot at p50, a whisker to p99), over the floor band from (P−1)·F to P·F with
/// its median marked, on a logarithmic time axis so 3 ms and 70 ms both read.
enum LatencyChart {
    static let colours = ["queue": "#1f77b4", "openal": "#d62728"]

    static func write(_ rows: [LatencyRow], to path: String) throws {
        do { try svg(rows).write(toFile: path, atomically: true, encoding: .utf8) } catch {
            throw AudioError(.writeFailed, "\(path): cannot write the chart", underlying: error)
        }
    }

    static func svg(_ rows: [LatencyRow]) -> String {
        // One column per configuration (in first-seen order), references last.
        var configurations: [String] = []
        func key(_ r: LatencyRow) -> String {
            r.kind == "reference" ? "defaults\n\(r.periodFrames)×\(r.periods) @\(Int(r.sampleRate / 1000)) kHz"
                : "\(r.requestedPeriodFrames)×\(r.requestedPeriods)"
        }
        for r in rows.sorted(by: { ($0.kind == "reference" ? 1 : 0) < ($1.kind == "reference" ? 1 : 0) })
        where !configurations.contains(key(r)) { configurations.append(key(r)) }
        let backends = Array(Set(rows.map(\.backend))).sorted(by: { $0 > $1 })

        let width = max(640, 90 * configurations.count + 140), height = 460
        let left = 70.0, right = 60.0, top = 50.0, bottom = 90.0
        let plotW = Double(width) - left - right, plotH = Double(height) - top - bottom
        let values = rows.flatMap { [$0.floorMinMs, $0.floorMaxMs, $0.startP50Ms, $0.startP99Ms] }.filter { $0.isFinite && $0 > 0 }
        let lo = niceStep(below: max(0.2, (values.min() ?? 1) * 0.8))
        let hi = niceStep(above: (values.max() ?? 100) * 1.15)
        func y(_ ms: Double) -> Double { top + plotH * (1 - (log10(max(ms, lo)) - log10(lo)) / (log10(hi) - log10(lo))) }
        let column = plotW / Double(max(1, configurations.count))

        var out = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(width)" height="\(height)" font-family="sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(left)" y="24" font-size="16" font-weight="bold">Start latency by device configuration (F frames × P periods)</text>
            <text x="\(left)" y="40" fill="#555">dot: p50 (filled: observed, hollow: modelled), whisker: p99; grey band: each row's floor (P−1)·F … P·F, line: its median</text>

            """
        // Grid lines at 1-2-5 steps.
        var tick = pow(10, floor(log10(lo)))
        while tick <= hi * 1.0001 {
            for m in [1.0, 2.0, 5.0] where tick * m <= hi * 1.0001 && tick * m >= lo * 0.9999 {
                let v = tick * m
                out += "<line x1=\"\(left)\" x2=\"\(left + plotW)\" y1=\"\(f(y(v)))\" y2=\"\(f(y(v)))\" stroke=\"#e5e5e5\"/>\n"
                out += "<text x=\"\(left - 6)\" y=\"\(f(y(v) + 4))\" text-anchor=\"end\" fill=\"#555\">\(label(v))</text>\n"
            }
            tick *= 10
        }
        out += "<text transform=\"translate(18,\(f(top + plotH / 2))) rotate(-90)\" text-anchor=\"middle\">start latency (ms)</text>\n"
        for (i, configuration) in configurations.enumerated() {
            let x0 = left + column * Double(i)
            let centre = x0 + column / 2
            let inColumn = rows.filter { key($0) == configuration }
            for (b, backend) in backends.enumerated() {
                guard let r = inColumn.first(where: { $0.backend == backend }), r.startP50Ms.isFinite else { continue }
                let x = centre + (Double(b) - Double(backends.count - 1) / 2) * 18
                let colour = colours[backend] ?? "#333"
                // Each row's own floor, from the F × P its device really ran with.
                out += "<rect x=\"\(f(x - 8))\" y=\"\(f(y(r.floorMaxMs)))\" width=\"16\" "
                    + "height=\"\(f(y(r.floorMinMs) - y(r.floorMaxMs)))\" fill=\"#ddd\"/>\n"
                out += "<line x1=\"\(f(x - 8))\" x2=\"\(f(x + 8))\" y1=\"\(f(y(r.floorMedianMs)))\" "
                    + "y2=\"\(f(y(r.floorMedianMs)))\" stroke=\"#999\" stroke-dasharray=\"3 2\"/>\n"
                out += "<line x1=\"\(f(x))\" x2=\"\(f(x))\" y1=\"\(f(y(r.startP50Ms)))\" y2=\"\(f(y(r.startP99Ms)))\" stroke=\"\(colour)\" stroke-width=\"2\"/>\n"
                out += "<line x1=\"\(f(x - 4))\" x2=\"\(f(x + 4))\" y1=\"\(f(y(r.startP99Ms)))\" y2=\"\(f(y(r.startP99Ms)))\" stroke=\"\(colour)\" stroke-width=\"2\"/>\n"
                // Filled: observed (a real device's or server's timing); hollow: modelled.
                let fill = r.timing == "modelled" ? "fill=\"white\" stroke=\"\(colour)\" stroke-width=\"2\"" : "fill=\"\(colour)\""
                out += "<circle cx=\"\(f(x))\" cy=\"\(f(y(r.startP50Ms)))\" r=\"4.5\" \(fill)><title>\(backend) \(configuration.replacingOccurrences(of: "\n", with: " ")) (\(r.timing)): p50 \(label(r.startP50Ms)) ms, p99 \(label(r.startP99Ms)) ms</title></circle>\n"
            }
            for (n, line) in configuration.split(separator: "\n").enumerated() {
                out += "<text x=\"\(f(centre))\" y=\"\(f(top + plotH + 18 + Double(n) * 14))\" text-anchor=\"middle\">\(line)</text>\n"
            }
        }
        out += "<line x1=\"\(left)\" x2=\"\(left)\" y1=\"\(top)\" y2=\"\(top + plotH)\" stroke=\"#333\"/>\n"
        out += "<line x1=\"\(left)\" x2=\"\(left + plotW)\" y1=\"\(top + plotH)\" y2=\"\(top + plotH)\" stroke=\"#333\"/>\n"
        // Legend.
        var lx = left
        let ly = Double(height) - 22
        for backend in backends {
            out += "<circle cx=\"\(f(lx + 5))\" cy=\"\(f(ly - 4))\" r=\"4.5\" fill=\"\(colours[backend] ?? "#333")\"/>"
            out += "<text x=\"\(f(lx + 14))\" y=\"\(f(ly))\">\(backend == "queue" ? "buffer queue" : "OpenAL Soft")</text>\n"
            lx += 130
        }
        out += "<rect x=\"\(f(lx))\" y=\"\(f(ly - 10))\" width=\"14\" height=\"10\" fill=\"#ddd\"/><text x=\"\(f(lx + 20))\" y=\"\(f(ly))\">floor</text>\n"
        out += "</svg>\n"
        return out
    }

    /// The largest of 1, 2, 5 × 10ⁿ at or below `v`.
    private static func niceStep(below v: Double) -> Double {
        let decade = pow(10, floor(log10(v)))
        return [5.0, 2.0, 1.0].map { $0 * decade }.first { $0 <= v } ?? decade
    }

    /// The smallest of 1, 2, 5 × 10ⁿ at or above `v`.
    private static func niceStep(above v: Double) -> Double {
        let decade = pow(10, floor(log10(v)))
        return [1.0, 2.0, 5.0, 10.0].map { $0 * decade }.first { $0 >= v } ?? 10 * decade
    }

    private static func f(_ v: Double) -> String { String(format: "%.1f", v) }
    private static func label(_ v: Double) -> String { v >= 10 ? String(format: "%.0f", v) : String(format: "%g", (v * 10).rounded() / 10) }
}
