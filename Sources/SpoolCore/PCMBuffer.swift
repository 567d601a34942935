import Foundation

/// Immutable PCM audio in Spool's one internal form: Float32, interleaved.
///
/// Copies and slices share one reference-counted storage, so handing a buffer to a player,
/// keeping it in a cache and slicing it never copies samples.
/// The closest Apple type is `AVAudioPCMBuffer` (standard, interleaved), made immutable.
public struct PCMBuffer: Sendable {
    /// The sample rate and channel count.
    public let format: AudioFormat
    /// The frames this buffer spans.
    public let frameCount: Int
    let storage: PCMStorage
    /// First frame of this buffer inside `storage`.
    let startFrame: Int

    /// Makes a buffer from interleaved samples.
    ///
    /// - Parameters:
    ///   - format: Rate and channel count of `samples`.
    ///   - samples: Interleaved Float32 samples; the count must be a multiple of the channel count.
    /// - Throws: `AudioError.Code.invalidParameter` when the count does not fill whole frames.
    public init(format: AudioFormat, samples: [Float]) throws {
        guard samples.count % format.channelCount == 0 else {
            throw AudioError(.invalidParameter,
                "\(samples.count) samples do not fill whole frames of \(format.channelCount) channels")
        }
        self.init(format: format, storage: PCMStorage(samples), startFrame: 0,
                  frameCount: samples.count / format.channelCount)
    }

    /// The sample encodings a program can hand Spool in `Data`.
    public enum SampleType: Sendable {
        /// Signed 16-bit little-endian integers, scaled by 1/32768.
        case int16
        /// IEEE Float32, little-endian.
        case float32

        var byteWidth: Int { self == .int16 ? 2 : 4 }
    }

    /// Makes a buffer from interleaved PCM bytes a program decoded itself.
    ///
    /// - Parameters:
    ///   - format: Rate and channel count of the data.
    ///   - data: Interleaved little-endian samples.
    ///   - sampleType: How each sample is encoded.
    /// - Throws: `AudioError.Code.invalidParameter` when the byte count does not fill whole frames.
    public init(format: AudioFormat, interleaved data: Data, sampleType: SampleType) throws {
        let frameBytes = sampleType.byteWidth * format.channelCount
        guard data.count % frameBytes == 0 else {
            throw AudioError(.invalidParameter,
                "\(data.count) bytes do not fill whole frames of \(frameBytes) bytes (\(sampleType), \(format.channelCount) ch)")
        }
        let count = data.count / sampleType.byteWidth
        let samples = [Float](unsafeUninitializedCapacity: count) { out, initialized in
            data.withUnsafeBytes { raw in
                switch sampleType {
                case .int16:
                    for i in 0..<count {
                        let bits = raw.loadUnaligned(fromByteOffset: i * 2, as: Int16.self)
                        out[i] = Float(Int16(littleEndian: bits)) * (1.0 / 32768.0)
                    }
                case .float32:
                    for i in 0..<count {
                        let bits = raw.loadUnaligned(fromByteOffset: i * 4, as: UInt32.self)
                        out[i] = Float(bitPattern: UInt32(littleEndian: bits))
                    }
                }
            }
            initialized = count
        }
        try self.init(format: format, samples: samples)
    }

    init(format: AudioFormat, storage: PCMStorage, startFrame: Int, frameCount: Int) {
        self.format = format
        self.storage = storage
        self.startFrame = startFrame
        self.frameCount = frameCount
    }

    /// An empty buffer of `format`.
    public static func empty(_ format: AudioFormat) -> PCMBuffer {
        PCMBuffer(format: format, storage: PCMStorage([]), startFrame: 0, frameCount: 0)
    }

    /// How long the buffer plays, in seconds.
    public var duration: Double { format.seconds(forFrames: frameCount) }

    /// Bytes of sample memory this buffer's frames take.
    public var byteCount: Int { frameCount * format.channelCount * MemoryLayout<Float>.size }

    /// Bytes of the whole storage this buffer shares (a slice keeps its parent's storage alive).
    public var storageByteCount: Int { storage.count * MemoryLayout<Float>.size }

