#if !TIDEMARK_LIBFUZZER
    import Foundation

    /// The entry point when the target is built without `-sanitize=fuzzer` (libFuzzer brings its own
    /// `main`; `tools/fuzz.sh` builds with `-D TIDEMARK_LIBFUZZER`): runs each file named on the
    /// command line through the fuzz target once and prints what the decoder made of it, so crashers
    /// replay in an ordinary build.
    @main
    enum StandaloneRunner {
        static func main() {
            let paths = CommandLine.arguments.dropFirst()
            if paths == ["--recipient"] {
                print(FuzzIdentity.recipient)
                return
            }
            guard !paths.isEmpty else {
                FileHandle.standardError.write(
                    Data("usage: tidemark-fuzz FILE...  (build with tools/fuzz.sh for a libFuzzer campaign)\n".utf8))
                exit(2)
            }
            for path in paths {
                guard let data = FileManager.default.contents(atPath: path) else {
                    FileHandle.standardError.write(Data("\(path): cannot read\n".utf8))
                    exit(1)
                }
                switch BundleFuzzing.run([UInt8](data)) {
                case .rejected(let error): print("\(path): rejected: \(error)")
                case .unopened(let error): print("\(path): not opened: \(error)")
                case .verified(let bundle):
                    print("\(path): verified: \(bundle.transactionCount) transactions, \(bundle.changeCount) changes")
                }
            }
        }
    }
#endif
