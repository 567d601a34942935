import Foundation
import SpoolCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

extension BufferCache {
    /// Encoded data registered under a name.
    struct Asset: Sendable {
        let data: Data
        let typeHint: String?
        let generation: UInt64
    }

    /// A storage the cache holds, and how many items share it.
    struct HeldStorage {
        var itemCount: Int
        let bytes: Int
    }

    /// A storage the cache decoded and let go of, watched to see whether anything keeps it.
    struct ReleasedStorage {
        let reference: WeakStorageReference
        let bytes: Int
    }

    enum Lookup {
        case hit(PCMBuffer)
        case wait(PendingDecode)
        case decode(PendingDecode)
        case absent
    }

    struct State: ~Copyable {
        var recency = RecencyList()
        var index: [Key.Identity: Int] = [:]
        var pending: [Key: PendingDecode] = [:]
        var assets: [String: Asset] = [:]
        var held: [ObjectIdentifier: HeldStorage] = [:]
        var released: [ObjectIdentifier: ReleasedStorage] = [:]
        var releasedPruneThreshold = 64
        var bytesHeld = 0
        var peakBytesHeld = 0
        var nextSequence: UInt64 = 0
        var nextGeneration: UInt64 = 0
        var hits = 0
        var misses = 0
        var evictions = 0
        var invalidations = 0
        var oversizedItems = 0
        var decodeCount = 0
        var failedDecodes = 0
        var decodeSeconds = 0.0

        /// Finds `key`. With `versionIsCurrent`, a cached item of another version is stale and
        /// goes; without it (an old key held by a caller), it stays and the answer is `absent`.
        /// With `startDecode`, a miss registers a pending decode the caller must run.
        mutating func lookup(_ key: Key, versionIsCurrent: Bool, startDecode: Bool) -> Lookup {
            if let slot = index[key.identity] {
                if let buffer = recency.buffer(at: slot, ifVersion: key.version) {
                    recency.touch(slot)
                    hits += 1
                    return .hit(buffer)
                }
                guard versionIsCurrent else { return .absent }
                _ = removeItem(at: slot)
                invalidations += 1
            }
            if let pending = pending[key] {
                misses += 1
                return .wait(pending)
            }
            guard startDecode else {
                if versionIsCurrent { misses += 1 }
                return .absent
            }
            misses += 1
            nextSequence += 1
            let started = PendingDecode(sequence: nextSequence)
            pending[key] = started
            return .decode(started)
        }

        /// Records a finished decode and keeps its result when it fits and is still current.
        /// - Returns: Buffers dropped, to be released after the lock.
        mutating func finish(_ key: Key, _ decode: PendingDecode, _ result: Result<PCMBuffer, any Error>,
                             seconds: Double, budgetBytes: Int) -> [PCMBuffer] {
            if pending[key] === decode { pending[key] = nil }
            decodeCount += 1
            decodeSeconds += seconds
            guard case .success(let buffer) = result else {
                failedDecodes += 1
                return []
            }
            // An asset registered again while it decoded: this audio is of the old data.
            if case .named(let name) = key.identity, case .registration(let generation) = key.version,
               assets[name]?.generation != generation {
                release(buffer)
                return []
            }
            var dropped: [PCMBuffer] = []
            if let slot = index[key.identity] {
                // A decode started later (a newer version of the file) already stored its result.
                guard recency.sequence(at: slot) < decode.sequence else {
                    release(buffer)
                    return []
                }
                dropped += removeItem(at: slot)
                invalidations += 1
            }
            let storage = buffer.storageIdentifier
            let addedBytes = held[storage] == nil ? buffer.storageByteCount : 0
            guard addedBytes <= budgetBytes else {
                oversizedItems += 1
                release(buffer)
                return dropped
            }
            let slot = recency.insert(key: key, buffer: buffer, sequence: decode.sequence)
            index[key.identity] = slot
            held[storage, default: HeldStorage(itemCount: 0, bytes: buffer.storageByteCount)].itemCount += 1
            bytesHeld += addedBytes
            released[storage] = nil
            while bytesHeld > budgetBytes, let oldest = recency.oldest, oldest != slot {
                dropped += removeItem(at: oldest)
                evictions += 1
            }
            peakBytesHeld = max(peakBytesHeld, bytesHeld)
            return dropped
        }

        /// Drops whatever is cached under `identity`.
        /// - Returns: The dropped buffer, to be released after the lock.
        mutating func invalidate(_ identity: Key.Identity) -> [PCMBuffer] {
            guard let slot = index[identity] else { return [] }
            invalidations += 1
            return removeItem(at: slot)
        }

