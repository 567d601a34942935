@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSniff(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> Int32 {
    FuzzSniff.run(bytes, count)
    return 0
}