    /// A buffer over `frames` of this one, sharing its storage.
    ///
    /// - Parameter frames: A range within `0..<frameCount`.
    /// - Throws: `AudioError.Code.outOfRange` when the range leaves the buffer.
    public func slice(frames: Range<Int>) throws -> PCMBuffer {
        guard frames.lowerBound >= 0, frames.upperBound <= frameCount else {
            throw AudioError(.outOfRange, "frames \(frames) lie outside a buffer of \(frameCount) frames")
        }
        return PCMBuffer(format: format, storage: storage, startFrame: startFrame + frames.lowerBound,
                         frameCount: frames.count)
    }

    /// Calls `body` with this buffer's interleaved samples (`frameCount × channelCount` of them).
    public func withUnsafeSamples<R>(_ body: (UnsafeBufferPointer<Float>) throws -> R) rethrows -> R {
        let channels = format.channelCount
        return try body(UnsafeBufferPointer(start: storage.base + startFrame * channels, count: frameCount * channels))
    }

    /// The interleaved samples, copied into an array.
    public var samples: [Float] { withUnsafeSamples { Array($0) } }

    /// One sample.
    ///
    /// - Parameters:
    ///   - frame: A frame in `0..<frameCount`.
    ///   - channel: A channel in `0..<format.channelCount`.
    /// - Returns: The sample, or `nil` when either index is out of range.
    public func sample(frame: Int, channel: Int) -> Float? {
        guard (0..<frameCount).contains(frame), (0..<format.channelCount).contains(channel) else { return nil }
        return storage.base[(startFrame + frame) * format.channelCount + channel]
    }
}

/// The shared, never-mutated samples behind `PCMBuffer`s. A class so that copies and slices
/// share it and so that a cache can tell, through a weak reference, whether evicted audio is
/// still held elsewhere. The samples live at a fixed address for the storage's lifetime, so
/// a render thread may read them through `baseAddress` while some owner keeps them alive.
public final class PCMStorage: @unchecked Sendable {
    // Sendable: the memory is written once, in init, and only read afterwards.
    // The memory comes from malloc so that a decoder can grow it with realloc and hand it
    // over without a copy (`init(adopting:count:)`).
    let base: UnsafeMutablePointer<Float>
    let count: Int

    init(_ samples: [Float]) {
        count = samples.count
        base = Self.allocate(count)
        samples.withUnsafeBufferPointer { source in
            if let address = source.baseAddress { base.initialize(from: address, count: count) }
        }
    }

    /// Takes ownership of `count` initialized floats at `base`, which came from `allocate`
    /// or `reallocate`.
    init(adopting base: UnsafeMutablePointer<Float>, count: Int) {
        self.base = base
        self.count = count
    }

    deinit { free(base) }

    /// Memory for `count` floats (at least one), from malloc.
    static func allocate(_ count: Int) -> UnsafeMutablePointer<Float> {
        reallocate(nil, count)
    }

    /// Grows or shrinks memory from `allocate` to `count` floats, keeping its contents.
    static func reallocate(_ pointer: UnsafeMutablePointer<Float>?, _ count: Int) -> UnsafeMutablePointer<Float> {
        guard let raw = realloc(pointer, max(1, count) * MemoryLayout<Float>.stride) else {
            fatalError("out of memory for \(count) samples")
        }
        return raw.bindMemory(to: Float.self, capacity: max(1, count))
    }

    var samples: UnsafeBufferPointer<Float> { UnsafeBufferPointer(start: base, count: count) }
}

extension PCMBuffer {
    /// The address of the first sample, valid while any copy of this buffer is alive. For
    /// render threads, which must not retain or release objects per period.
    public var unsafeBaseAddress: UnsafePointer<Float> {
        UnsafePointer(storage.base + startFrame * format.channelCount)
    }

    /// An identity for the storage this buffer shares, equal for all its copies and slices.
    public var storageIdentifier: ObjectIdentifier { ObjectIdentifier(storage) }

    /// A weak handle on the storage, to learn later whether anything still holds it.
    public var storageReference: WeakStorageReference { WeakStorageReference(storage) }
}

/// A weak reference to a `PCMBuffer`'s storage.
public struct WeakStorageReference: @unchecked Sendable {
    // Sendable: the referent is immutable and Sendable; the weak slot is only read.
    private weak var storage: PCMStorage?
    init(_ storage: PCMStorage) { self.storage = storage }
    /// Whether some buffer still holds the storage.
    public var isAlive: Bool { storage != nil }
}
