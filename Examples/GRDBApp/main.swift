// The README's "Using Tidemark in a GRDB app", as a program: an app with its own DatabasePool and
// migrations attaches a Tidemark store, names the author of its writes, and sees a peer's rows
// arrive through its own ValueObservation after a pull; then a later release adds a column through
// the same migrator, and the peer gets a write to it. Exits 1 if either does not happen.
import Foundation
import GRDB
import Tidemark

let directory = CommandLine.arguments.dropFirst().first
    ?? NSTemporaryDirectory() + "tidemark-grdb-example-" + UUID().uuidString
try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
let folder = directory + "/exchange"  // any shared folder: a network share, a cloud drive
try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)

// MARK: The app's own database, migrations and record type

struct Note: Codable, FetchableRecord, PersistableRecord {
    var id: String
    var title: String
}

var config = Configuration()
config.busyMode = .timeout(5)  // wait while a `sync` command writes the same file
let dbPool = try DatabasePool(path: directory + "/notes.sqlite", configuration: config)
var migrator = DatabaseMigrator()
migrator.registerMigration("v1") { db in
    try db.create(table: "note") { t in
        t.primaryKey("id", .text)  // a key the app chooses (a UUID): the row's identity everywhere
        t.column("title", .text).notNull()
    }
}
try migrator.migrate(dbPool)

// MARK: Tidemark on that database

// Starts tracking the app's tables (once; later launches find it initialized and change nothing).
// The replica's signing key is created beside the database, as notes.sqlite.key.
let store = try Store.initialize(in: dbPool, setup: Store.Setup(replicaName: "phone")).store

// Writes through the app's own writer are captured; name their author like Core Data's
// transactionAuthor, per transaction or as a default.
try dbPool.write { db in
    try store.setTransactionAuthor("ana", contextName: "editor", in: db)
    try Note(id: UUID().uuidString, title: "Groceries").insert(db)
}
let written = try store.fetchHistory().last!
print("history: \(written.changes.count) change by \(written.author ?? "?") in \(written.contextName ?? "?")")

// A UI observes the app's database the GRDB way.
let titles = Mutex<[[String]]>([])
let observation = ValueObservation.tracking { db in try Note.order(Column("title")).fetchAll(db).map(\.title) }
let cancellable = observation.start(
    in: dbPool, scheduling: .async(onQueue: DispatchQueue(label: "ui")),  // an app would use the main queue
    onError: { print("observation failed: \($0)") },
    onChange: { value in titles.withLock { $0.append(value) } })

// MARK: A peer (here another store on this machine; usually another device)

let laptop = try Store.initialize(
    directory + "/laptop.db",
    setup: Store.Setup(replicaName: "laptop", schema: ("schema.sql", "CREATE TABLE note(id TEXT PRIMARY KEY, title TEXT NOT NULL);"))
).store
let laptopKey = try KeyFile.load(directory + "/laptop.db.key")
let phoneKey = try KeyFile.load(directory + "/notes.sqlite.key")
try store.addPeer(name: "laptop", publicKeyBase64: Data(laptop.publicKey).base64EncodedString())
try laptop.addPeer(name: "phone", publicKeyBase64: Data(store.publicKey).base64EncodedString())

_ = try laptop.execute(sql: "INSERT INTO note(id, title) VALUES ('\(UUID().uuidString)', 'Ideas')", author: "bo")
_ = try laptop.push(to: folder, key: laptopKey)

// MARK: Sync, and see it in the UI

let pulled = try store.pull(from: folder, key: phoneKey)
print("pulled \(pulled.imported.count) bundle(s); changed tables: \(pulled.changedTables.sorted().joined(separator: ", "))")

var seen = false
for _ in 0..<500 where !seen {  // at most 5 s
    seen = titles.withLock { $0.contains(["Groceries", "Ideas"]) }
    if !seen { Thread.sleep(forTimeInterval: 0.01) }
}
cancellable.cancel()
print("observed: \(titles.withLock { $0.last ?? [] })")
guard seen else {
    print("error: the app's observation did not see the pulled row")
    exit(1)
}

// MARK: A later release changes the schema in the same migrator

// Run through the store, the app's migration and Tidemark's tracking commit together. The laptop
// makes the same change by SQL (`sync migrate`), so both are on the same schema version.
migrator.registerMigration("v2") { db in
    try store.migrate(
        Store.Migration { db in
            try db.alter(table: "note") { t in t.add(column: "pinned", .boolean).notNull().defaults(to: false) }
        }, in: db)
}
try migrator.migrate(dbPool)
try laptop.migrate(Store.Migration(sql: "ALTER TABLE note ADD COLUMN pinned BOOLEAN NOT NULL DEFAULT 0"))
print("schema: \(try store.status().lineage.last.map { "\($0)" } ?? "initial")")
try dbPool.write { db in try db.execute(sql: "UPDATE note SET pinned = 1 WHERE title = 'Groceries'") }
_ = try store.push(to: folder, key: phoneKey)
_ = try laptop.pull(from: folder, key: laptopKey)
let pinned = try laptop.execute(sql: "SELECT title FROM note WHERE pinned = 1").0.first?.rows ?? []
print("pinned on the laptop: \(pinned.count) note(s)")
guard try laptop.status().lineage == store.status().lineage, pinned.count == 1 else {
    print("error: the laptop did not get the pinned note under the new schema")
    exit(1)
}
print("ok")

/// A value behind a lock, for the observation's callbacks.
final class Mutex<Value>: @unchecked Sendable {  // @unchecked: `value` is only touched under `lock`.
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<T>(_ body: (inout Value) -> T) -> T { lock.withLock { body(&value) } }
}
