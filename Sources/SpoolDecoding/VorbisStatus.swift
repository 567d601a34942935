import SpoolCore
internal import CVorbisFile

/// A status code returned by libvorbisfile (`OV_*`, vorbis/codec.h), with what it means for
/// Spool: the `AudioError` code it becomes and a sentence saying what went wrong.
struct VorbisStatus: Error, Equatable, CustomStringConvertible {
    /// The raw code: 0 or positive for success, negative for `OV_*`.
    let rawValue: Int32

    init(_ rawValue: Int32) { self.rawValue = rawValue }

    /// `OV_FALSE`: a call had nothing to do, or no data was available.
    static let noData = VorbisStatus(OV_FALSE)
    /// `OV_EOF`: the end of the file was reached.
    static let endOfFile = VorbisStatus(OV_EOF)
    /// `OV_HOLE`: pages are missing; decoding goes on after the hole.
    static let hole = VorbisStatus(OV_HOLE)
    /// `OV_EREAD`: a read from the input failed.
    static let readFailed = VorbisStatus(OV_EREAD)
    /// `OV_EFAULT`: libvorbisfile's internal state is inconsistent.
    static let fault = VorbisStatus(OV_EFAULT)
    /// `OV_EIMPL`: the stream uses a feature libvorbisfile does not implement.
    static let notImplemented = VorbisStatus(OV_EIMPL)
    /// `OV_EINVAL`: libvorbisfile was given an invalid argument or state.
    static let invalidArgument = VorbisStatus(OV_EINVAL)
    /// `OV_ENOTVORBIS`: the data is not Vorbis.
    static let notVorbis = VorbisStatus(OV_ENOTVORBIS)
    /// `OV_EBADHEADER`: a Vorbis header packet is invalid.
    static let badHeader = VorbisStatus(OV_EBADHEADER)
    /// `OV_EVERSION`: the Vorbis version is not 0 (Vorbis I).
    static let badVersion = VorbisStatus(OV_EVERSION)
    /// `OV_ENOTAUDIO`: a packet where audio was expected is not audio.
    static let notAudio = VorbisStatus(OV_ENOTAUDIO)
    /// `OV_EBADPACKET`: an audio packet is invalid.
    static let badPacket = VorbisStatus(OV_EBADPACKET)
    /// `OV_EBADLINK`: a link of a chained stream is corrupt or cannot be found.
    static let badLink = VorbisStatus(OV_EBADLINK)
    /// `OV_ENOSEEK`: the input cannot seek.
    static let notSeekable = VorbisStatus(OV_ENOSEEK)

    static let all: [VorbisStatus] = [
        .noData, .endOfFile, .hole, .readFailed, .fault, .notImplemented, .invalidArgument, .notVorbis,
        .badHeader, .badVersion, .notAudio, .badPacket, .badLink, .notSeekable,
    ]

    /// The C name, e.g. `OV_EBADHEADER`.
    var name: String {
        switch self {
        case .noData: "OV_FALSE"
        case .endOfFile: "OV_EOF"
        case .hole: "OV_HOLE"
        case .readFailed: "OV_EREAD"
        case .fault: "OV_EFAULT"
        case .notImplemented: "OV_EIMPL"
        case .invalidArgument: "OV_EINVAL"
        case .notVorbis: "OV_ENOTVORBIS"
        case .badHeader: "OV_EBADHEADER"
        case .badVersion: "OV_EVERSION"
        case .notAudio: "OV_ENOTAUDIO"
        case .badPacket: "OV_EBADPACKET"
        case .badLink: "OV_EBADLINK"
        case .notSeekable: "OV_ENOSEEK"
        default: "libvorbisfile status \(rawValue)"
        }
    }

    /// What the status means, as the end of a sentence ("…: <description>").
    var description: String {
        switch self {
        case .noData: "libvorbisfile found no data to return"
        case .endOfFile: "the input ends before the Vorbis stream does"
        case .hole: "pages of the stream are missing"
        case .readFailed: "reading the input failed"
        case .fault: "libvorbisfile's internal state is inconsistent"
        case .notImplemented: "the stream uses a Vorbis feature libvorbisfile does not implement"
        case .invalidArgument: "libvorbisfile refused the request as invalid for this stream"
        case .notVorbis: "the data is not Vorbis"
        case .badHeader: "a Vorbis header packet is invalid"
        case .badVersion: "the Vorbis version is not 0, the only one there is (Vorbis I)"
        case .notAudio: "a packet where audio belongs is not audio"
        case .badPacket: "an audio packet is invalid"
        case .badLink: "a link of the chained stream is corrupt or cannot be found"
        case .notSeekable: "the input cannot seek"
        default: "libvorbisfile failed with the unknown status \(rawValue)"
        }
    }

    /// The `AudioError` code this status becomes.
    var errorCode: AudioError.Code {
        switch self {
        case .readFailed: .readFailed
        case .endOfFile: .truncated
        case .notVorbis, .badVersion, .notImplemented: .unsupportedFormat
        case .hole, .badHeader, .notAudio, .badPacket, .badLink: .corruptData
        default: .libraryFailure
        }
    }

    /// The error for a call that returned this status.
    /// - Parameters:
    ///   - name: The input's name, for the message.
    ///   - call: The libvorbisfile function that returned it, e.g. `ov_read_float`.
    ///   - context: What Spool was doing, e.g. "decoding failed at frame 1024".
    func error(_ name: String, call: String, context: String) -> AudioError {
        AudioError(errorCode, "\(name): \(context): \(description)",
                   underlying: LibraryStatus(library: "libvorbisfile", code: rawValue, text: "\(call): \(self.name)"))
    }
}
