import Foundation
import GRDB
import Tidemark

/// Workloads 2–4: the same changes exported as a signed bundle and collected as a session
/// changeset, then imported into a replica holding the base state and applied with
/// `sqlite3changeset_apply` to a plain copy of the base state. Both sides run in this process,
/// alternating every repetition; each repetition starts from fresh copies of the prepared files.
/// Each repetition also measures the physical limits: the same changes written by three set-based
/// SQL statements into a copy of the base state, and the bundle's bytes copied.
struct ChangesetWorkload {
    var mix: ChangeMix
    var repetitions: Int
    var warmUps = 1

    /// Our samples and the session's, per metric.
    struct Samples {
        var exportOurs: [Double] = [], exportSession: [Double] = []
        var importOurs: [Double] = [], importSession: [Double] = []
        /// The physical limits: the same changes written by set-based SQL, and the bundle file copied.
        var sqlWrites: [Double] = [], fileCopy: [Double] = []
        var bundleBytes = 0, changesetBytes = 0, compressedChangesetBytes = 0
    }

    /// Long by design: one measurement loop, ours and the baseline alternating, read top to bottom.
    func run(in scratch: URL) throws -> [Report.Row] {
        let path = { (name: String) in scratch.appendingPathComponent(name).path }
        let prepared = try prepare(scratch: scratch)
        let plain = try PlainDatabase.open(path("plain-source.sqlite"))
        let recorder = try plain.writeWithoutTransaction { db in try SessionRecorder(db: db, table: "items") }
        try mix.writeChanges { body in try PlainDatabase.transaction(plain, body) }
        let key = try KeyFile.load(KeyFile.defaultPath(forStore: path("source.sqlite")))
        var samples = Samples()
        let changes = Double(mix.changes)
        for round in 0..<(warmUps + repetitions) {
            let measured = round >= warmUps
            Output.progress(
                "bundle vs changeset: " + (measured ? "repetition \(round - warmUps + 1)/\(repetitions)" : "warm-up"))

            // Export: a cold copy of the source store (its local changes not yet folded).
            try PlainDatabase.copy(path("source.sqlite"), to: path("rep-source.sqlite"))
            let exported = try {
                let store = try Store.open(path("rep-source.sqlite"))
                return try timed { try store.exportBundle(since: prepared.baseToken, to: path("ours.tmb"), key: key) }
            }()
            try expect("bundle changes", exported.value.changeCount, mix.changes)
            let session = try timed {
                let changeset = try recorder.changeset()
                try PhysicalLimits.writeSynced(changeset, to: path("session.changeset"))
                return changeset
            }

            // Import: fresh copies of the base state on both sides.
            try PlainDatabase.copy(path("receiver.sqlite"), to: path("rep-receiver.sqlite"))
            let (imported, ourFingerprint) = try {
                let store = try Store.open(path("rep-receiver.sqlite"))
                let result = try timed { try store.importBundle(at: path("ours.tmb")) }
                return (result, try store.write { db in try ChangeMix.fingerprint(db) }.0)
            }()
            try expect("imported changes", imported.value.appliedChanges, mix.changes)
            let changeset = try Data(contentsOf: URL(fileURLWithPath: path("session.changeset")))
            let applied = try PlainDatabase.timedTransaction(
                base: path("plain-base.sqlite"), target: path("rep-plain.sqlite"),
                { db in try SessionRecorder.apply(changeset, to: db) }, check: ChangeMix.fingerprint)
            let sessionFingerprint = applied.checked
            guard ourFingerprint == sessionFingerprint, Int(ourFingerprint[0]) == mix.finalRowCount else {
                throw BenchError.baselineMismatch(
                    what: "imported table", ours: ourFingerprint, baseline: sessionFingerprint)
            }
            let written = try PlainDatabase.timedTransaction(
                base: path("plain-base.sqlite"), target: path("rep-writes.sqlite"),
                mix.writeChangesInSQL, check: ChangeMix.fingerprint)
            guard written.checked == sessionFingerprint else {
                throw BenchError.baselineMismatch(
                    what: "table written by set-based SQL", ours: written.checked, baseline: sessionFingerprint)
            }
            let copied = try PhysicalLimits.copySeconds(path("ours.tmb"), to: path("copy.tmb"))
            guard measured else { continue }
            samples.exportOurs.append(changes / exported.seconds)
            samples.exportSession.append(changes / session.seconds)
            samples.importOurs.append(changes / imported.seconds)
            samples.importSession.append(changes / applied.seconds)
            samples.sqlWrites.append(changes / written.seconds)
            samples.fileCopy.append(changes / copied)
            samples.bundleBytes = exported.value.bytes
            samples.changesetBytes = session.value.count
            samples.compressedChangesetBytes = ChunkedDeflate.compressedSize(of: [UInt8](session.value))
        }
        let perChange = { (bytes: Int) in Measurement(samples: [Double(bytes) / changes]) }
        return [
            Report.Row(
                metric: "export.throughput", ours: Measurement(samples: samples.exportOurs),
                baseline: Measurement(samples: samples.exportSession), baselineName: "session changeset",
                unit: "changes/s",
                goal: .atLeast(1.0)),
            Report.Row(
                metric: "import.throughput", ours: Measurement(samples: samples.importOurs),
                baseline: Measurement(samples: samples.importSession), baselineName: "changeset_apply",
                unit: "changes/s",
                goal: .atLeast(0.8)),
            Report.Row(
                metric: "bundle.bytes_per_change", ours: perChange(samples.bundleBytes),
                baseline: perChange(samples.compressedChangesetBytes),
                baselineName: "changeset, deflated", unit: "bytes", goal: .atMost(1.0)),
            Report.Row(
                metric: "bundle.bytes_per_change.raw", ours: perChange(samples.bundleBytes),
                baseline: perChange(samples.changesetBytes),
                baselineName: "changeset", unit: "bytes", goal: .atMost(1.0)),
        ] + limitRows(samples)
    }

