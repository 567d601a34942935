/// What is wrong with a Vorbis header, as a phrase: "codebook 3: …".
struct VorbisHeaderError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Reads a Vorbis packet bit by bit, least significant bit first (Vorbis I specification §2).
struct VorbisBitReader {
    private let bytes: [UInt8]
    /// Bits read so far.
    private(set) var position = 0

    init(_ bytes: [UInt8], skippingBytes: Int = 0) {
        self.bytes = bytes
        position = skippingBytes * 8
    }

    /// Bits left in the packet.
    var remaining: Int { max(0, bytes.count * 8 - position) }

    /// Reads `count` (0…32) bits as an unsigned integer.
    /// - Parameter what: Names the field for the message when the packet ends first.
    @inline(__always)
    mutating func read(_ count: Int, _ what: @autoclosure () -> String) throws(VorbisHeaderError) -> Int {
        guard count >= 0, count <= 32, count <= remaining else { throw VorbisHeaderError("the packet ends inside \(what())") }
        return take(count)
    }

    /// Reads `count` (0…32) bits that the packet holds: eight bytes at once (a setup header
    /// is read a few bits at a time, tens of thousands of times), or byte by byte near its end.
    private mutating func take(_ count: Int) -> Int {
        let first = position >> 3
        let offset = position & 7
        position += count
        return bytes.withUnsafeBufferPointer { buffer in
            let mask = (UInt64(1) << UInt64(count)) &- 1
            if first + 8 <= buffer.count {
                // offset + count ≤ 39 bits: all within the eight bytes loaded.
                let word = UnsafeRawBufferPointer(buffer).loadUnaligned(fromByteOffset: first, as: UInt64.self)
                return Int((UInt64(littleEndian: word) >> UInt64(offset)) & mask)
            }
            var word: UInt64 = 0
            for index in first..<min(buffer.count, first + 8) { word |= UInt64(buffer[index]) << UInt64((index - first) * 8) }
            return Int((word >> UInt64(offset)) & mask)
        }
    }

    mutating func flag(_ what: @autoclosure () -> String) throws(VorbisHeaderError) -> Bool {
        try read(1, what()) == 1
    }

    /// Skips `count` bits (a table Spool does not need), or throws when the packet is shorter.
    mutating func skip(_ count: Int, _ what: @autoclosure () -> String) throws(VorbisHeaderError) {
        guard count >= 0, count <= remaining else { throw VorbisHeaderError("the packet ends inside \(what())") }
        position += count
    }
}

/// ilog(x): the position of the highest set bit, 0 for 0 (Vorbis I specification §9.2.1).
func vorbisILog(_ x: Int) -> Int { x <= 0 ? 0 : Int.bitWidth - x.leadingZeroBitCount }

/// The identification header (Vorbis I specification §4.2.2), checked against its rules.
struct VorbisIdentification: Equatable {
    let channels: Int
    let sampleRate: Int
    let bitrateMaximum: Int
    let bitrateNominal: Int
    let bitrateMinimum: Int
    /// Short and long block sizes in samples (64…8192, short ≤ long).
    let blockSizes: (short: Int, long: Int)

    static func == (a: Self, b: Self) -> Bool {
        a.channels == b.channels && a.sampleRate == b.sampleRate && a.blockSizes == b.blockSizes
    }

    init(packet: [UInt8]) throws(VorbisHeaderError) {
        guard packet.count >= 30, packet.starts(with: [0x01, 0x76, 0x6F, 0x72, 0x62, 0x69, 0x73]) else {
            throw VorbisHeaderError("the identification header is \(packet.count) bytes, not the 30 it must be")
        }
        var bits = VorbisBitReader(packet, skippingBytes: 7)
        let version = try bits.read(32, "the version")
        guard version == 0 else { throw VorbisHeaderError("the Vorbis version is \(version), not 0 (Vorbis I)") }
        channels = try bits.read(8, "the channel count")
        sampleRate = try bits.read(32, "the sample rate")
        func signed(_ raw: Int) -> Int { Int(Int32(truncatingIfNeeded: raw)) }
        bitrateMaximum = signed(try bits.read(32, "the maximum bit rate"))
        bitrateNominal = signed(try bits.read(32, "the nominal bit rate"))
        bitrateMinimum = signed(try bits.read(32, "the minimum bit rate"))
        let short = try bits.read(4, "the block sizes")
        let long = try bits.read(4, "the block sizes")
        let framing = try bits.flag("the framing bit")
        guard channels > 0 else { throw VorbisHeaderError("the identification header declares 0 channels") }
        guard sampleRate > 0 else { throw VorbisHeaderError("the identification header declares a sample rate of 0") }
        guard (6...13).contains(short), (6...13).contains(long), short <= long else {
            throw VorbisHeaderError("the block sizes 2^\(short) and 2^\(long) are not 64…8192 with short ≤ long")
        }
        guard framing else { throw VorbisHeaderError("the identification header's framing bit is not set") }
        blockSizes = (1 << short, 1 << long)
    }
}

