import Testing

@testable import Tidemark

/// What a tracked table's registration says of the table.
@Suite struct TrackedTableTests {
    /// A change of a tracked table that cannot be adopted is said by what it gained and lost, at
    /// most ten names of each: a wide table's whole column lists made a message of 25 KB.
    @Test func aChangedShapeIsSaidByWhatChanged() {
        let old = ["id"] + (1...1_963).map { "c\($0)" }
        #expect(
            TrackedTable.difference(from: old, to: old + ["added"])
                == "it had 1964 columns and has 1965; gained 'added'")
        let dropped = TrackedTable.difference(from: old, to: ["id"])
        #expect(dropped.hasPrefix("it had 1964 columns and has 1; lost 'c1', 'c2'"))
        #expect(dropped.hasSuffix("'c10' and 1953 more") && dropped.count < 200, "\(dropped)")
        #expect(
            TrackedTable.difference(from: ["id", "a", "b"], to: ["id", "b", "a"])
                == "its columns were reordered, now (id, b, a)")
    }
}
