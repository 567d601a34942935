import Foundation
import SpoolCore
#if canImport(Glibc)
import Glibc
#endif

/// Random-access reading of an `AudioSource`'s bytes, for the C libraries' I/O callbacks.
///
/// A window (`start..<end`) can hide bytes from the decoder, e.g. the trailing APE and ID3v1
/// tags of an MP3, which Spool parses itself.
final class ByteReader {
    private enum Backing {
        case file(fd: Int32)
        case memory(Data)
    }
    private let backing: Backing
    /// Bytes in the whole source.
    let totalSize: Int
    /// The visible window.
    private(set) var start: Int
    private(set) var end: Int
    /// Absolute offset of the next read.
    private(set) var offset: Int
    let name: String

    init(source: AudioSource) throws {
        name = source.name
        switch source.location {
        case .file(let url):
            let fd = open(url.path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                let reason = String(cString: strerror(errno))
                throw AudioError(.fileNotFound, "\(url.path): cannot open: \(reason)")
            }
            var info = stat()
            guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
                close(fd)
                throw AudioError(.readFailed, "\(url.path): not a regular file")
            }
            backing = .file(fd: fd)
            totalSize = Int(info.st_size)
        case .memory(let data):
            backing = .memory(data)
            totalSize = data.count
        }
        start = 0
        end = totalSize
        offset = 0
    }

    deinit {
        if case .file(let fd) = backing { close(fd) }
    }

    /// Bytes visible in the window.
    var size: Int { end - start }
    /// Offset of the next read, relative to the window.
    var position: Int { offset - start }

    /// Narrows what the decoder sees to `range` (absolute offsets).
    func setWindow(_ range: Range<Int>) {
        start = max(0, range.lowerBound)
        end = min(totalSize, range.upperBound)
        offset = start
    }

    /// Reads up to `count` bytes at the current position; returns bytes read, 0 at the end,
    /// −1 on an I/O error.
    func read(into buffer: UnsafeMutableRawPointer, count: Int) -> Int {
        let n = max(0, min(count, end - offset))
        guard n > 0 else { return 0 }
        let got = pread(absolute: offset, into: buffer, count: n)
        if got > 0 { offset += got }
        return got
    }

    /// Moves the read position (relative to the window); returns the new position or −1.
    func seek(_ position: Int, whence: Int32) -> Int {
        let base: Int
        switch whence {
        case SEEK_SET: base = start
        case SEEK_CUR: base = offset
        case SEEK_END: base = end
        default: return -1
        }
        let target = base + position
        guard target >= start, target <= end else { return -1 }
        offset = target
        return offset - start
    }

    /// Up to `count` bytes at absolute `at`, for sniffing and tag parsing.
    func bytes(at: Int, count: Int) -> [UInt8] {
        guard at >= 0, at < totalSize, count > 0 else { return [] }
        let n = min(count, totalSize - at)
        return [UInt8](unsafeUninitializedCapacity: n) { out, initialized in
            initialized = max(0, pread(absolute: at, into: UnsafeMutableRawPointer(out.baseAddress!), count: n))
        }
    }

    private func pread(absolute: Int, into buffer: UnsafeMutableRawPointer, count: Int) -> Int {
        switch backing {
        case .file(let fd):
            var done = 0
            while done < count {
                let r = Glibc.pread(fd, buffer + done, count - done, off_t(absolute + done))
                if r < 0 {
                    if errno == EINTR { continue }
                    return done > 0 ? done : -1
                }
                if r == 0 { break }
                done += r
            }
            return done
        case .memory(let data):
            let n = min(count, data.count - absolute)
            guard n > 0 else { return 0 }
            data.withUnsafeBytes { raw in
                buffer.copyMemory(from: raw.baseAddress! + absolute, byteCount: n)
            }
            return n
        }
    }
}