/// The setup header (Vorbis I specification §4.2.4), parsed and checked against every
/// constraint the specification puts on it, before libvorbis decodes with it.
///
/// libvorbis 1.3.7 does not check all of them, and one unchecked case is fatal: a codebook
/// whose Huffman tree is over- or underspecified passes header parsing, fails when decoding
/// starts (`ov_read_float` returns `OV_EBADLINK`) and leaves the codebooks half built, with
/// dimension 0; the next decode call divides by that dimension (`res2_inverse`, `_01inverse`:
/// SIGFPE). Spool refuses such a header instead, naming what is wrong.
///
/// Besides the specification's rules, three limits of Spool's bound what libvorbis allocates
/// (it allocates per declared codebook entry, and an ordered codebook declares 2^24 entries
/// in four bytes): 65 536 entries per codebook, 262 144 in all, 2^20 vector values in all.
/// libvorbis's own encoder stays far below them (at most 6 561 entries in a codebook,
/// about 10 000 in all).
struct VorbisSetupHeader {
    /// For each mode, whether it uses the long block.
    let modeIsLong: [Bool]

    static let maximumEntriesPerCodebook = 1 << 16
    static let maximumEntries = 1 << 18
    static let maximumVectorValues = 1 << 20

    private struct Codebook {
        let dimensions: Int
        let entries: Int
        let lookupType: Int
    }

