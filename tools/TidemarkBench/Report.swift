import Foundation

/// The results: one row per compared metric and one line per standalone figure, printed as tables
/// or as JSON lines.
struct Report {
    /// Which way a ratio must lie to meet its goal.
    enum Goal {
        /// Ours over the baseline at most this (times, sizes, memory).
        case atMost(Double)
        /// Ours over the baseline at least this (throughputs).
        case atLeast(Double)

        var value: Double {
            switch self {
            case .atMost(let value), .atLeast(let value): value
            }
        }

        func isMet(by ratio: Double) -> Bool {
            switch self {
            case .atMost(let limit): ratio <= limit
            case .atLeast(let limit): ratio >= limit
            }
        }

        var symbol: String {
            switch self {
            case .atMost: "≤"
            case .atLeast: "≥"
            }
        }
    }

    /// One metric: the same work measured for Tidemark and for a baseline in the same run.
    struct Row {
        var metric: String
        /// Tidemark's samples.
        var ours: Measurement
        /// The baseline's samples.
        var baseline: Measurement
        /// What the baseline is, e.g. `untracked` or `session`.
        var baselineName: String
        /// The samples' unit, e.g. `s` or `changes/s`.
        var unit: String
        /// Nil for a reference row that explains another (it is not Tidemark's own goal).
        var goal: Goal?

        /// Our median over the baseline's median.
        var ratio: Double { ours.median / baseline.median }
        var met: Bool? { goal.map { $0.isMet(by: ratio) } }
    }

    var rows: [Row] = []

    /// A single measured figure (a size, a peak memory, a count), with an optional goal on the value.
    struct Figure {
        var metric: String
        var value: Double
        var unit: String
        var goal: Goal?
        var met: Bool? { goal.map { $0.isMet(by: value) } }
    }

    var figures: [Figure] = []

    /// Rows and figures as aligned tables.
    func text() -> String {
        table() + figureTable()
    }

    /// A fixed-width table of the rows.
    func table() -> String {
        guard !rows.isEmpty else { return "" }
        let header = [
            "metric", "unit", "ours med", "min", "max", "baseline", "med", "min", "max", "ratio", "goal", "met",
        ]
        let cells = rows.map { row in
            [row.metric, row.unit] + [row.ours.median, row.ours.min, row.ours.max].map(Self.format) + [row.baselineName]
                + [row.baseline.median, row.baseline.min, row.baseline.max].map(Self.format)
                + [
                    String(format: row.ratio < 0.1 ? "%.3f" : "%.2f", row.ratio),
                    row.goal.map { "\($0.symbol) " + String(format: "%.2f", $0.value) } ?? "—",
                    row.met.map { $0 ? "yes" : "NO" } ?? "—",
                ]
        }
        let widths = header.indices.map { column in ([header] + cells).map { $0[column].count }.max()! }
        func line(_ values: [String]) -> String {
            values.enumerated().map { column, value in
                let pad = String(repeating: " ", count: widths[column] - value.count)
                return column <= 1 || column == 5 ? value + pad : pad + value
            }.joined(separator: "  ")
        }
        let judged = rows.filter { $0.goal != nil }
        let met = judged.filter { $0.met == true }.count
        return
            ([line(header)] + cells.map(line) + [
                "\(met) of \(judged.count) compared metrics met their goal (ratio = ours / baseline; rows without a goal are references)"
            ])
            .joined(separator: "\n") + "\n"
    }

    /// The figures as aligned lines.
    func figureTable() -> String {
        guard !figures.isEmpty else { return "" }
        let width = figures.map(\.metric.count).max()!
        return figures.map { f in
            let pad = String(repeating: " ", count: width - f.metric.count)
            var line = "\(f.metric)\(pad)  \(Self.format(f.value)) \(f.unit)"
            if let goal = f.goal {
                line += "  (goal \(goal.symbol) \(Self.format(goal.value)): \(f.met! ? "met" : "NOT met"))"
            }
            return line
        }.joined(separator: "\n") + "\n"
    }

    /// One JSON object per metric and line, keys in a fixed order:
    /// `metric, value, unit, baseline, baseline_value, ratio, goal, met`.
    func jsonLines() throws -> String {
        let encoder = JSONEncoder()
        func json(_ value: some Encodable) throws -> String {
            String(decoding: try encoder.encode(value), as: UTF8.self)
        }
        func object(_ fields: [(String, String)]) -> String {
            "{" + fields.map { "\"\($0)\":\($1)" }.joined(separator: ",") + "}\n"
        }
        let rowLines = try rows.map { row in
            object([
                ("metric", try json(row.metric)), ("value", try json(row.ours.median)), ("unit", try json(row.unit)),
                ("baseline", try json(row.baselineName)), ("baseline_value", try json(row.baseline.median)),
                ("ratio", try json(row.ratio)), ("goal", try row.goal.map { try json($0.value) } ?? "null"),
                ("met", try row.met.map { try json($0) } ?? "null"),
            ])
        }
        let figureLines = try figures.map { f in
            object([
                ("metric", try json(f.metric)), ("value", try json(f.value)), ("unit", try json(f.unit)),
                ("baseline", "null"), ("baseline_value", "null"), ("ratio", "null"),
                ("goal", try f.goal.map { try json($0.value) } ?? "null"),
                ("met", try f.met.map { try json($0) } ?? "null"),
            ])
        }
        return (rowLines + figureLines).joined()
    }

    private static func format(_ value: Double) -> String {
        value >= 1000
            ? String(format: "%.0f", value) : value >= 1 ? String(format: "%.3f", value) : String(format: "%.4f", value)
    }
}
