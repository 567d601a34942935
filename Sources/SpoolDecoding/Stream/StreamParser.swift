import Foundation
import SpoolCore

/// Parses an audio stream from bytes that arrive in any pieces, as Apple's AudioFileStream
/// does: properties are reported as they are learnt, then packets.
///
/// The program reads the bytes itself (from a socket, a pipe, anywhere) and feeds them with
/// `parse(_:discontinuity:)` in whatever pieces arrive, down to one byte; `finish()` says
/// the stream has ended. The parser holds only the bytes of the header or packet it is
/// assembling, never more than what was fed, and never reads past the end of what it is given.
///
/// Formats: MP3 (MPEG-1, 2 and 2.5, layers 1 to 3, ID3v2 ahead and tags behind), Ogg Vorbis
/// and Ogg Opus, WAV, AIFF, AIFF-C, CAF and FLAC. `typeHint` (a file extension or MIME type)
/// only breaks ties: the bytes decide.
///
/// `duration` follows one rule: exact from a frame count the stream states (a Xing/LAME or
/// VBRI frame count, FLAC's STREAMINFO, a PCM chunk's size, a CAF packet table, the last
/// Ogg granule position); exact from the byte count and bit rate of a constant-bit-rate MP3;
/// otherwise an estimate that says it is one (`StreamDuration.isEstimated`) and is refined
/// as packets arrive. `seek(toTime:)` is exact for PCM, FLAC with a seek table (to the
/// frame), CBR MP3 and wherever every packet so far has been seen, and an estimate through
/// the table of contents of a VBR MP3's Xing or VBRI frame.
///
/// A parser is used from one thread at a time; its callbacks run on that thread, inside
/// `parse` and `finish`. The closest Apple calls are `AudioFileStreamOpen`,
/// `AudioFileStreamParseBytes`, `AudioFileStreamGetProperty` and `AudioFileStreamSeek`.
public final class StreamParser {
    /// Called with each property as it is learnt or changes.
    public typealias PropertyListener = (StreamProperty) -> Void
    /// Called with the packets parsed from the bytes of one `parse` call.
    public typealias PacketsHandler = ([StreamPacket]) -> Void

    private var input = StreamInput()
    private var sniffer: StreamSniffer
    private var format: (any StreamFormatParser)?
    private var properties = StreamProperties()
    private var lastSeek: StreamSeekPoint?
    private var failure: AudioError?
    private var finished = false
    private let propertyListener: PropertyListener
    private let packetsHandler: PacketsHandler

    /// Opens a parser (`AudioFileStreamOpen`).
    /// - Parameters:
    ///   - typeHint: A file extension (`mp3`, `ogg`, `wav`, …) or MIME type, used only when
    ///     the bytes could be more than one container.
    ///   - propertyListener: Told each property as it is learnt.
    ///   - packets: Given the packets each `parse` call completes.
    public init(typeHint: String? = nil, propertyListener: @escaping PropertyListener = { _ in },
                packets: @escaping PacketsHandler) {
        sniffer = StreamSniffer(hint: typeHint)
        self.propertyListener = propertyListener
        packetsHandler = packets
    }

    // MARK: - Feeding

    /// Parses the next bytes of the stream (`AudioFileStreamParseBytes`).
    ///
    /// - Parameters:
    ///   - bytes: The bytes that follow the last ones fed, or, with `discontinuity`, the bytes
    ///     from the `byteOffset` of the last `seek(toTime:)` (or from wherever the stream
    ///     went on after a gap, when there was no seek).
    ///   - discontinuity: These bytes do not follow the last ones: any packet being
    ///     assembled is dropped and the parser finds the next packet in them.
    /// - Throws: `AudioError` naming what cannot be parsed; the parser then refuses more
    ///   bytes with the same error. `.invalidState` after `finish()`.
    public func parse(_ bytes: UnsafeRawBufferPointer, discontinuity: Bool = false) throws {
        try checkUsable()
        // After a seek that opened a finished stream again, the next bytes always follow it.
        if discontinuity || input.isFinished {
            input.restart(at: lastSeek?.byteOffset ?? input.offset + input.count)
            format?.discontinuity(at: lastSeek)
        }
        lastSeek = nil
        input.append(bytes)
        try run { format, input, events in try format.parse(&input, &events) }
    }

