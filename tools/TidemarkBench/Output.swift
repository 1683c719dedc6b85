import Foundation

/// Unbuffered output: results on standard output, progress and run notes on standard error, so
/// their order holds even when both go to one pipe.
enum Output {
    /// Writes `text` to standard output as is.
    static func write(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    /// Writes one line to standard error.
    static func progress(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }
}
