import Foundation
import SpoolCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

extension BufferCache {
    /// Names one cached item: a file at one version, in-memory bytes, a registered asset at one
    /// registration, or a name of the caller's own.
    public struct Key: Hashable, Sendable, CustomStringConvertible {
        enum Identity: Hashable, Sendable {
            case file(path: String)
            case memory(Data)
            case named(String)
            case custom(String)
        }

        enum Version: Hashable, Sendable {
            case unversioned
            case file(FileStamp)
            case registration(UInt64)
        }

        let identity: Identity
        let version: Version

        init(identity: Identity, version: Version) {
            self.identity = identity
            self.version = version
        }

        /// A key of your own, for audio made by a decode closure.
        /// - Parameter name: Any name; equal names are one key.
        public init(_ name: String) {
            self.init(identity: .custom(name), version: .unversioned)
        }

        /// The key of the file at `absolutePath` as it is now.
        static func file(absolutePath: String) throws -> Key {
            Key(identity: .file(path: absolutePath), version: .file(try FileStamp(path: absolutePath)))
        }

        static func memory(_ data: Data) -> Key {
            Key(identity: .memory(data), version: .unversioned)
        }

        var isUnversioned: Bool { version == .unversioned }

        /// What the key names, for messages: `file PATH`, `asset 'NAME'`, `key 'NAME'`, or
        /// the size of in-memory bytes.
        public var description: String {
            switch identity {
            case .file(let path): "file \(path)"
            case .memory(let data): "\(data.count) bytes in memory"
            case .named(let name): "asset '\(name)'"
            case .custom(let name): "key '\(name)'"
            }
        }
    }

    /// What `stat` says about a file: any rewrite changes at least one field.
    ///
    /// Modification and change times are kept to the nanosecond, though the kernel stamps
    /// them from a clock that ticks every few milliseconds: a rewrite to the same size, in
    /// place, within one tick of the last, is invisible to any stat-based check. Writers that
    /// replace the file (write a new one, rename it over) also change the inode.
    struct FileStamp: Hashable, Sendable {
        let device: UInt64
        let inode: UInt64
        let size: Int64
        let modifiedSeconds: Int64
        let modifiedNanoseconds: Int64
        let changedSeconds: Int64
        let changedNanoseconds: Int64

        init(path: String) throws {
            var info = stat()
            guard stat(path, &info) == 0 else {
                let reason = String(cString: strerror(errno))
                throw AudioError(.fileNotFound, "\(path): cannot open: \(reason)")
            }
            guard (info.st_mode & S_IFMT) == S_IFREG else {
                throw AudioError(.readFailed, "\(path): not a regular file")
            }
            device = UInt64(truncatingIfNeeded: info.st_dev)
            inode = UInt64(truncatingIfNeeded: info.st_ino)
            size = Int64(info.st_size)
            modifiedSeconds = Int64(info.st_mtim.tv_sec)
            modifiedNanoseconds = Int64(info.st_mtim.tv_nsec)
            changedSeconds = Int64(info.st_ctim.tv_sec)
            changedNanoseconds = Int64(info.st_ctim.tv_nsec)
        }
    }
}
