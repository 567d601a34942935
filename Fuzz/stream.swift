@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzStream(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> Int32 {
    FuzzStream.run(bytes, count, decode: false)
    return 0
}