    /// Parses the next bytes of the stream.
    public func parse(_ bytes: some Sequence<UInt8>, discontinuity: Bool = false) throws {
        let copied = Array(bytes)
        try copied.withUnsafeBytes { try parse($0, discontinuity: discontinuity) }
    }

    /// Says the stream has ended: the last packet is delivered and the counts the end
    /// decides (an Ogg stream's last granule, an MP3's frames) become exact.
    /// - Throws: `.emptyInput` when nothing was fed, `.truncated` when the stream ends
    ///   before its first packet, or the error that stopped parsing.
    public func finish() throws {
        try checkUsable()
        input.isFinished = true
        try run { format, input, events in
            try format.parse(&input, &events)
            try format.finish(&input, &events)
        }
        finished = true
        if !properties.readyToProducePackets {
            throw AudioError(.truncated, "the stream ended before its first packet")
        }
    }

    // MARK: - Properties

    /// The container, once known (`kAudioFileStreamProperty_FileFormat`).
    public var fileFormat: StreamFileFormat? { properties.fileFormat }
    /// The encoded format (`kAudioFileStreamProperty_DataFormat`).
    public var dataFormat: StreamDataFormat? { properties.dataFormat }
    /// The codec's setup bytes (`kAudioFileStreamProperty_MagicCookieData`): Vorbis's three
    /// header packets, an `OpusHead`, FLAC's STREAMINFO block; nil for MP3 and PCM.
    public var magicCookie: [UInt8]? { properties.magicCookie }

    /// The Vorbis headers the magic cookie carries, as the parser checked them.
    var checkedVorbisHeaders: VorbisStreamHeaders? { format?.checkedVorbisHeaders }
    /// Textual metadata: ID3v2 and ID3v1/APE, Vorbis comments, RIFF INFO, AIFF text chunks.
    public var tags: AudioTags { properties.tags }
    /// Where the first audio packet begins (`kAudioFileStreamProperty_DataOffset`).
    public var dataOffset: Int? { properties.dataOffset }
    /// Bytes of audio packets, when the stream says (`kAudioFileStreamProperty_AudioDataByteCount`).
    public var audioDataByteCount: Int? { properties.audioDataByteCount }
    /// Audio packets, when the stream says or has ended (`kAudioFileStreamProperty_AudioDataPacketCount`).
    public var audioDataPacketCount: Int? { properties.audioDataPacketCount }
    /// Encoder delay and padding (`kAudioFileStreamProperty_PacketTableInfo`).
    public var packetTableInfo: StreamPacketTableInfo? { properties.packetTableInfo }
    /// Bits per second (`kAudioFileStreamProperty_BitRate`): stated, or the average so far.
    public var bitRate: Int? { properties.bitRate }
    /// The largest packet, stated or seen so far (`kAudioFileStreamProperty_MaximumPacketSize`).
    public var maximumPacketSize: Int? { properties.maximumPacketSize }
    /// How long the stream plays, and whether that is exact (see the type's rule).
    public var duration: StreamDuration? { properties.duration }
    /// Whether packets follow (`kAudioFileStreamProperty_ReadyToProducePackets`).
    public var readyToProducePackets: Bool { properties.readyToProducePackets }
    /// Damage found in the container and gone past, as the file decoders report it in their
    /// `warnings`: bytes that are no part of a valid page or frame, lost pages, a stream cut
    /// short. (A codec's own damage is `StreamDecoder.warnings`.)
    public var warnings: [DecodeWarning] { format?.warnings ?? [] }

    // MARK: - Seeking

