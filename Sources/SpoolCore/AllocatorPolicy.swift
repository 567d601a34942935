#if canImport(Glibc)
import Glibc
internal import CMalloc
#endif

/// How the C allocator treats the large buffers that voices come and go with.
///
/// glibc serves an allocation of 128 KiB or more with a mapping of its own, given back to the
/// system when freed; but the first time such a block is freed, glibc raises that threshold to
/// the block's size (up to 32 MiB), and from then on blocks below it come from the heap arenas
/// of the threads that allocate them. A player's converters and rings hold blocks of 256 KiB to
/// 1 MiB (libswresample's own buffers among them), made and freed on several threads as players
/// come and go; once they live in the arenas, the freed space between blocks still in use stays
/// resident. `spool bench soak` measured it: 4 000 players made and released in 5 minutes grew
/// the resident set from 119 to 180 MiB while the memory in use stayed at 57–71 MiB. With the
/// threshold fixed, the resident set stayed at 100–115 MiB, following the memory in use.
///
/// A program that makes players for hours calls `fixLargeBlockThreshold()` once at start
/// (`spool` does); it is the same as starting with
/// `GLIBC_TUNABLES=glibc.malloc.mmap_threshold=131072`. It changes the allocator for the whole
/// process, which is why Spool does not do it by itself: each free of a large block then costs
/// an unmapping, and each new one its page faults.
public enum AllocatorPolicy {
    /// glibc's own default threshold.
    public static let defaultThresholdBytes = 128 * 1024

    /// Fixes the size from which glibc maps each block on its own, so that it no longer rises.
    /// - Parameter bytes: The threshold, from 4 KiB to 32 MiB (glibc's largest).
    /// - Throws: `AudioError.Code.invalidParameter` for a size out of that range;
    ///   `.libraryFailure` when the C library refuses it.
    public static func fixLargeBlockThreshold(bytes: Int = defaultThresholdBytes) throws {
        guard (4096...(32 << 20)).contains(bytes) else {
            throw AudioError(.invalidParameter, "the large-block threshold must be 4096 to 33554432 bytes, not \(bytes)")
        }
        #if canImport(Glibc)
        guard mallopt(M_MMAP_THRESHOLD, Int32(bytes)) == 1 else {
            throw AudioError(.libraryFailure, "glibc refused a large-block threshold of \(bytes) bytes (mallopt)")
        }
        #endif
    }
}

extension AllocatorPolicy {
    /// Bytes the C allocator holds in blocks mapped on their own (`mallinfo2().hblkhd`).
    package static var mappedBytes: Int {
        #if canImport(Glibc)
        return mallinfo2().hblkhd
        #else
        return 0
        #endif
    }

    /// Bytes the program holds from the C allocator: in use in every arena, and the blocks
    /// mapped on their own (`mallinfo2`).
    package static var bytesInUse: Int {
        #if canImport(Glibc)
        let info = mallinfo2()
        return info.uordblks + info.hblkhd
        #else
        return 0
        #endif
    }
}
