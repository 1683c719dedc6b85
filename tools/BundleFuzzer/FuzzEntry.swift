/// libFuzzer's entry point (https://llvm.org/docs/LibFuzzer.html): called once per input with the
/// bytes to try. Every input must return normally; a crash, a hang or an allocation beyond the
/// campaign's limits is a defect in the decoder.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    BundleFuzzing.run(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