    /// Where to feed from to play from `seconds` (`AudioFileStreamSeek`).
    ///
    /// Feed the stream's bytes from the returned `byteOffset` with `discontinuity: true`;
    /// packets then resume at `frame`, and a `StreamDecoder` told the point drops the frames
    /// from there up to `targetFrame`.
    /// - Parameter seconds: A time from 0 to the duration.
    /// - Returns: The byte offset, the frame it starts, and whether it is an estimate.
    /// - Throws: `.invalidParameter` for a time that is negative, NaN or infinite;
    ///   `.invalidState` before `readyToProducePackets`; `.outOfRange` past an exact duration;
    ///   `.unsupported` where the stream has nothing to seek by.
    public func seek(toTime seconds: Double) throws -> StreamSeekPoint {
        guard seconds.isFinite, seconds >= 0 else {
            throw AudioError(.invalidParameter, "a stream seek time must be a finite number of seconds from 0; got \(seconds)")
        }
        guard properties.readyToProducePackets, let dataFormat = properties.dataFormat else {
            throw AudioError(.invalidState, "a stream parser can seek only once it is ready to produce packets")
        }
        let frames = seconds * dataFormat.sampleRate
        if let duration = properties.duration, !duration.isEstimated, let total = duration.frames, frames > Double(total) {
            throw AudioError(.outOfRange, "\(seconds) s is past the end of the stream (\(duration.seconds) s)")
        }
        guard frames < Double(Int.max / 2) else {
            throw AudioError(.outOfRange, "\(seconds) s is past the end of any stream")
        }
        return try seek(toFrame: Int(frames.rounded(.down)))
    }

    /// Where to feed from to play from stream frame `frame` (after trimming); as
    /// `seek(toTime:)`. A seek after `finish()` opens the stream again: the bytes fed from
    /// the point on are parsed as after any seek.
    /// - Throws: `.invalidParameter` for a negative frame; otherwise as `seek(toTime:)`.
    public func seek(toFrame frame: Int) throws -> StreamSeekPoint {
        if let failure { throw failure }
        guard frame >= 0 else { throw AudioError(.invalidParameter, "a stream seek frame must be 0 or more; got \(frame)") }
        guard properties.readyToProducePackets, let format else {
            throw AudioError(.invalidState, "a stream parser can seek only once it is ready to produce packets")
        }
        if let duration = properties.duration, !duration.isEstimated, let total = duration.frames, frame > total {
            throw AudioError(.outOfRange, "frame \(frame) is past the end of the stream (\(total) frames)")
        }
        guard frame < Int.max / 4 else { throw AudioError(.outOfRange, "frame \(frame) is past the end of any stream") }
        let point = try format.seekPoint(toFrame: frame, properties)
        lastSeek = point
        finished = false
        return point
    }

    // MARK: - Running the format parser

    private func checkUsable() throws {
        if let failure { throw failure }
        if finished { throw AudioError(.invalidState, "the stream parser was finished; no more bytes can be parsed") }
    }

    private func run(_ step: (inout any StreamFormatParser, inout StreamInput, inout StreamEvents) throws -> Void) throws {
        var events = StreamEvents(properties: properties)
        do {
            defer {
                properties = events.properties
                deliver(events.takeEvents())
            }
            if format == nil {
                guard let made = try sniffer.parser(for: &input) else { return }
                format = made
            }
            // Moved out, not copied: a copy left in `format` would share the parser's
            // growing arrays (an MP3's frame index), and each append would copy them whole.
            guard var parser = format.take() else { return }
            defer { format = parser }
            try step(&parser, &input, &events)
            if input.count > StreamInput.limit {
                throw AudioError(.corruptData, "the stream needs more than \(StreamInput.limit) bytes held for one header or packet")
            }
            input.compact()
        } catch let error as AudioError {
            failure = error
            throw error
        }
    }

    private func deliver(_ events: [StreamEvents.Event]) {
        var packets: [StreamPacket] = []
        for event in events {
            switch event {
            case .packet(let packet):
                packets.append(packet)
            case .property(let property):
                if !packets.isEmpty {
                    packetsHandler(packets)
                    packets = []
                }
                propertyListener(property)
            }
        }
        if !packets.isEmpty { packetsHandler(packets) }
    }
}
