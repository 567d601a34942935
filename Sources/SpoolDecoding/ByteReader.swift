import Foundation
import SpoolCore
#if canImport(Glibc)
import Glibc
#endif

/// Random-access reading of an `AudioSource`'s bytes, for the C libraries' I/O callbacks.
///
/// A window (`start..<end`) can hide bytes from the decoder, e.g. the trailing APE and ID3v1
/// tags of an MP3, which Spool parses itself; excluded ranges inside it (corrupt regions)
/// are skipped as if they were not there, so offsets the decoder sees are "virtual".
///
/// Small reads of a file are served from a read-ahead block: libmpg123 asks for each frame's
/// 4-byte header and then its body, and libvorbisfile for 2 KiB at a time, which without it
/// cost one system call each (36 000 for eight minutes of 22.05 kHz MP3, more time than the
/// rest of the start-up). Reads of a block or more go to the file directly.
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
    /// Sorted, disjoint absolute ranges inside the window that reads skip.
    private var excluded: [Range<Int>] = []
    let name: String

    /// Bytes read at a time for small reads: 64 KiB, a few hundred MP3 frames.
    static let readAheadSize = 65_536
    /// The read-ahead block (nil until the first small read of a file) and the absolute
    /// range of the file it holds.
    private var readAhead: UnsafeMutableRawBufferPointer?
    private var readAheadStart = 0
    private var readAheadCount = 0
    /// `pread` calls made on the file so far: what the read-ahead saves, for tests.
    private(set) var systemReads = 0

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
        readAhead?.deallocate()
    }

    /// Bytes visible in the window.
    var size: Int { end - start - excluded.reduce(0) { $0 + $1.count } }
    /// Offset of the next read, relative to the window (excluded bytes not counted).
    var position: Int { virtual(offset) }

    /// Hides `ranges` (absolute, sorted, disjoint, inside the window) from reads.
    func exclude(_ ranges: [Range<Int>]) {
        excluded = ranges
        offset = start
    }

    private func virtual(_ absolute: Int) -> Int {
        var v = absolute - start
        for range in excluded where range.lowerBound < absolute { v -= min(range.upperBound, absolute) - range.lowerBound }
        return v
    }

    private func absolute(_ virtualOffset: Int) -> Int {
        var a = start + virtualOffset
        for range in excluded where range.lowerBound <= a { a += range.count }
        return a
    }

    /// Narrows what the decoder sees to `range` (absolute offsets).
    func setWindow(_ range: Range<Int>) {
        start = max(0, range.lowerBound)
        end = min(totalSize, range.upperBound)
        offset = start
    }

    /// Reads up to `count` bytes at the current position; returns bytes read, 0 at the end,
    /// −1 on an I/O error.
    func read(into buffer: UnsafeMutableRawPointer, count: Int) -> Int {
        // The common case, once a frame at a time: nothing excluded, and the bytes wanted in
        // the read-ahead block and the window.
        if excluded.isEmpty, count > 0, let block = readAhead?.baseAddress, offset >= readAheadStart,
           count <= readAheadStart + readAheadCount - offset, count <= end - offset {
            buffer.copyMemory(from: block + (offset - readAheadStart), byteCount: count)
            offset += count
            return count
        }
        var done = 0
        while done < count {
            if let range = excluded.first(where: { $0.contains(offset) }) { offset = range.upperBound }
            let stop = excluded.first(where: { $0.lowerBound > offset })?.lowerBound ?? end
            let n = max(0, min(count - done, stop - offset))
            guard n > 0 else { break }
            let got = pread(absolute: offset, into: buffer + done, count: n)
            if got < 0 { return done > 0 ? done : -1 }
            offset += got
            done += got
            if got < n { break }
        }
        return done
    }

    /// Moves the read position (relative to the window); returns the new position or −1.
    ///
    /// The C libraries call this with offsets taken from the file (an RF64 `ds64` chunk can
    /// claim 2^63 − 1 bytes), so the sum is checked: a target outside the window, or one that
    /// does not fit in an `Int`, is refused with −1, never a trap.
    func seek(_ position: Int, whence: Int32) -> Int {
        let base: Int
        switch whence {
        case SEEK_SET: base = 0
        case SEEK_CUR: base = virtual(offset)
        case SEEK_END: base = size
        default: return -1
        }
        let (target, overflow) = base.addingReportingOverflow(position)
        guard !overflow, target >= 0, target <= size else { return -1 }
        offset = absolute(target)
        return target
    }

    /// Up to `count` bytes at absolute `at`, for sniffing and tag parsing.
    func bytes(at: Int, count: Int) -> [UInt8] {
        guard at >= 0, at < totalSize, count > 0 else { return [] }
        let n = min(count, totalSize - at)
        return [UInt8](unsafeUninitializedCapacity: n) { out, initialized in
            initialized = max(0, pread(absolute: at, into: UnsafeMutableRawPointer(out.baseAddress!), count: n))
        }
    }

    /// Up to `count` bytes at absolute `at`, into `buffer` (which ends up holding exactly the
    /// bytes read), reusing its storage when it is not shared: for walks that read a file a
    /// chunk at a time.
    func bytes(at: Int, count: Int, into buffer: inout [UInt8]) {
        let n = at >= 0 && at < totalSize && count > 0 ? min(count, totalSize - at) : 0
        if buffer.count < n {
            buffer.append(contentsOf: repeatElement(0, count: n - buffer.count))
        } else if buffer.count > n {
            buffer.removeLast(buffer.count - n)
        }
        guard n > 0 else { return }
        let got = buffer.withUnsafeMutableBytes { max(0, pread(absolute: at, into: $0.baseAddress!, count: n)) }
        if got < n { buffer.removeLast(n - got) }
    }

    private func pread(absolute: Int, into buffer: UnsafeMutableRawPointer, count: Int) -> Int {
        switch backing {
        case .file(let fd):
            guard count < Self.readAheadSize else { return readFile(fd, at: absolute, into: buffer, count: count) }
            return readThroughBlock(fd, at: absolute, into: buffer, count: count)
        case .memory(let data):
            let n = min(count, data.count - absolute)
            guard n > 0 else { return 0 }
            data.withUnsafeBytes { raw in
                buffer.copyMemory(from: raw.baseAddress! + absolute, byteCount: n)
            }
            return n
        }
    }

    /// Up to `count` bytes at `absolute`, copied from the read-ahead block, which is read
    /// again from the file at the first byte it does not hold.
    private func readThroughBlock(_ fd: Int32, at absolute: Int, into buffer: UnsafeMutableRawPointer, count: Int) -> Int {
        let block: UnsafeMutableRawBufferPointer
        if let readAhead {
            block = readAhead
        } else {
            // No bigger than the file (as it was opened), so a small file costs little memory.
            block = .allocate(byteCount: max(4096, min(Self.readAheadSize, totalSize)), alignment: 16)
            readAhead = block
        }
        guard let blockBase = block.baseAddress else { return -1 }
        var done = 0
        while done < count {
            let at = absolute + done
            if at < readAheadStart || at >= readAheadStart + readAheadCount {
                let got = readFile(fd, at: at, into: blockBase, count: block.count)
                guard got > 0 else {
                    readAheadCount = 0
                    return done > 0 || got == 0 ? done : -1
                }
                readAheadStart = at
                readAheadCount = got
            }
            let n = min(count - done, readAheadStart + readAheadCount - at)
            (buffer + done).copyMemory(from: blockBase + (at - readAheadStart), byteCount: n)
            done += n
        }
        return done
    }

    /// `count` bytes at `absolute` straight from the file (fewer at its end), −1 on an error
    /// before any byte.
    private func readFile(_ fd: Int32, at absolute: Int, into buffer: UnsafeMutableRawPointer, count: Int) -> Int {
        var done = 0
        while done < count {
            systemReads += 1
            let r = Glibc.pread(fd, buffer + done, count - done, off_t(absolute + done))
            if r < 0 {
                if errno == EINTR { continue }
                return done > 0 ? done : -1
            }
            if r == 0 { break }
            done += r
        }
        return done
    }
}
