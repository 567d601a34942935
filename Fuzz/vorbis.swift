import SpoolDecoding

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzVorbis(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> Int32 {
    FuzzDecoder.run(.vorbis, bytes, count)
    return 0
}
