import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Signals when a store's files (the database and its `-wal`) may have changed, whichever process
/// wrote them, without polling a core: inotify on Linux; elsewhere a coarse timer. A slow safety
/// tick also fires, for file systems that do not report changes (network shares).
// @unchecked: the dispatch sources are created once in init and only cancelled after, which
// DispatchSource allows from any thread.
final class FileChangeMonitor: @unchecked Sendable {
    private let source: any DispatchSourceProtocol
    private let timer: any DispatchSourceTimer
    private let descriptor: Int32

    /// Starts watching the store at `path`; `onChange` runs on a private queue.
    init(storePath path: String, safetyInterval: TimeInterval, onChange: @escaping @Sendable () -> Void) {
        let queue = DispatchQueue(label: "tidemark.observe")
        let url = URL(fileURLWithPath: path).standardizedFileURL
        let directory = url.deletingLastPathComponent().path
        let names = Set([url.lastPathComponent, url.lastPathComponent + "-wal"])
        #if canImport(Glibc)
            let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
            descriptor = fd
            if fd >= 0 {
                _ = inotify_add_watch(fd, directory, UInt32(IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_MOVED_TO))
                let read = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
                read.setEventHandler {
                    var buffer = [UInt8](repeating: 0, count: 16 * 1024)
                    var relevant = false
                    while true {
                        let count = Glibc.read(fd, &buffer, buffer.count)
                        if count <= 0 { break }
                        var offset = 0
                        while offset + MemoryLayout<inotify_event>.size <= count {
                            let (length, name) = buffer.withUnsafeBytes { raw -> (Int, String) in
                                let event = raw.load(fromByteOffset: offset, as: inotify_event.self)
                                let start = offset + MemoryLayout<inotify_event>.size
                                let nameBytes = raw[start..<start + Int(event.len)].prefix { $0 != 0 }
                                return (Int(event.len), String(decoding: nameBytes, as: UTF8.self))
                            }
                            if names.contains(name) { relevant = true }
                            offset += MemoryLayout<inotify_event>.size + length
                        }
                    }
                    if relevant { onChange() }
                }
                read.setCancelHandler { close(fd) }
                source = read
            } else {
                source = DispatchSource.makeTimerSource(queue: queue)
            }
        #else
            descriptor = -1
            let fallback = DispatchSource.makeTimerSource(queue: queue)
            fallback.schedule(deadline: .now() + 0.25, repeating: 0.25)
            fallback.setEventHandler(handler: onChange)
            source = fallback
        #endif
        timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + safetyInterval, repeating: safetyInterval)
        timer.setEventHandler(handler: onChange)
        source.resume()
        timer.resume()
    }

    /// Stops watching.
    func cancel() {
        source.cancel()
        timer.cancel()
    }
}
