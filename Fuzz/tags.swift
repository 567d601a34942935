import Foundation
@testable import SpoolDecoding

/// The tag parsers Spool runs itself: ID3v1, APEv2 and the ID3v2 size at the front of an MP3
/// (MPEGLayout), and the Xing/VBRI header of the first frame.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTags(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> Int32 {
    let data = Data(bytes: bytes, count: count)
    guard let reader = try? ByteReader(source: .memory(data, name: "fuzz")) else { return 0 }
    let layout = MPEGLayout(reader: reader)
    _ = layout.tags
    let prefix = [UInt8](data.prefix(4096))
    if let (offset, header) = MPEGLayout.firstFrame(in: prefix, from: 0) {
        _ = XingHeader(prefix, frameAt: offset, header: header)
    }
    return 0
}
