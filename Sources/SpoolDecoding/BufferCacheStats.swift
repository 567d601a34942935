import Foundation
import SpoolCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What a `BufferCache` has done and holds, read at one instant.
///
/// `NSCache` keeps no such figures; these are what sizing a budget needs.
public struct BufferCacheStats: Sendable, Equatable, CustomStringConvertible {
    /// Requests answered from memory without decoding.
    public var hits: Int
    /// Requests that found nothing ready: each started a decode or waited for one in flight.
    public var misses: Int
    /// Items dropped, least recently used first, to stay within the budget.
    public var evictions: Int
    /// Items dropped because they went stale (a rewritten file, a re-registered asset) or
    /// were removed on request.
    public var invalidations: Int
    /// Items cached now.
    public var itemCount: Int
    /// Bytes of decoded samples the cache holds now (each distinct storage counted once).
    public var bytesHeld: Int
    /// The most bytes the cache has held at once.
    public var peakBytesHeld: Int
    /// Bytes of audio this cache decoded and no longer holds (evicted, stale, or too large
    /// to keep) that something else — a player — still keeps alive.
    public var bytesInUseElsewhere: Int
    /// The budget fixed at creation.
    public var budgetBytes: Int
    /// Decoded items larger than the whole budget: returned to the caller, never kept.
    public var oversizedItems: Int
    /// Decodes run (successful or not); concurrent requests for one key share one.
    public var decodeCount: Int
    /// Decodes that threw.
    public var failedDecodes: Int
    /// Total seconds spent decoding.
    public var decodeSeconds: Double
    /// Bytes of encoded data registered by name (not counted against the budget).
    public var registeredDataBytes: Int

    /// All the figures on one line, for logs.
    public var description: String {
        "\(itemCount) items, \(bytesHeld)/\(budgetBytes) bytes held (peak \(peakBytesHeld)), "
            + "\(bytesInUseElsewhere) in use elsewhere; \(hits) hits, \(misses) misses, "
            + "\(evictions) evictions, \(invalidations) invalidations, \(oversizedItems) oversized; "
            + "\(decodeCount) decodes (\(failedDecodes) failed) in "
            + String(format: "%.3f", decodeSeconds) + " s"
    }
}
