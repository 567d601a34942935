import Foundation

/// Writes Float32 interleaved PCM as a WAV file, streaming: the header's sizes are filled in by
/// `finish()` (or, if the writer is dropped unfinished, by `deinit`), so the header always
/// tells the truth about what the file holds.
///
/// Mono and stereo are `WAVE_FORMAT_IEEE_FLOAT` with the `cbSize` field and the `fact` chunk
/// that every non-PCM WAV format requires; more than two channels are
/// `WAVE_FORMAT_EXTENSIBLE` with the IEEE float sub-format and a channel mask for Spool's
/// channel order (L R C LFE BL BR SL SR, as Microsoft's `dwChannelMask` bits define it).
public final class WAVFileWriter {
    /// The format being written.
    public let format: AudioFormat
    /// Frames written so far.
    public private(set) var framesWritten = 0
    private let handle: FileHandle
    private let path: String
    private var finished = false
    /// The process's file-size limit (`RLIMIT_FSIZE`) where the file is a regular one: nil
    /// for none, or for a device or pipe, which it does not bound.
    private let sizeLimit: Int?
    /// Bytes before the first frame.
    private let headerBytes: Int

    /// The most data bytes a RIFF file can describe with its 32-bit sizes.
    static let maximumDataBytes = Int(UInt32.max) - 80

