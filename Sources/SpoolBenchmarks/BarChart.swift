import Foundation
import Spool

/// A grouped bar chart in SVG, for the benchmarks that compare back-ends level by level
/// (`bench capacity`: voices sustained; `bench mix`: × real time): one group per level, one
/// bar per back-end in the same colour in every group, its value written above it, on a
/// linear axis from zero. A bar with `atLeast` set is drawn hollow: a side that stopped at
/// its limit rather than failing.
struct BarChart {
    struct Bar {
        var group: String
        var series: String
        var value: Double
        var atLeast = false
    }

    var title: String
    var subtitle: String
    var axis: String
    var bars: [Bar]

    static let palette = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"]

    func write(to path: String) throws {
        do { try svg.write(toFile: path, atomically: true, encoding: .utf8) } catch {
            throw AudioError(.writeFailed, "\(path): cannot write the chart", underlying: error)
        }
    }

    var svg: String {
        var groups: [String] = [], series: [String] = []
        for bar in bars {
            if !groups.contains(bar.group) { groups.append(bar.group) }
            if !series.contains(bar.series) { series.append(bar.series) }
        }
        let barWidth = 34.0, gap = 30.0
        let groupWidth = barWidth * Double(max(1, series.count)) + gap
        let left = 70.0, right = 30.0, top = 60.0, bottom = 80.0, plotH = 300.0
        let width = max(560, Int(left + right + groupWidth * Double(max(1, groups.count))))
        let height = Int(top + plotH + bottom)
        let top10 = Self.niceCeiling(max(bars.map(\.value).filter(\.isFinite).max() ?? 1, 1e-9) * 1.1)
        func y(_ v: Double) -> Double { top + plotH * (1 - max(0, v) / top10) }

        var out = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(width)" height="\(height)" font-family="sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(left)" y="24" font-size="16" font-weight="bold">\(Self.escaped(title))</text>
            <text x="\(left)" y="42" fill="#555">\(Self.escaped(subtitle))</text>

            """
        for step in 0...5 {
            let v = top10 * Double(step) / 5
            out += "<line x1=\"\(left)\" x2=\"\(Double(width) - right)\" y1=\"\(Self.f(y(v)))\" y2=\"\(Self.f(y(v)))\" stroke=\"#e5e5e5\"/>\n"
            out += "<text x=\"\(left - 6)\" y=\"\(Self.f(y(v) + 4))\" text-anchor=\"end\" fill=\"#555\">\(Self.label(v))</text>\n"
        }
        out += "<text transform=\"translate(18,\(Self.f(top + plotH / 2))) rotate(-90)\" text-anchor=\"middle\">\(Self.escaped(axis))</text>\n"
        for (g, group) in groups.enumerated() {
            let x0 = left + gap / 2 + groupWidth * Double(g)
            for (s, name) in series.enumerated() {
                guard let bar = bars.first(where: { $0.group == group && $0.series == name }), bar.value.isFinite else { continue }
                let colour = Self.palette[s % Self.palette.count]
                let x = x0 + barWidth * Double(s)
                let fill = bar.atLeast ? "fill=\"white\" stroke=\"\(colour)\" stroke-width=\"2\"" : "fill=\"\(colour)\""
                out += "<rect x=\"\(Self.f(x + 2))\" y=\"\(Self.f(y(bar.value)))\" width=\"\(Self.f(barWidth - 4))\" "
                    + "height=\"\(Self.f(y(0) - y(bar.value)))\" \(fill)/>\n"
                out += "<text x=\"\(Self.f(x + barWidth / 2))\" y=\"\(Self.f(y(bar.value) - 4))\" text-anchor=\"middle\" "
                    + "font-size=\"10\">\(bar.atLeast ? "≥" : "")\(Self.label(bar.value))</text>\n"
            }
            out += "<text x=\"\(Self.f(x0 + barWidth * Double(series.count) / 2))\" y=\"\(Self.f(top + plotH + 18))\" "
                + "text-anchor=\"middle\">\(Self.escaped(group))</text>\n"
        }
        for (s, name) in series.enumerated() {
            let x = left + 140 * Double(s)
            out += "<rect x=\"\(Self.f(x))\" y=\"\(Self.f(top + plotH + 40))\" width=\"12\" height=\"12\" "
                + "fill=\"\(Self.palette[s % Self.palette.count])\"/>\n"
            out += "<text x=\"\(Self.f(x + 18))\" y=\"\(Self.f(top + plotH + 50))\">\(Self.escaped(name))</text>\n"
        }
        return out + "</svg>\n"
    }

    /// 1, 2 or 5 times a power of ten, at or above `v`.
    static func niceCeiling(_ v: Double) -> Double {
        let power = pow(10, floor(log10(v)))
        return [1.0, 2.0, 5.0, 10.0].map { $0 * power }.first { $0 >= v } ?? 10 * power
    }

    private static func f(_ v: Double) -> String { String(format: "%.1f", v) }
    private static func label(_ v: Double) -> String { v >= 10 ? String(format: "%.0f", v) : String(format: "%.2g", v) }
    private static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }
}
