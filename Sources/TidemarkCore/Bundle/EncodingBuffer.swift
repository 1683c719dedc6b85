/// Bytes an encoding is written into, in memory this buffer owns and keeps when emptied: each
/// append is a bounds check and a copy, for hot paths that encode small things many times. A copy
/// of the buffer gets memory of its own when it is first written to.
struct EncodingBuffer: EncodingOutput {
    /// One allocation; a larger one replaces it when full.
    // @unchecked: its fields never change; its memory is written only by a buffer that holds the
    // only reference to it (checked before each write), and the shared empty one is never written.
    private final class Storage: @unchecked Sendable {
        let base: UnsafeMutableRawPointer
        let capacity: Int

        init(capacity: Int) {
            base = .allocate(byteCount: capacity, alignment: 8)
            self.capacity = capacity
        }

        deinit { base.deallocate() }
    }

    /// No memory until the first write.
    private static let none = Storage(capacity: 0)
    private var storage = EncodingBuffer.none
    private(set) var count = 0

    /// The bytes written since the buffer was made or last emptied.
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: storage.base, count: count) }

    /// Empties the buffer, keeping its memory.
    mutating func removeAll() { count = 0 }

    mutating func put(_ byte: UInt8) {
        reserve(1)
        storage.base.storeBytes(of: byte, toByteOffset: count, as: UInt8.self)
        count += 1
    }

    mutating func put(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress else { return }
        reserve(bytes.count)
        (storage.base + count).copyMemory(from: source, byteCount: bytes.count)
        count += bytes.count
    }

    mutating func putBigEndian(_ word: UInt64) {
        reserve(8)
        storage.base.storeBytes(of: word.bigEndian, toByteOffset: count, as: UInt64.self)
        count += 8
    }

    @inline(__always)
    private mutating func reserve(_ more: Int) {
        if count + more > storage.capacity || !isKnownUniquelyReferenced(&storage) { grow(to: count + more) }
    }

    private mutating func grow(to needed: Int) {
        let larger = Storage(capacity: max(needed, 2 * storage.capacity, 256))
        larger.base.copyMemory(from: storage.base, byteCount: count)
        storage = larger
    }
}
