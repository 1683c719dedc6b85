import TidemarkCore

/// Random write transactions on a schema with every kind of constraint merged state can break
/// (Protocol/merge.md §5): a non-key UNIQUE column, CHECK constraints (one of them across two
/// columns, so that merging two valid column writes can break it) and a FOREIGN KEY.
///
/// Every statement is valid on the replica that runs it, whatever its rows — `OR IGNORE`, `WHERE`
/// guards and explicit child deletes; `OR REPLACE`, which deletes the rows in its way, where no
/// post refers to them — so it runs unchanged through the library (foreign keys on)
/// and through the `sqlite3` shell (foreign keys off). The key space is small on purpose: same-row
/// collisions, delete against update, re-inserts and unique clashes are frequent.
public struct RandomWorkload: Sendable {
    /// The schema every replica is created with.
    public static let schema = """
        CREATE TABLE users(
            id TEXT PRIMARY KEY,
            email TEXT UNIQUE,
            name TEXT,
            score INTEGER CHECK (score >= 0),
            CHECK (name IS NOT 'vip' OR score >= 3)
        );
        CREATE TABLE posts(id TEXT PRIMARY KEY, user TEXT REFERENCES users(id), body TEXT);
        """

    /// The tracked tables, for the reference model.
    public static let tables = [
        ReferenceModel.Table(name: "posts", columns: ["id", "user", "body"], keyColumns: ["id"]),
        ReferenceModel.Table(name: "users", columns: ["id", "email", "name", "score"], keyColumns: ["id"]),
    ]

    /// The schema's later versions, in order: each replica makes them at moments of its own
    /// (Protocol/schema.md). The first renames a column and adds one; the second renames a table
    /// and adds a column.
    public static let migrations = [
        "ALTER TABLE users RENAME COLUMN name TO nick; ALTER TABLE posts ADD COLUMN mood TEXT DEFAULT 'calm';",
        "ALTER TABLE posts RENAME TO notes; ALTER TABLE users ADD COLUMN level INTEGER NOT NULL DEFAULT 0;",
    ]

    /// The tracked tables after every migration, for the reference model.
    public static let migratedTables = [
        ReferenceModel.Table(name: "notes", columns: ["id", "user", "body", "mood"], keyColumns: ["id"]),
        ReferenceModel.Table(name: "users", columns: ["id", "email", "nick", "score", "level"], keyColumns: ["id"]),
    ]

    /// What the migrations rename, for the reference model.
    public static let renames = [
        ReferenceModel.Rename(position: 1, table: "users", columns: ["name": "nick"]),
        ReferenceModel.Rename(position: 2, table: "posts", newTable: "notes"),
    ]

    /// The defaults of the columns the migrations add: what a row reads there when no write of its
    /// life set it.
    public static let addedDefaults: [String: [String: SQLValue]] = [
        "notes": ["mood": .text("calm")], "users": ["level": .integer(0)],
    ]

    /// `statements` as a replica that made the first `level` migrations writes them.
    public static func adapt(_ statements: [String], level: Int) -> [String] {
        guard level > 0 else { return statements }
        return statements.map { statement in
            // Outside string literals only: values never change.
            statement.split(separator: "'", omittingEmptySubsequences: false).enumerated().map { index, part in
                guard index % 2 == 0 else { return String(part) }
                var text = String(part)
                text = text.replacingWord("name", with: "nick")
                if level > 1 { text = text.replacingWord("posts", with: "notes") }
                return text
            }.joined(separator: "'")
        }
    }

    /// A write to the column the first migration adds, as a replica at `level` (at least 1) writes it.
    public mutating func moodUpdate<G: RandomNumberGenerator>(level: Int, using rng: inout G) -> String {
        counter += 1
        return
            "UPDATE \(level > 1 ? "notes" : "posts") SET mood = 'm\(tag)-\(counter)' WHERE id = 'p\(Int.random(in: 0..<space.posts, using: &rng))'"
    }

    /// Sizes of the key and value spaces.
    public struct Space: Sendable {
        public var users: Int
        public var posts: Int
        public var emails: Int
        public init(users: Int, posts: Int, emails: Int) {
            self.users = users
            self.posts = posts
            self.emails = emails
        }
        /// Tiny: collisions on nearly every write.
        public static let tiny = Space(users: 6, posts: 8, emails: 8)
    }