        /// Takes an item out of the recency list and the index, and lets go of its storage
        /// when no other item shares it.
        private mutating func removeItem(at slot: Int) -> [PCMBuffer] {
            guard let (key, buffer) = recency.remove(slot) else { return [] }
            index[key.identity] = nil
            let storage = buffer.storageIdentifier
            if let entry = held[storage] {
                if entry.itemCount > 1 {
                    held[storage]?.itemCount -= 1
                } else {
                    held[storage] = nil
                    bytesHeld -= entry.bytes
                    release(buffer)
                }
            }
            return [buffer]
        }

        /// Starts watching a storage the cache no longer holds.
        private mutating func release(_ buffer: PCMBuffer) {
            guard held[buffer.storageIdentifier] == nil else { return }
            released[buffer.storageIdentifier] = ReleasedStorage(reference: buffer.storageReference,
                                                                 bytes: buffer.storageByteCount)
            if released.count > releasedPruneThreshold {
                pruneReleased()
                releasedPruneThreshold = max(64, 2 * released.count)
            }
        }

        /// Forgets released storages that nothing keeps any more.
        mutating func pruneReleased() {
            released = released.filter { $0.value.reference.isAlive }
        }

        mutating func stats(budgetBytes: Int) -> BufferCacheStats {
            pruneReleased()
            return BufferCacheStats(
                hits: hits, misses: misses, evictions: evictions, invalidations: invalidations,
                itemCount: index.count, bytesHeld: bytesHeld, peakBytesHeld: peakBytesHeld,
                bytesInUseElsewhere: released.values.reduce(0) { $0 + $1.bytes },
                budgetBytes: budgetBytes, oversizedItems: oversizedItems, decodeCount: decodeCount,
                failedDecodes: failedDecodes, decodeSeconds: decodeSeconds,
                registeredDataBytes: assets.values.reduce(0) { $0 + $1.data.count })
        }
    }

    /// Cached items in a doubly linked list over an array, most recently used at the head,
    /// so that a hit moves its item to the front with a few index writes and no hashing.
    struct RecencyList {
        private struct Slot {
            var key: Key?
            var buffer: PCMBuffer?
            var sequence: UInt64 = 0
            var newer = -1
            var older = -1
        }
        private var slots: [Slot] = []
        private var free: [Int] = []
        private var newest = -1
        private var oldestSlot = -1

        /// The least recently used item's slot.
        var oldest: Int? { oldestSlot >= 0 ? oldestSlot : nil }

        func buffer(at slot: Int, ifVersion version: Key.Version) -> PCMBuffer? {
            slots[slot].key?.version == version ? slots[slot].buffer : nil
        }

        func sequence(at slot: Int) -> UInt64 { slots[slot].sequence }

        func key(of identity: Key.Identity, in index: [Key.Identity: Int]) -> Key? {
            index[identity].flatMap { slots[$0].key }
        }

        var identitiesOldestFirst: [Key.Identity] {
            var result: [Key.Identity] = []
            var slot = oldestSlot
            while slot >= 0 {
                if let key = slots[slot].key { result.append(key.identity) }
                slot = slots[slot].newer
            }
            return result
        }

        mutating func insert(key: Key, buffer: PCMBuffer, sequence: UInt64) -> Int {
            let item = Slot(key: key, buffer: buffer, sequence: sequence)
            let slot: Int
            if let reused = free.popLast() {
                slots[reused] = item
                slot = reused
            } else {
                slots.append(item)
                slot = slots.count - 1
            }
            linkAsNewest(slot)
            return slot
        }

        mutating func touch(_ slot: Int) {
            guard slot != newest else { return }
            unlink(slot)
            linkAsNewest(slot)
        }

        /// Empties a slot (so it no longer keeps the storage alive) and returns what it held;
        /// `nil` for a slot already empty, which only occupied slots being indexed rules out.
        mutating func remove(_ slot: Int) -> (Key, PCMBuffer)? {
            guard let key = slots[slot].key, let buffer = slots[slot].buffer else { return nil }
            unlink(slot)
            slots[slot] = Slot()
            free.append(slot)
            return (key, buffer)
        }

        private mutating func linkAsNewest(_ slot: Int) {
            slots[slot].older = newest
            slots[slot].newer = -1
            if newest >= 0 { slots[newest].newer = slot }
            newest = slot
            if oldestSlot < 0 { oldestSlot = slot }
        }

        private mutating func unlink(_ slot: Int) {
            let newer = slots[slot].newer
            let older = slots[slot].older
            if newer >= 0 { slots[newer].older = older } else { newest = older }
            if older >= 0 { slots[older].newer = newer } else { oldestSlot = newer }
            slots[slot].newer = -1
            slots[slot].older = -1
        }
    }
}