    init(packet: [UInt8], channels: Int) throws(VorbisHeaderError) {
        guard packet.starts(with: [0x05, 0x76, 0x6F, 0x72, 0x62, 0x69, 0x73]) else {
            throw VorbisHeaderError("the third header is not a setup header")
        }
        var bits = VorbisBitReader(packet, skippingBytes: 7)

        // Codebooks (§3.2.1).
        let codebookCount = try bits.read(8, "the codebook count") + 1
        var codebooks: [Codebook] = []
        var totalEntries = 0
        var totalValues = 0
        for index in 0..<codebookCount {
            let book = try Self.codebook(&bits, index: index)
            totalEntries += book.entries
            if book.lookupType != 0 { totalValues += book.entries * book.dimensions }
            guard totalEntries <= Self.maximumEntries else {
                throw VorbisHeaderError("the codebooks declare more than \(Self.maximumEntries) entries in all, Spool's limit")
            }
            guard totalValues <= Self.maximumVectorValues else {
                throw VorbisHeaderError("the codebooks declare more than \(Self.maximumVectorValues) vector values in all, Spool's limit")
            }
            codebooks.append(book)
        }
        func book(_ number: Int, _ user: @autoclosure () -> String) throws(VorbisHeaderError) -> Codebook {
            guard number < codebooks.count else {
                throw VorbisHeaderError("\(user()) uses codebook \(number), but there are only \(codebooks.count)")
            }
            return codebooks[number]
        }
        /// A codebook read in VQ context (a vector per codeword) needs a lookup table and at
        /// least one dimension (§3.3: lookup type 0 in VQ context is an error).
        func vectorBook(_ number: Int, _ user: @autoclosure () -> String) throws(VorbisHeaderError) -> Codebook {
            let b = try book(number, user())
            guard b.lookupType != 0 else {
                throw VorbisHeaderError("\(user()) reads vectors from codebook \(number), which has no lookup table")
            }
            guard b.dimensions > 0 else {
                throw VorbisHeaderError("\(user()) reads vectors from codebook \(number), which has 0 dimensions")
            }
            return b
        }

        // Time domain transforms: placeholders, each must be 0.
        let timeCount = try bits.read(6, "the time count") + 1
        for t in 0..<timeCount {
            guard try bits.read(16, "time transform \(t)") == 0 else {
                throw VorbisHeaderError("time transform \(t) is not 0")
            }
        }

        // Floors (§6.2.1, §7.2.2).
        let floorCount = try bits.read(6, "the floor count") + 1
        for f in 0..<floorCount {
            let type = try bits.read(16, "the type of floor \(f)")
            switch type {
            case 0:
                let order = try bits.read(8, "floor \(f)")
                let rate = try bits.read(16, "floor \(f)")
                let barkMapSize = try bits.read(16, "floor \(f)")
                _ = try bits.read(6, "floor \(f)")   // amplitude bits
                _ = try bits.read(8, "floor \(f)")   // amplitude offset
                let books = try bits.read(4, "floor \(f)") + 1
                // The curve divides by the rate's Bark value and the map size; an order of 0
                // has no coefficients to read.
                guard order > 0, rate > 0, barkMapSize > 0 else {
                    throw VorbisHeaderError("floor \(f) (type 0) has order \(order), rate \(rate), Bark map size \(barkMapSize); each must be positive")
                }
                for _ in 0..<books {
                    _ = try vectorBook(try bits.read(8, "floor \(f)'s books"), "floor \(f)")
                }
            case 1:
                let partitions = try bits.read(5, "floor \(f)")
                var partitionClasses: [Int] = []
                for _ in 0..<partitions { partitionClasses.append(try bits.read(4, "floor \(f)'s partitions")) }
                let classCount = (partitionClasses.max() ?? -1) + 1
                var classDimensions: [Int] = []
                for c in 0..<classCount {
                    classDimensions.append(try bits.read(3, "floor \(f)'s class \(c)") + 1)
                    let subclasses = try bits.read(2, "floor \(f)'s class \(c)")
                    if subclasses > 0 {
                        _ = try book(try bits.read(8, "floor \(f)'s class \(c)"), "floor \(f)'s class \(c)")
                    }
                    for _ in 0..<(1 << subclasses) {
                        let number = try bits.read(8, "floor \(f)'s class \(c)") - 1
                        if number >= 0 { _ = try book(number, "floor \(f)'s class \(c)") }
                    }
                }
                _ = try bits.read(2, "floor \(f)'s multiplier")
                let rangeBits = try bits.read(4, "floor \(f)'s range bits")
                var xList: Set<Int> = [0, 1 << rangeBits]
                var values = 2
                for p in 0..<partitions {
                    for _ in 0..<classDimensions[partitionClasses[p]] {
                        let x = try bits.read(rangeBits, "floor \(f)'s X list")
                        values += 1
                        // libvorbis (VIF_POSIT) holds at most 65 points; a repeated X makes a
                        // line segment of length 0.
                        guard values <= 65 else { throw VorbisHeaderError("floor \(f) has more than 65 points") }
                        guard xList.insert(x).inserted else {
                            throw VorbisHeaderError("floor \(f) lists the X value \(x) twice")
                        }
                    }
                }
            default:
                throw VorbisHeaderError("floor \(f) has type \(type); Vorbis I has types 0 and 1")
            }
        }

        // Residues (§8.6.1).
        let residueCount = try bits.read(6, "the residue count") + 1
        for r in 0..<residueCount {
            let type = try bits.read(16, "the type of residue \(r)")
            guard type <= 2 else { throw VorbisHeaderError("residue \(r) has type \(type); Vorbis I has types 0, 1 and 2") }
            _ = try bits.read(24, "residue \(r)")   // begin
            _ = try bits.read(24, "residue \(r)")   // end
            let partitionSize = try bits.read(24, "residue \(r)") + 1
            let classifications = try bits.read(6, "residue \(r)") + 1
            let classbookNumber = try bits.read(8, "residue \(r)")
            var cascade: [Int] = []
            for _ in 0..<classifications {
                let low = try bits.read(3, "residue \(r)'s cascade")
                let high = try bits.flag("residue \(r)'s cascade") ? bits.read(5, "residue \(r)'s cascade") : 0
                cascade.append(high << 3 | low)
            }
            for c in 0..<classifications {
                for stage in 0..<8 where cascade[c] & (1 << stage) != 0 {
                    let number = try bits.read(8, "residue \(r)'s books")
                    let b = try vectorBook(number, "residue \(r) (class \(c), pass \(stage))")
                    // Types 0 and 1 read a partition as whole vectors (type 2 is type 1 over
                    // the interleaved channels): the size must be a multiple of the dimension.
                    guard partitionSize % b.dimensions == 0 else {
                        throw VorbisHeaderError("residue \(r)'s partition size \(partitionSize) is not a multiple of the \(b.dimensions) dimensions of its codebook \(number)")
                    }
                }
            }
            // The classbook is read in scalar context, one codeword per `dimensions`
            // classifications: 0 dimensions would never advance (libvorbis divides by it).
            let classbook = try book(classbookNumber, "residue \(r)'s classbook")
            guard classbook.dimensions > 0 else {
                throw VorbisHeaderError("residue \(r)'s classbook \(classbookNumber) has 0 dimensions")
            }
            // classifications^dimensions must not exceed the classbook's entries.
            var combinations = 1
            for _ in 0..<classbook.dimensions {
                combinations *= classifications
                guard combinations <= classbook.entries else {
                    throw VorbisHeaderError("residue \(r)'s \(classifications) classifications in \(classbook.dimensions) dimensions exceed the \(classbook.entries) entries of its classbook \(classbookNumber)")
                }
            }
        }

        // Mappings (§4.2.4.5).
        let mappingCount = try bits.read(6, "the mapping count") + 1
        let channelBits = vorbisILog(channels - 1)
        for m in 0..<mappingCount {
            let type = try bits.read(16, "the type of mapping \(m)")
            guard type == 0 else { throw VorbisHeaderError("mapping \(m) has type \(type); Vorbis I has type 0 only") }
            let submaps = try bits.flag("mapping \(m)") ? bits.read(4, "mapping \(m)") + 1 : 1
            if try bits.flag("mapping \(m)") {
                let steps = try bits.read(8, "mapping \(m)'s coupling") + 1
                for s in 0..<steps {
                    let magnitude = try bits.read(channelBits, "mapping \(m)'s coupling")
                    let angle = try bits.read(channelBits, "mapping \(m)'s coupling")
                    guard magnitude != angle, magnitude < channels, angle < channels else {
                        throw VorbisHeaderError("mapping \(m)'s coupling step \(s) couples channels \(magnitude) and \(angle) of \(channels)")
                    }
                }
            }
            guard try bits.read(2, "mapping \(m)") == 0 else {
                throw VorbisHeaderError("mapping \(m)'s reserved field is not 0")
            }
            if submaps > 1 {
                for c in 0..<channels {
                    let mux = try bits.read(4, "mapping \(m)'s channel map")
                    guard mux < submaps else {
                        throw VorbisHeaderError("mapping \(m) puts channel \(c) in submap \(mux) of \(submaps)")
                    }
                }
            }
            for s in 0..<submaps {
                _ = try bits.read(8, "mapping \(m)")   // unused time configuration
                let floor = try bits.read(8, "mapping \(m)")
                let residue = try bits.read(8, "mapping \(m)")
                guard floor < floorCount else {
                    throw VorbisHeaderError("mapping \(m)'s submap \(s) uses floor \(floor), but there are only \(floorCount)")
                }
                guard residue < residueCount else {
                    throw VorbisHeaderError("mapping \(m)'s submap \(s) uses residue \(residue), but there are only \(residueCount)")
                }
            }
        }

        // Modes (§4.2.4.6).
        let modeCount = try bits.read(6, "the mode count") + 1
        var modeIsLong: [Bool] = []
        for m in 0..<modeCount {
            let long = try bits.flag("mode \(m)")
            let window = try bits.read(16, "mode \(m)")
            let transform = try bits.read(16, "mode \(m)")
            let mapping = try bits.read(8, "mode \(m)")
            guard window == 0, transform == 0 else {
                throw VorbisHeaderError("mode \(m) has window type \(window) and transform type \(transform); both must be 0")
            }
            guard mapping < mappingCount else {
                throw VorbisHeaderError("mode \(m) uses mapping \(mapping), but there are only \(mappingCount)")
            }
            modeIsLong.append(long)
        }
        guard try bits.flag("the framing bit") else { throw VorbisHeaderError("the setup header's framing bit is not set") }
        self.modeIsLong = modeIsLong
    }