    /// The spaces drawn from.
    public let space: Space
    /// Distinguishes this workload's values from another's (a replica name, say).
    public let tag: String
    /// Counts writes, so that every written name and body is distinct and a lost one is noticed.
    private var counter = 0

    /// A workload over `space`; `tag` goes into every generated text value.
    public init(space: Space = .tiny, tag: String = "") {
        self.space = space
        self.tag = tag
    }

    /// One transaction: one to `maxOperations` operations (mostly one), as SQL statements.
    public mutating func transaction<G: RandomNumberGenerator>(using rng: inout G, maxOperations: Int = 3) -> [String] {
        let count =
            maxOperations <= 1
            ? 1 : (Int.random(in: 0..<4, using: &rng) == 0 ? Int.random(in: 2...maxOperations, using: &rng) : 1)
        return (0..<count).flatMap { _ in statement(using: &rng) }
    }

    /// One logical operation, as one or more statements.
    public mutating func statement<G: RandomNumberGenerator>(using rng: inout G) -> [String] {
        counter += 1
        let user = self.user(&rng)
        let post = "'p\(Int.random(in: 0..<space.posts, using: &rng))'"
        switch Int.random(in: 0..<100, using: &rng) {
        case 0..<20:
            return [
                "INSERT OR IGNORE INTO users(id, email, name, score) VALUES (\(user), \(email(&rng)), \(name(&rng)), \(score(&rng)))"
            ]
        case 20..<22:
            // Replaces the row with this key and the one with this email (its delete is captured
            // though SQLite fires no trigger for it), unless a post refers to one of them or the
            // values break a CHECK.
            let (email, name, score) = (email(&rng), name(&rng), score(&rng))
            return [
                "INSERT OR REPLACE INTO users(id, email, name, score) SELECT \(user), \(email), \(name), \(score) "
                    + "WHERE (\(name) IS NOT 'vip' OR \(score) >= 3) AND NOT EXISTS (SELECT 1 FROM posts WHERE user IN "
                    + "(SELECT id FROM users WHERE id = \(user) OR email = \(email)))"
            ]
        case 22..<29:
            return ["UPDATE OR IGNORE users SET email = \(email(&rng)) WHERE id = \(user)"]
        case 29..<31:
            // Takes the email from the user holding it, who goes, unless a post refers to them.
            let email = email(&rng)
            return [
                "UPDATE OR REPLACE users SET email = \(email) WHERE id = \(user) AND NOT EXISTS "
                    + "(SELECT 1 FROM posts WHERE user IN (SELECT id FROM users WHERE email = \(email) AND id <> \(user)))"
            ]
        case 31..<40:
            return ["UPDATE OR IGNORE users SET name = \(name(&rng)) WHERE id = \(user)"]
        case 40..<47:
            return ["UPDATE OR IGNORE users SET score = \(score(&rng)) WHERE id = \(user)"]
        case 47..<50:
            return [
                "UPDATE OR IGNORE users SET name = \(name(&rng)), score = \(score(&rng)), email = \(email(&rng)) WHERE id = \(user)"
            ]
        case 50..<51:
            // Insert if missing, then bump: one transaction writing one column twice.
            return [
                "INSERT OR IGNORE INTO users(id, email, name, score) VALUES (\(user), \(email(&rng)), \(name(&rng)), \(score(&rng)))",
                "UPDATE OR IGNORE users SET score = score + 1 WHERE id = \(user)",
            ]
        case 51..<56:
            // An application-level cascade: the posts go with their user.
            return ["DELETE FROM posts WHERE user = \(user)", "DELETE FROM users WHERE id = \(user)"]
        case 56..<59:
            return ["DELETE FROM users WHERE id = \(user) AND NOT EXISTS (SELECT 1 FROM posts WHERE user = \(user))"]
        case 59..<63:
            // Delete and insert again at once: a new life in one transaction.
            return [
                "DELETE FROM posts WHERE user = \(user)", "DELETE FROM users WHERE id = \(user)",
                "INSERT OR IGNORE INTO users(id, email, name, score) VALUES (\(user), \(email(&rng)), \(name(&rng)), \(score(&rng)))",
            ]
        case 63..<79:
            let owner = Int.random(in: 0..<8, using: &rng) == 0 ? "NULL" : user
            return [
                "INSERT OR IGNORE INTO posts(id, user, body) SELECT \(post), \(owner), \(body()) "
                    + (owner == "NULL" ? "" : "WHERE EXISTS (SELECT 1 FROM users WHERE id = \(owner))")
            ]
        case 79..<87:
            return ["UPDATE posts SET body = \(body()) WHERE id = \(post)"]
        case 87..<91:
            return [
                "UPDATE posts SET user = \(user) WHERE id = \(post) AND EXISTS (SELECT 1 FROM users WHERE id = \(user))"
            ]
        case 91..<96:
            return ["DELETE FROM posts WHERE id = \(post)"]
        default:
            // A key change: captured as the old row's delete and the new row's insert.
            let other = "'p\(Int.random(in: 0..<space.posts, using: &rng))'"
            return ["UPDATE OR IGNORE posts SET id = \(other) WHERE id = \(post)"]
        }
    }

