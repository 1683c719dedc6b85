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
    }

    private static func seconds(_ value: Double) -> String { String(format: "%.4f", value) }
}
