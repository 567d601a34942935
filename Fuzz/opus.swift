import SpoolDecoding

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOpus(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> Int32 {
    FuzzDecoder.run(.opus, bytes, count)
    return 0
}