    /// Creates the file at `path`, or empties the one there.
    ///
    /// The file is opened in place (`open` with `O_CREAT | O_TRUNC`), so a symbolic link is
    /// written through and a device stays a device: `FileManager.createFile` writes a new
    /// file and renames it over the path, which replaced a link with a regular file, and
    /// /dev/null too when run as root.
    ///
    /// - Throws: `AudioError.Code.writeFailed` when the file cannot be created.
    public init(path: String, format: AudioFormat) throws {
        self.path = path
        self.format = format
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o666)
        guard fd >= 0 else {
            throw AudioError(.writeFailed, "\(path): cannot create the file: \(String(cString: strerror(errno)))")
        }
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        self.handle = handle
        sizeLimit = Self.sizeLimit(of: fd)
        let header = Self.header(format: format, frames: 0)
        headerBytes = header.count
        if let limit = sizeLimit, limit < header.count {
            finished = true
            try? handle.close()
            throw AudioError(.writeFailed, "\(path): the file-size limit (RLIMIT_FSIZE, \(limit) bytes) leaves no room for a WAV header")
        }
        do { try handle.write(contentsOf: header) } catch {
            finished = true
            try? handle.close()
            throw AudioError(.writeFailed, "\(path): write failed", underlying: error)
        }
    }

    deinit { try? finish() }

    /// `RLIMIT_FSIZE` for a regular file open at `fd`: past it, a write would raise SIGXFSZ,
    /// which ends the process unless it is caught or ignored.
    private static func sizeLimit(of fd: Int32) -> Int? {
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return nil }
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else { return nil }  // RLIM_INFINITY
        return Int(clamping: limit.rlim_cur)
    }

    /// Appends interleaved frames.
    ///
    /// - Throws: `AudioError.Code.writeFailed` when the disk refuses them, the file would
    ///   outgrow what a WAV header can describe (4 GiB) or pass the process's file-size limit
    ///   (`RLIMIT_FSIZE`, checked before writing, so that SIGXFSZ never comes). The file then
    ///   holds the frames written before, whole, and `finish()` gives them a true header.
    public func write(_ samples: UnsafeBufferPointer<Float>) throws {
        let frames = samples.count / format.channelCount
        let frameBytes = format.channelCount * 4
        guard (framesWritten + frames) * frameBytes <= Self.maximumDataBytes else {
            throw AudioError(.writeFailed, "\(path): a WAV file holds at most 4 GiB of audio; \(framesWritten) frames were written")
        }
        if let limit = sizeLimit, headerBytes + (framesWritten + frames) * frameBytes > limit {
            // The whole frames that fit, then the refusal.
            let fitting = max(0, min(frames, (limit - headerBytes) / frameBytes - framesWritten))
            if fitting > 0 { try write(UnsafeBufferPointer(rebasing: samples[0..<(fitting * format.channelCount)])) }
            throw AudioError(.writeFailed, "\(path): the file-size limit (RLIMIT_FSIZE, \(limit) bytes) stops the file at \(framesWritten) frames")
        }
        do { try handle.write(contentsOf: Data(buffer: samples)) } catch {  // Float32 on Linux hosts is little-endian already
            // A write cut short leaves part of a chunk: the file goes back to the frames before it.
            _ = ftruncate(handle.fileDescriptor, off_t(headerBytes + framesWritten * frameBytes))
            _ = lseek(handle.fileDescriptor, 0, SEEK_END)
            throw AudioError(.writeFailed, "\(path): write failed after \(framesWritten) frames", underlying: error)
        }
        framesWritten += frames
    }

    /// Appends a buffer.
    public func write(_ buffer: PCMBuffer) throws {
        try buffer.withUnsafeSamples { try write($0) }
    }

    /// Drops what was written past the first `frames` frames.
    ///
    /// - Throws: `AudioError.Code.writeFailed` when the file cannot be cut.
    public func truncate(toFrames frames: Int) throws {
        guard !finished, (0..<framesWritten).contains(frames) else { return }
        let bytes = headerBytes + frames * format.channelCount * 4
        do {
            try handle.truncate(atOffset: UInt64(bytes))
            try handle.seekToEnd()
        } catch {
            throw AudioError(.writeFailed, "\(path): cannot cut the file to \(frames) frames", underlying: error)
        }
        framesWritten = frames
    }

    /// Fills in the header's sizes and closes the file.
    public func finish() throws {
        guard !finished else { return }
        finished = true
        do {
            try handle.seek(toOffset: 0)
            try handle.write(contentsOf: Self.header(format: format, frames: framesWritten))
            try handle.close()
        } catch {
            throw AudioError(.writeFailed, "\(path): cannot finish the WAV header", underlying: error)
        }
    }

    /// `dwChannelMask` for Spool's channel order with `channels` channels (the speakers the
    /// decoders map their layouts to: 3 = L R C, 4 = quad, 5 = L R C BL BR, 7 = 6.1).
    static func channelMask(channels: Int) -> UInt32 {
        // swift-format-ignore: AlwaysUseLowerCamelCase
        let FL: UInt32 = 0x1, FR: UInt32 = 0x2, FC: UInt32 = 0x4, LFE: UInt32 = 0x8, BL: UInt32 = 0x10,
            BR: UInt32 = 0x20, BC: UInt32 = 0x100, SL: UInt32 = 0x200, SR: UInt32 = 0x400
        switch channels {
        case 1: return FC
        case 2: return FL | FR
        case 3: return FL | FR | FC
        case 4: return FL | FR | BL | BR
        case 5: return FL | FR | FC | BL | BR
        case 6: return FL | FR | FC | LFE | BL | BR
        case 7: return FL | FR | FC | LFE | BC | SL | SR
        case 8: return FL | FR | FC | LFE | BL | BR | SL | SR
        default: return 0  // no speaker assignment
        }
    }

    /// The header for IEEE float data: 58 bytes for mono and stereo, 80 for more channels.
    static func header(format: AudioFormat, frames: Int) -> Data {
        let channels = format.channelCount
        let extensible = channels > 2
        let dataBytes = frames * channels * 4
        let fmtBytes = extensible ? 40 : 18
        var d = Data()
        func u32(_ v: Int) { withUnsafeBytes(of: UInt32(truncatingIfNeeded: v).littleEndian) { d.append(contentsOf: $0) } }
        func u16(_ v: Int) { withUnsafeBytes(of: UInt16(truncatingIfNeeded: v).littleEndian) { d.append(contentsOf: $0) } }
        d.append(contentsOf: Array("RIFF".utf8)); u32(4 + (8 + fmtBytes) + (8 + 4) + 8 + dataBytes)
        d.append(contentsOf: Array("WAVE".utf8))
        d.append(contentsOf: Array("fmt ".utf8)); u32(fmtBytes)
        u16(extensible ? 0xFFFE : 3)  // WAVE_FORMAT_EXTENSIBLE or WAVE_FORMAT_IEEE_FLOAT
        u16(channels); u32(Int(format.sampleRate)); u32(Int(format.sampleRate) * channels * 4); u16(channels * 4); u16(32)
        if extensible {
            u16(22)  // cbSize: valid bits, channel mask, sub-format GUID
            u16(32)
            u32(Int(channelMask(channels: channels)))
            // KSDATAFORMAT_SUBTYPE_IEEE_FLOAT: 00000003-0000-0010-8000-00AA00389B71
            d.append(contentsOf: [0x03, 0, 0, 0, 0, 0, 0x10, 0, 0x80, 0, 0, 0xAA, 0, 0x38, 0x9B, 0x71])
        } else {
            u16(0)  // cbSize: no extension, but the field must be there for a non-PCM format
        }
        d.append(contentsOf: Array("fact".utf8)); u32(4); u32(frames)  // frames per channel
        d.append(contentsOf: Array("data".utf8)); u32(dataBytes)
        return d
    }
}
