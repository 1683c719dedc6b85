/// The timings of one metric on one side, in seconds.
struct Measurement {
    /// One sample per measured repetition, in run order.
    var samples: [Double]

    init(samples: [Double]) {
        precondition(!samples.isEmpty, "a measurement needs at least one sample")
        self.samples = samples
    }

    var median: Double {
        let sorted = samples.sorted()
        let middle = sorted.count / 2
        return sorted.count.isMultiple(of: 2) ? (sorted[middle - 1] + sorted[middle]) / 2 : sorted[middle]
    }

    var min: Double { samples.min()! }
    var max: Double { samples.max()! }
}

extension Duration {
    /// The duration in seconds, to the nanosecond.
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds / 1_000_000_000) / 1e9
    }
}
