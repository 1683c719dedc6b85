import Foundation

/// Workload 5: peak resident memory of exporting and importing stores of different sizes, each in
/// a child process of its own. Memory must stay under 100 MiB and must not grow with the bundle:
/// the largest size within 1.2× of the smallest.
struct MemoryWorkload {
    var sizes: [Int]

    func run(in scratch: URL) throws -> [Report.Figure] {
        let megabyte = 1024.0 * 1024.0
        var figures: [Report.Figure] = []
        var peaks: [(export: Double, import: Double)] = []
        for changes in sizes.sorted() {
            let directory = scratch.appendingPathComponent("\(changes)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let result = try BundleWorkload.run(changes: changes, in: directory)
            try? FileManager.default.removeItem(at: directory)
            let peak = (
                export: Double(result.export.peakBytes) / megabyte, import: Double(result.import.peakBytes) / megabyte
            )
            peaks.append(peak)
            figures += [
                .init(metric: "memory.export.peak.\(changes)", value: peak.export, unit: "MiB", goal: .atMost(100)),
                .init(metric: "memory.import.peak.\(changes)", value: peak.import, unit: "MiB", goal: .atMost(100)),
                .init(
                    metric: "memory.export.throughput.\(changes)", value: Double(changes) / result.export.seconds,
                    unit: "changes/s", goal: nil),
                .init(
                    metric: "memory.import.throughput.\(changes)", value: Double(changes) / result.import.seconds,
                    unit: "changes/s", goal: nil),
                .init(
                    metric: "memory.bytes_per_change.\(changes)", value: result.bytesPerChange, unit: "bytes", goal: nil
                ),
            ]
        }
        if peaks.count > 1, let first = peaks.first, let last = peaks.last {
            let exportGrowth = (last.export) / (first.export)
            let importGrowth = (last.import) / (first.import)
            figures += [
                .init(metric: "memory.export.growth", value: exportGrowth, unit: "×", goal: .atMost(1.2)),
                .init(metric: "memory.import.growth", value: importGrowth, unit: "×", goal: .atMost(1.2)),
            ]
        }
        return figures
    }
}
