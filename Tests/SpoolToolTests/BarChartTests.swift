import Foundation
@testable import SpoolBenchmarks
import Testing

/// The benchmarks' bar chart draws what it is given: a bar per value, its height in proportion
/// on an axis from zero, one colour per series in every group, a hollow bar for a side that
/// stopped at its limit, and text escaped.
@Suite("Bench bar chart")
struct BarChartTests {
    /// The `rect` elements with a `height`: the bars (the background and legend keys have none
    /// or a fixed 12).
    static func bars(_ svg: String) throws -> [(height: Double, fill: String)] {
        let pattern = try NSRegularExpression(pattern: #"<rect x="[^"]+" y="[^"]+" width="[^"]+" height="([0-9.]+)" (fill="[^"]+"[^/]*)/>"#)
        let range = NSRange(svg.startIndex..., in: svg)
        return pattern.matches(in: svg, range: range).compactMap { match in
            guard let h = Range(match.range(at: 1), in: svg), let f = Range(match.range(at: 2), in: svg) else { return nil }
            return (Double(svg[h]) ?? -1, String(svg[f]))
        }.filter { $0.height != 12 }
    }

    @Test func barsAreInProportionAndHollowWhereALimitStoppedThem() throws {
        let chart = BarChart(title: "Voices <sustained> & more", subtitle: "test", axis: "voices", bars: [
            .init(group: "fast", series: "queue", value: 800), .init(group: "fast", series: "OpenAL Soft", value: 400),
            .init(group: "high", series: "queue", value: 200), .init(group: "high", series: "OpenAL Soft", value: 256, atLeast: true),
        ])
        let svg = chart.svg
        #expect(svg.hasPrefix("<svg") && svg.hasSuffix("</svg>\n"))
        #expect(svg.contains("Voices &lt;sustained&gt; &amp; more"))
        let bars = try Self.bars(svg)
        try #require(bars.count == 4, "\(bars)")
        #expect(abs(bars[0].height / bars[1].height - 2) < 0.01, "800 against 400")
        #expect(abs(bars[2].height / bars[0].height - 0.25) < 0.01, "200 against 800")
        #expect(bars[0].fill == bars[2].fill, "one colour per series")
        #expect(bars[0].fill != bars[1].fill)
        #expect(bars[3].fill.hasPrefix("fill=\"white\""), "hollow: stopped at the limit")
        #expect(svg.contains("≥256"))
    }

    @Test func theAxisEndsAtARoundNumberAboveTheLargestBar() {
        #expect(BarChart.niceCeiling(880) == 1_000)
        #expect(BarChart.niceCeiling(1_100) == 2_000)
        #expect(BarChart.niceCeiling(0.33) == 0.5)
        #expect(BarChart.niceCeiling(5) == 5)
    }
}