    private func user<G: RandomNumberGenerator>(_ rng: inout G) -> String {
        "'u\(Int.random(in: 0..<space.users, using: &rng))'"
    }

    private func email<G: RandomNumberGenerator>(_ rng: inout G) -> String {
        Int.random(in: 0..<6, using: &rng) == 0 ? "NULL" : "'e\(Int.random(in: 0..<space.emails, using: &rng))@x'"
    }

    private func name<G: RandomNumberGenerator>(_ rng: inout G) -> String {
        Int.random(in: 0..<4, using: &rng) == 0 ? "'vip'" : "'n\(tag)-\(counter)'"
    }

    private func score<G: RandomNumberGenerator>(_ rng: inout G) -> Int { Int.random(in: 0...6, using: &rng) }

    private func body() -> String { "'b\(tag)-\(counter)'" }
}

/// The constraints of `RandomWorkload.schema`, checked on rows (table → key → values in table order).
public enum WorkloadConstraints {
    /// Every violation in `rows`, described; empty when the state is valid.
    public static func violations(in rows: [String: [[SQLValue]: [SQLValue]]], posts: String = "posts") -> [String] {
        var problems: [String] = []
        let users = rows["users"] ?? [:]
        var emails: [SQLValue: [SQLValue]] = [:]
        for (key, row) in users.sorted(by: { $0.key.description < $1.key.description }) {
            let (email, name, score) = (row[1], row[2], row[3])
            if email != .null {
                if let other = emails[email] { problems.append("users \(key) and \(other) share email \(email)") }
                emails[email] = key
            }
            if case .integer(let s) = score, s < 0 { problems.append("users \(key) has negative score \(s)") }
            if name == .text("vip"), case .integer(let s) = score, s < 3 {
                problems.append("users \(key) is vip with score \(s)")
            }
        }
        for (key, row) in (rows[posts] ?? [:]).sorted(by: { $0.key.description < $1.key.description }) {
            if row[1] != .null, users[[row[1]]] == nil {
                problems.append("\(posts) \(key) is an orphan of user \(row[1])")
            }
        }
        return problems
    }
}

extension String {
    /// This text with every whole-word `word` (letters, digits and `_` around it do not continue it)
    /// replaced.
    func replacingWord(_ word: String, with replacement: String) -> String {
        var result = ""
        var rest = Substring(self)
        let isWordCharacter = { (c: Character) in c.isLetter || c.isNumber || c == "_" }
        while let range = rest.range(of: word) {
            let before =
                range.lowerBound == rest.startIndex
                ? (result.last.map(isWordCharacter) ?? false)
                : isWordCharacter(rest[rest.index(before: range.lowerBound)])
            let after = range.upperBound < rest.endIndex && isWordCharacter(rest[range.upperBound])
            result += rest[..<range.lowerBound]
            result += before || after ? word : replacement
            rest = rest[range.upperBound...]
        }
        return result + rest
    }
}
