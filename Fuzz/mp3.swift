import SpoolDecoding

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMP3(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> Int32 {
    FuzzDecoder.run(.mp3, bytes, count)
    return 0
}