    /// References, not goals: how far each side is from SQLite writing the same rows by itself,
    /// and from copying the bundle's bytes.
    private func limitRows(_ samples: Samples) -> [Report.Row] {
        let written = Measurement(samples: samples.sqlWrites)
        let copied = Measurement(samples: samples.fileCopy)
        return [
            Report.Row(
                metric: "import.limit.sql_writes", ours: Measurement(samples: samples.importOurs), baseline: written,
                baselineName: "set-based SQL writes", unit: "changes/s", goal: nil),
            Report.Row(
                metric: "changeset_apply.limit.sql_writes", ours: Measurement(samples: samples.importSession),
                baseline: written, baselineName: "set-based SQL writes", unit: "changes/s", goal: nil),
            Report.Row(
                metric: "export.limit.file_copy", ours: Measurement(samples: samples.exportOurs), baseline: copied,
                baselineName: "copy of the bundle", unit: "changes/s", goal: nil),
            Report.Row(
                metric: "import.limit.file_copy", ours: Measurement(samples: samples.importOurs), baseline: copied,
                baselineName: "copy of the bundle", unit: "changes/s", goal: nil),
        ]
    }

    /// What `prepare` leaves: `plain-base.sqlite` and `plain-source.sqlite` (the base rows),
    /// `receiver.sqlite` (a replica that imported the base), `source.sqlite` (base plus changes,
    /// not yet exported), and the source's token after the base.
    struct Prepared {
        var baseToken: History.Token
    }

    private func prepare(scratch: URL) throws -> Prepared {
        let path = { (name: String) in scratch.appendingPathComponent(name).path }
        Output.progress("bundle vs changeset: writing \(mix.base) base rows and \(mix.changes) changes")
        try {
            let plain = try PlainDatabase.open(path("plain-base.sqlite"), create: true)
            try mix.writeBase { body in try PlainDatabase.transaction(plain, body) }
        }()
        try PlainDatabase.copy(path("plain-base.sqlite"), to: path("plain-source.sqlite"))
        let setup = { (name: String) in Store.Setup(replicaName: name, schema: ("bench", Fixtures.schema)) }
        return try {
            let (source, _) = try Store.initialize(path("source.sqlite"), setup: setup("source"))
            let key = try KeyFile.load(KeyFile.defaultPath(forStore: path("source.sqlite")))
            try mix.writeBase { body in _ = try source.write(body) }
            _ = try source.exportBundle(since: .zero, to: path("base.tmb"), key: key)
            let baseToken = try source.currentToken()
            try {
                let (receiver, _) = try Store.initialize(path("receiver.sqlite"), setup: setup("receiver"))
                try receiver.addPeer(name: "source", publicKeyBase64: Data(source.publicKey).base64EncodedString())
                _ = try receiver.importBundle(at: path("base.tmb"))
            }()
            try mix.writeChanges { body in _ = try source.write(body) }
            return Prepared(baseToken: baseToken)
        }()
    }

    private func expect(_ what: String, _ found: Int, _ expected: Int) throws {
        guard found == expected else {
            throw BenchError.unexpectedState(
                metric: "bundle", side: .tracked, what: what, expected: Int64(expected), found: Int64(found))
        }
    }
}

/// Times `body` on the continuous clock.
func timed<T>(_ body: () throws -> T) rethrows -> (value: T, seconds: Double) {
    let start = ContinuousClock.now
    let value = try body()
    return (value, (ContinuousClock.now - start).seconds)
}
