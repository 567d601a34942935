import SpoolCore

/// The bytes fed to a `StreamParser` and not yet consumed, with their place in the stream.
///
/// Only bytes that were fed are ever here: `append` copies exactly what it is given. A format
/// parser looks at what is held, consumes what it has used and asks for more by returning;
/// `skip` drops bytes that have not arrived yet (a tag's body, a chunk that is not audio) as
/// they come, so that a header claiming gigabytes never makes the parser hold them.
struct StreamInput {
    /// Most bytes held at once: a format parser that needs more than this for one header or
    /// packet is given an error instead.
    static let limit = 16 << 20

    private var storage: [UInt8] = []
    private var head = 0
    /// The stream offset of the first byte held.
    private(set) var offset = 0
    /// Bytes still to drop as they arrive.
    private(set) var pendingSkip = 0
    /// No more bytes will come (`StreamParser.finish()`).
    var isFinished = false

    /// Bytes held.
    var count: Int { storage.count - head }

    /// The held byte `index` bytes from the first; `index` must be below `count`.
    subscript(index: Int) -> UInt8 { storage[head + index] }

    /// The first `count` held bytes, or nil when fewer are held.
    func peek(_ count: Int, from start: Int = 0) -> ArraySlice<UInt8>? {
        guard start >= 0, count >= 0, start <= self.count - count else { return nil }
        return storage[(head + start)..<(head + start + count)]
    }

    /// Every held byte.
    var held: ArraySlice<UInt8> { storage[head...] }

    /// Calls `body` with the held bytes, for a loop over many of them.
    func withHeld<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
        try storage.withUnsafeBufferPointer { try body(UnsafeBufferPointer(rebasing: $0[head...])) }
    }

    /// Removes and returns the first `count` held bytes (`count` at most `self.count`).
    mutating func take(_ count: Int) -> [UInt8] {
        let taken = Array(storage[head..<(head + count)])
        consume(count)
        return taken
    }

    /// Drops the first `count` held bytes (`count` at most `self.count`).
    mutating func consume(_ count: Int) {
        precondition(count >= 0 && count <= self.count, "consumed more than held")
        head += count
        offset += count
    }

    /// Drops `count` bytes: those held now and, for the rest, the next ones to arrive.
    mutating func skip(_ count: Int) {
        let now = min(count, self.count)
        consume(now)
        pendingSkip += count - now
        offset += count - now
    }

    /// Adds fed bytes, less any still to be skipped.
    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        var rest = bytes
        if pendingSkip > 0 {
            let dropped = min(pendingSkip, rest.count)
            pendingSkip -= dropped
            rest = UnsafeRawBufferPointer(rebasing: rest[dropped...])
        }
        guard !rest.isEmpty else { return }
        compact()
        storage.append(contentsOf: rest)
    }

    /// Frees the consumed front of the storage once it is most of it.
    mutating func compact() {
        guard head > 0, head >= storage.count / 2 || head > 1 << 16 else { return }
        storage.removeSubrange(0..<head)
        head = 0
    }

    /// Forgets everything held: the next byte fed is the stream's byte `offset`.
    mutating func restart(at offset: Int) {
        storage.removeAll(keepingCapacity: true)
        head = 0
        pendingSkip = 0
        self.offset = offset
        isFinished = false
    }
}

/// Everything a format parser found during one `parse` call, in order.
struct StreamEvents {
    enum Event {
        case property(StreamProperty)
        case packet(StreamPacket)
    }

    private(set) var properties: StreamProperties
    private(set) var events: [Event] = []
    /// Properties set before `readyToProducePackets`, reported together in the documented order.
    private var unreported: Set<StreamProperty> = []

    init(properties: StreamProperties) { self.properties = properties }

    /// Sets a property; reports it when its value changed (before `beginPackets()`, at that call).
    mutating func set<Value: Equatable>(_ property: StreamProperty, _ path: WritableKeyPath<StreamProperties, Value>, _ value: Value) {
        guard properties[keyPath: path] != value else { return }
        properties[keyPath: path] = value
        if properties.readyToProducePackets {
            events.append(.property(property))
        } else {
            unreported.insert(property)
        }
    }

    /// Reports every property set so far in the documented order, then `readyToProducePackets`.
    mutating func beginPackets() {
        guard !properties.readyToProducePackets else { return }
        for property in StreamProperty.allCases where unreported.contains(property) {
            events.append(.property(property))
        }
        unreported = []
        properties.readyToProducePackets = true
        events.append(.property(.readyToProducePackets))
    }

    /// A packet; only after `beginPackets()`.
    mutating func packet(_ packet: StreamPacket) {
        precondition(properties.readyToProducePackets, "a packet before readyToProducePackets")
        events.append(.packet(packet))
    }

    mutating func takeEvents() -> [Event] {
        defer { events = [] }
        return events
    }
}

/// The properties a stream parser has learnt, read with `StreamParser`'s accessors.
struct StreamProperties: Equatable {
    var fileFormat: StreamFileFormat?
    var dataFormat: StreamDataFormat?
    var magicCookie: [UInt8]?
    var tags = AudioTags()
    var dataOffset: Int?
    var audioDataByteCount: Int?
    var audioDataPacketCount: Int?
    var packetTableInfo: StreamPacketTableInfo?
    var bitRate: Int?
    var maximumPacketSize: Int?
    var duration: StreamDuration?
    var readyToProducePackets = false
}

/// One container's parser, driven by `StreamParser`.
protocol StreamFormatParser {
    /// Parses what `input` holds; returns when it needs bytes that have not come yet.
    /// - Throws: `AudioError` for bytes that cannot be parsed and cannot be skipped.
    mutating func parse(_ input: inout StreamInput, _ events: inout StreamEvents) throws

    /// The stream has ended (`input.isFinished`): delivers what is still held and makes
    /// the counts that the end decides exact.
    mutating func finish(_ input: inout StreamInput, _ events: inout StreamEvents) throws

    /// Where to feed from to play from `frame` (after gapless trimming), from what has been parsed.
    /// - Throws: `AudioError.Code.unsupported` where the stream has nothing to seek by.
    func seekPoint(toFrame frame: Int, _ properties: StreamProperties) throws -> StreamSeekPoint

    /// The next bytes are not the ones after the last (`point` says where they come from,
    /// when they follow a seek): forgets any packet part-assembled and finds the next packet.
    mutating func discontinuity(at point: StreamSeekPoint?)

    /// Damage found in the container and gone past (`StreamParser.warnings`).
    var warnings: [DecodeWarning] { get }

    /// The Vorbis headers of the stream's first link as the parser checked them, so that a
    /// decoder made from the parser need not check them again; nil for other formats.
    var checkedVorbisHeaders: VorbisStreamHeaders? { get }
}

extension StreamFormatParser {
    /// Damage the parser found in the container and went past (bytes that are no page,
    /// lost pages, a stream cut short), as the file decoders report it; none by default.
    var warnings: [DecodeWarning] { [] }

    var checkedVorbisHeaders: VorbisStreamHeaders? { nil }
}
