import Foundation

/// The results: one row per metric, printed as a table or as JSON lines.
struct Report {
    /// One metric: the same work timed on both sides.
    struct Row {
        var metric: String
        var tracked: Measurement
        var untracked: Measurement
        /// The largest `ratio` that meets the goal.
        var goal: Double

        /// Tracked median over untracked median.
        var ratio: Double { tracked.median / untracked.median }
        var met: Bool { ratio <= goal }
    }

    var rows: [Row] = []

    /// A single measured figure without a same-run baseline (sizes, memory), with an optional
    /// upper-bound goal.
    struct Figure {
        var metric: String
        var value: Double
        var unit: String
        var goal: Double?
        var met: Bool? { goal.map { value <= $0 } }
    }

    var figures: [Figure] = []

    /// The figures as aligned lines.
    func figureTable() -> String {
        guard !figures.isEmpty else { return "" }
        let width = figures.map(\.metric.count).max()!
        return figures.map { f in
            let pad = String(repeating: " ", count: width - f.metric.count)
            var line = "\(f.metric)\(pad)  \(Self.format(f.value)) \(f.unit)"
            if let goal = f.goal { line += "  (goal ≤ \(Self.format(goal)) \(f.unit): \(f.met! ? "met" : "NOT met"))" }
            return line
        }.joined(separator: "\n") + "\n"
    }

    private static func format(_ value: Double) -> String {
        value >= 1000 ? String(format: "%.0f", value) : String(format: "%.3f", value)
    }

    /// A fixed-width table, times in seconds.
    func table() -> String {
        let header = ["metric", "tracked med", "min", "max", "untracked med", "min", "max", "ratio", "goal", "met"]
        let cells = rows.map { row in
            [row.metric] + [row.tracked, row.untracked].flatMap { m in [m.median, m.min, m.max].map(Self.seconds) }
                + [String(format: "%.2f", row.ratio), String(format: "%.2f", row.goal), row.met ? "yes" : "NO"]
        }
        let widths = header.indices.map { column in ([header] + cells).map { $0[column].count }.max()! }
        func line(_ values: [String]) -> String {
            values.enumerated().map { column, value in
                let pad = String(repeating: " ", count: widths[column] - value.count)
                return column == 0 ? value + pad : pad + value
            }.joined(separator: "  ")
        }
        let met = rows.filter(\.met).count
        return ([line(header)] + cells.map(line) + ["times in seconds; \(met) of \(rows.count) metrics met their goal"])
            .joined(separator: "\n") + "\n"
    }

    /// One JSON object per metric and line, keys in a fixed order.
    func jsonLines() throws -> String {
        let encoder = JSONEncoder()
        func json(_ value: some Encodable) throws -> String { String(decoding: try encoder.encode(value), as: UTF8.self) }
        return try rows.map { row in
            let fields: [(String, String)] = [
                ("metric", try json(row.metric)), ("value", try json(row.tracked.median)), ("unit", try json("s")),
                ("baseline", try json("untracked")), ("baseline_value", try json(row.untracked.median)),
                ("ratio", try json(row.ratio)), ("goal", try json(row.goal)), ("met", try json(row.met)),
            ]
            return "{" + fields.map { "\"\($0)\":\($1)" }.joined(separator: ",") + "}\n"
        }.joined()
            + (try figures.map { f in
                let fields: [(String, String)] = [
                    ("metric", try json(f.metric)), ("value", try json(f.value)), ("unit", try json(f.unit)),
                    ("baseline", "null"), ("baseline_value", "null"), ("ratio", "null"),
                    ("goal", f.goal.map { try! json($0) } ?? "null"), ("met", f.met.map { try! json($0) } ?? "null"),
                ]
                return "{" + fields.map { "\"\($0)\":\($1)" }.joined(separator: ",") + "}\n"
            }.joined())
    }

    private static func seconds(_ value: Double) -> String { String(format: "%.4f", value) }
}