    /// One codebook (§3.2.1), with its Huffman tree checked: a codebook must describe a
    /// complete tree, except that one with a single used entry of length 1 is allowed (the
    /// specification's later errata; libvorbis accepts it) and one with no used entry at all
    /// (libvorbis accepts it; it decodes nothing).
    private static func codebook(_ bits: inout VorbisBitReader, index: Int) throws(VorbisHeaderError) -> Codebook {
        let name = "codebook \(index)"
        guard try bits.read(24, name) == 0x564342 else { throw VorbisHeaderError("\(name) lacks its sync pattern") }
        let dimensions = try bits.read(16, name)
        let entries = try bits.read(24, name)
        guard entries <= maximumEntriesPerCodebook else {
            throw VorbisHeaderError("\(name) declares \(entries) entries; Spool's limit is \(maximumEntriesPerCodebook)")
        }
        // Kraft sum of the codeword lengths in units of 2^-32: a complete tree sums to 2^32.
        var kraft: UInt64 = 0
        var used = 0
        var singleLength = 0
        func add(_ length: Int, count: Int = 1) {
            kraft += UInt64(count) << UInt64(32 - length)
            used += count
            singleLength = length
        }
        if try bits.flag(name) {
            // Ordered: runs of entries per length, lengths ascending.
            var entry = 0
            var length = try bits.read(5, name) + 1
            while entry < entries {
                guard length <= 32 else { throw VorbisHeaderError("\(name)'s codeword lengths exceed 32 bits") }
                let count = try bits.read(vorbisILog(entries - entry), name)
                guard count <= entries - entry else {
                    throw VorbisHeaderError("\(name) assigns lengths to more than its \(entries) entries")
                }
                if count > 0 { add(length, count: count) }
                guard kraft <= 1 << 32 else { throw VorbisHeaderError("\(name)'s Huffman tree is overspecified") }
                entry += count
                length += 1
            }
        } else {
            let sparse = try bits.flag(name)
            // Each entry takes at least one bit: refuse a count the packet cannot hold
            // before looping over it.
            guard entries <= bits.remaining else { throw VorbisHeaderError("the packet ends inside \(name)") }
            for _ in 0..<entries {
                if sparse, try !bits.flag(name) { continue }
                add(try bits.read(5, name) + 1)
                guard kraft <= 1 << 32 else { throw VorbisHeaderError("\(name)'s Huffman tree is overspecified") }
            }
        }
        if used > 1 || (used == 1 && singleLength != 1) {
            guard kraft == 1 << 32 else { throw VorbisHeaderError("\(name)'s Huffman tree is underspecified") }
        }

        let lookupType = try bits.read(4, name)
        switch lookupType {
        case 0:
            break
        case 1, 2:
            _ = try bits.read(32, name)   // minimum value
            _ = try bits.read(32, name)   // delta value
            let valueBits = try bits.read(4, name) + 1
            _ = try bits.read(1, name)    // sequence flag
            let values: Int
            if lookupType == 1 {
                guard dimensions > 0 else { throw VorbisHeaderError("\(name) has lookup type 1 and 0 dimensions") }
                values = lookup1Values(entries: entries, dimensions: dimensions)
            } else {
                values = entries * dimensions   // ≤ 2^16 · 2^16
            }
            let (length, overflow) = values.multipliedReportingOverflow(by: valueBits)
            guard !overflow else { throw VorbisHeaderError("the packet ends inside \(name)'s lookup table") }
            try bits.skip(length, "\(name)'s lookup table")
        default:
            throw VorbisHeaderError("\(name) has lookup type \(lookupType); Vorbis I has types 0, 1 and 2")
        }
        return Codebook(dimensions: dimensions, entries: entries, lookupType: lookupType)
    }

    /// The greatest r with r^dimensions ≤ entries (§9.2.3), in integers only.
    static func lookup1Values(entries: Int, dimensions: Int) -> Int {
        func power(_ base: Int) -> Int? {
            var result = 1
            for _ in 0..<dimensions {
                let (next, overflow) = result.multipliedReportingOverflow(by: base)
                if overflow || next > entries { return nil }
                result = next
            }
            return result
        }
        guard entries > 0, dimensions > 0 else { return 0 }
        var low = 0, high = entries
        // Binary search: power(mid) exists (≤ entries) for mid ≤ r and not above.
        while low < high {
            let mid = low + (high - low + 1) / 2
            if power(mid) != nil { low = mid } else { high = mid - 1 }
        }
        return low
    }
}
