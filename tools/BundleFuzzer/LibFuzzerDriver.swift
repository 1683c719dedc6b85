#if TIDEMARK_LIBFUZZER
    import Foundation

    /// libFuzzer's driver (compiler-rt `FuzzerInterface.h`): parses libFuzzer's command line and runs
    /// the campaign, calling `callback` once per input.
    @_silgen_name("LLVMFuzzerRunDriver")
    private func runLibFuzzerDriver(
        _ argc: UnsafeMutablePointer<CInt>,
        _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
        _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt
    ) -> CInt

    /// The entry point when built with `-sanitize=fuzzer -D TIDEMARK_LIBFUZZER` (`tools/fuzz.sh`).
    /// SwiftPM links every executable's entry point as `main`, so libFuzzer's own `main` cannot be
    /// used; this one hands the command line to libFuzzer's driver instead.
    @main
    enum LibFuzzerDriver {
        static func main() {
            var argc = CommandLine.argc
            var argv = CommandLine.unsafeArgv
            exit(runLibFuzzerDriver(&argc, &argv, fuzz))
        }
    }
#endif
