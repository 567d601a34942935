import SpoolDecoding

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSndfile(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> Int32 {
    FuzzDecoder.run(.sndfile, bytes, count)
    return 0
}
