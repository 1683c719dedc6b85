import Foundation

/// Checks every vector against TidemarkCore, each in a child process, and prints one line per vector.
enum Report {
    /// Vectors written exactly as BundleEncoder writes them: re-encoding their content must give
    /// the same bytes before the signature.
    static let referenceLayout: Set<String> = [
        "alice-history", "all-value-kinds", "relay-three-origins", "bob-history", "limits", "no-transactions",
        "watermark",
    ]

    /// Returns how many vectors TidemarkCore handles differently from what the vector says.
    static func run(_ catalog: Catalog, root: URL) -> Int {
        let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        var problems = 0
        for v in catalog.vectors {
            let path = root.appendingPathComponent("\(v.isValid ? "valid" : "invalid")/\(v.name).tmb").path
            let (output, status) = child(
                me, ["check", path] + (referenceLayout.contains(v.name) ? ["--reencode"] : []))
            let lines = output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            let verdict = lines.first ?? ""
            var line: String
            switch v.result {
            case .valid(let expected):
                if status != 0 {
                    line = "CRASH   \(v.name): the decoder died (status \(status))"
                } else if verdict != "valid" {
                    line = "REJECT  \(v.name): \(verdict)"
                } else if lines.dropFirst().dropLast(2).joined(separator: "\n") != expected.rendered() {
                    line = "DIFFER  \(v.name): decoded content differs from the expected JSON"
                } else {
                    line = "ok      \(v.name)"
                    let reencoded = lines.dropLast().last ?? ""
                    if referenceLayout.contains(v.name) {
                        if reencoded != "reencoded: identical" {
                            line = "LAYOUT  \(v.name): BundleEncoder \(reencoded)"
                        } else {
                            line += " (BundleEncoder writes the same bytes)"
                        }
                    }
                }
            case .invalid(let error):
                if status != 0 {
                    line = "CRASH   \(v.name) [\(error)]: the decoder died (status \(status))"
                } else if verdict == "valid" {
                    line = "ACCEPT  \(v.name) [\(error)]: the decoder accepted it"
                } else if verdict.hasPrefix("invalid NOT-A-BUNDLE-ERROR") {
                    line = "OTHER   \(v.name) [\(error)]: \(verdict)"
                } else if !verdict.hasPrefix("invalid \(error) ") {
                    line = "RULE    \(v.name) [\(error)]: refused under another rule: \(verdict)"
                } else {
                    line = "ok      \(v.name) [\(error)] \(verdict.dropFirst("invalid ".count))"
                }
            }
            if !line.hasPrefix("ok") { problems += 1 }
            print(line)
        }
        return problems
    }

    private static func child(_ executable: String, _ arguments: [String]) -> (String, Int32) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return ("", -1) }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (String(decoding: data, as: UTF8.self), process.terminationStatus)
    }
}
