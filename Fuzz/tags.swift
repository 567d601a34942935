import Foundation
import SpoolCore
@testable import SpoolDecoding

/// The tag and header parsers Spool runs itself on MP3 bytes: the whole-file map
/// (`MPEGStream`: ID3v2 and APEv2 in front, ID3v1, APEv2, Lyrics3 and ID3v2 at the end and
/// between frames), each tag reader on the raw bytes, and the Xing/Info/LAME/VBRI frame.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTags(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> Int32 {
    let data = Data(bytes: bytes, count: count)
    if let reader = try? ByteReader(source: .memory(data, name: "fuzz")),
       let stream = try? MPEGStream(reader: reader, name: "fuzz") {
        _ = stream.tags
        _ = stream.audioFrames
    }
    let b = [UInt8](data)
    var tags = AudioTags()
    ID3v2Tag.read(b, into: &tags)
    ID3v1Tag.read(b, into: &tags)
    if let frame = APETagFrame(b) {
        APETagFrame.read(items: Array(b.dropFirst(APETagFrame.size)), count: frame.itemCount, into: &tags)
    }
    if let header = MPEGAudioHeader(b) {
        _ = MPEGInfoFrame(frame: b, header: header)
    }
    return 0
}
