@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzStreamDecode(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> Int32 {
    FuzzStream.run(bytes, count, decode: true)
    return 0
}
