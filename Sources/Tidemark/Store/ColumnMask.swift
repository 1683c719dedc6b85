/// Which slots of a table a captured change carries a value for, as stored in
/// `tidemark_changes`: bit `s % 63` of mask word `s / 63` is slot `s`. Words are 63 bits so every
/// word is a non-negative SQLite integer whatever bit is set; a word the table does not need is
/// NULL, read as 0.
struct ColumnMask: Equatable {
    /// Slots per mask word.
    static let bitsPerWord = 63

    private(set) var words: [Int64] = []

    init() {}

    init(slots: some Sequence<Int>) {
        for slot in slots { insert(slot) }
    }

    init(words: [Int64]) { self.words = words }

    /// The words needed for a table with `slots` slots (at least one).
    static func wordCount(slots: Int) -> Int { max(1, (slots + bitsPerWord - 1) / bitsPerWord) }

    mutating func insert(_ slot: Int) {
        let word = slot / Self.bitsPerWord
        if words.count <= word { words.append(contentsOf: repeatElement(0, count: word + 1 - words.count)) }
        words[word] |= 1 << Int64(slot % Self.bitsPerWord)
    }

    func contains(_ slot: Int) -> Bool {
        let word = slot / Self.bitsPerWord
        return word < words.count && words[word] & (1 << Int64(slot % Self.bitsPerWord)) != 0
    }

    /// Exactly `count` words, padded with zeros.
    func words(count: Int) -> [Int64] {
        if words.count == count { return words }
        return Array(words.prefix(count)) + repeatElement(0, count: max(0, count - words.count))
    }

    /// The first `words` words as comma-separated SQL literals.
    func sql(words count: Int) -> String { words(count: count).map(String.init).joined(separator: ", ") }
}
