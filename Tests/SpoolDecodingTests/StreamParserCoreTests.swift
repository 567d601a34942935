import Foundation
import SpoolCore
import Testing
@testable import SpoolDecoding

/// What every stream parser shares, whatever the container: the bytes it holds, the order it
/// reports properties in, the containers it tells apart, the calls it refuses, and the
/// decoder's trims.
@Suite("Stream parser core")
struct StreamParserCoreTests {
    // MARK: - StreamInput

    @Test func aSkipPastWhatIsHeldDropsTheBytesAsTheyArrive() throws {
        var input = StreamInput()
        [UInt8](0..<10).withUnsafeBytes { input.append($0) }
        input.consume(2)
        #expect(input.offset == 2 && input.count == 8)
        input.skip(20)  // 8 held, 12 still to come
        #expect(input.count == 0 && input.offset == 22 && input.pendingSkip == 12)
        [UInt8](10..<30).withUnsafeBytes { input.append($0) }
        #expect(input.pendingSkip == 0)
        #expect(Array(input.held) == Array(22..<30))
        #expect(input.offset == 22)
        #expect(input.take(3) == [22, 23, 24])
        #expect(input.offset == 25)
        input.restart(at: 1_000)
        #expect(input.count == 0 && input.offset == 1_000 && input.pendingSkip == 0)
        #expect(input.peek(1) == nil)
    }

    @Test func peekNeverReachesPastWhatIsHeld() {
        var input = StreamInput()
        [UInt8](repeating: 7, count: 4).withUnsafeBytes { input.append($0) }
        #expect(input.peek(4) != nil)
        #expect(input.peek(5) == nil)
        #expect(input.peek(2, from: 3) == nil)
        #expect(input.peek(1, from: -1) == nil)
        #expect(input.peek(-1) == nil)
        #expect(input.peek(Int.max, from: Int.max) == nil)
    }

    // MARK: - Reporting order

    @Test func propertiesSetInAnyOrderAreReportedInTheDocumentedOneBeforePackets() throws {
        var events = StreamEvents(properties: StreamProperties())
        events.set(.duration, \.duration, StreamDuration(frames: 10, seconds: 1, basis: .frameCount))
        events.set(.bitRate, \.bitRate, 128_000)
        events.set(.fileFormat, \.fileFormat, .mp3)
        events.set(.dataOffset, \.dataOffset, 0)
        events.set(.bitRate, \.bitRate, 128_000)  // unchanged: once
        #expect(events.takeEvents().isEmpty, "nothing is reported before packets begin")
        events.beginPackets()
        events.packet(StreamPacket(byteOffset: 0, bytes: [1], frameCount: 1, startFrame: 0))
        events.set(.bitRate, \.bitRate, 130_000)
        let order = events.takeEvents().map { event -> String in
            switch event {
            case .property(let property): property.rawValue
            case .packet: "packet"
            }
        }
        #expect(order == ["fileFormat", "dataOffset", "bitRate", "duration", "readyToProducePackets", "packet", "bitRate"])
    }

    // MARK: - Telling containers apart

    @Test func hintsNameContainersByExtensionOrMIMEType() {
        #expect(StreamSniffer.format(hint: "MP3") == .mp3)
        #expect(StreamSniffer.format(hint: "song.ogg") == .oggVorbis)
        #expect(StreamSniffer.format(hint: "audio/mpeg") == .mp3)
        #expect(StreamSniffer.format(hint: "audio/ogg; codecs=opus") == .oggVorbis)
        #expect(StreamSniffer.format(hint: "audio/flac") == .flac)
        #expect(StreamSniffer.format(hint: "x-unknown") == nil)
    }

    @Test func noBytesAtAllIsEmptyInput() throws {
        let parser = StreamParser { _ in }
        let error = try #require(throws: AudioError.self) { try parser.finish() }
        #expect(error.code == .emptyInput)
    }

    @Test(arguments: ["broken/random.bin", "broken/text.mp3"])
    func bytesOfNoContainerAreUnsupportedInEveryPieceSize(_ name: String) throws {
        let bytes = try StreamFeeding.bytes(Fixtures.path(name))
        for pieces in [Pieces.whole, .random(seed: 3, maximum: 300)] {
            let error = try #require(throws: AudioError.self) { _ = try StreamFeeding.record(bytes, pieces) }
            #expect(error.code == .unsupportedFormat, "\(name) \(pieces): \(error)")
            #expect(error.message.contains("begins"), "the message shows the first bytes: \(error.message)")
        }
    }

    @Test func anOggStreamOfAnotherCodecIsRefusedByName() throws {
        let bytes = try StreamFeeding.bytes(Fixtures.path("ogg/flac-48000-stereo.oga"))
        let error = try #require(throws: AudioError.self) { _ = try StreamFeeding.record(bytes, .single) }
        #expect(error.code == .unsupportedFormat)
        #expect(error.message.contains("FLAC"), "\(error.message)")
    }

    @Test func aParserThatFailedRefusesMoreBytesWithTheSameError() throws {
        let parser = StreamParser { _ in }
        let garbage = [UInt8](repeating: 0x55, count: StreamSniffer.searchLimit + 16)
        let first = try #require(throws: AudioError.self) { try parser.parse(garbage) }
        let again = try #require(throws: AudioError.self) { try parser.parse([0x49, 0x44, 0x33]) }
        #expect(first.code == .unsupportedFormat && again.code == first.code && again.message == first.message)
    }

    @Test func aParserFinishedRefusesMoreBytes() throws {
        let bytes = try StreamFeeding.bytes(Fixtures.path("broken/text.mp3"))
        let parser = StreamParser { _ in }
        _ = try? parser.parse(bytes)
        _ = try? parser.finish()
        #expect(throws: AudioError.self) { try parser.parse([0]) }
    }

    @Test(arguments: [Double.nan, -.infinity, .infinity, -1, -1e-9])
    func aSeekToNoTimeIsAnInvalidParameter(_ seconds: Double) throws {
        let parser = StreamParser { _ in }
        let error = try #require(throws: AudioError.self) { _ = try parser.seek(toTime: seconds) }
        #expect(error.code == .invalidParameter)
    }

    @Test func aSeekBeforeThePacketsIsInTheWrongState() throws {
        let parser = StreamParser { _ in }
        try parser.parse([0x49, 0x44])
        let error = try #require(throws: AudioError.self) { _ = try parser.seek(toTime: 1) }
        #expect(error.code == .invalidState)
    }

    @Test func leadingID3v2TagsClaimingMoreThanTheStreamAreSkippedNotHeld() throws {
        // A tag claiming 256 MiB, then the stream ends: the parser holds at most the tag's
        // text limit, and says what is wrong.
        var bytes: [UInt8] = Array("ID3".utf8) + [3, 0, 0, 0x7F, 0x7F, 0x7F, 0x7F]
        bytes += [UInt8](repeating: 0, count: 100)
        let parser = StreamParser { _ in }
        try parser.parse(bytes)
        #expect(throws: AudioError.self) { try parser.finish() }
    }

    // MARK: - StreamDecoder's trims

    /// A codec whose frame `n` (untrimmed, counted from its last reset) is the value `n`.
    final class CountingCodec: StreamPacketDecoder {
        var next = 0
        var resets = 0
        func decode(_ packet: StreamPacket, into output: inout [Float]) throws -> Int {
            if let start = packet.startFrame { next = start }
            for frame in next..<(next + packet.frameCount) { output.append(Float(frame)) }
            next += packet.frameCount
            return packet.frameCount
        }
        func reset() { resets += 1 }
        var warnings: [DecodeWarning] { [] }
    }

    static func packets(_ counts: [Int], from start: Int = 0) -> [StreamPacket] {
        var frame = start
        return counts.map { count in
            defer { frame += count }
            return StreamPacket(byteOffset: frame, bytes: [], frameCount: count, startFrame: frame)
        }
    }

    @Test func primingAndPaddingAreTrimmedAcrossPackets() throws {
        let format = try AudioFormat(sampleRate: 8_000, channelCount: 1)
        let decoder = StreamDecoder(format: format, codec: CountingCodec(),
                                    packetTableInfo: StreamPacketTableInfo(primingFrames: 150, remainderFrames: 70, validFrames: 180))
        var output: [Float] = []
        for packet in Self.packets([100, 100, 100, 100]) { try decoder.decode([packet], into: &output) }
        #expect(output == (150..<330).map(Float.init))
        #expect(decoder.position == 180)
    }

    @Test func anExactSeekDropsTheFramesBeforeItsTargetAndResetsTheCodec() throws {
        let format = try AudioFormat(sampleRate: 8_000, channelCount: 1)
        let codec = CountingCodec()
        let decoder = StreamDecoder(format: format, codec: codec,
                                    packetTableInfo: StreamPacketTableInfo(primingFrames: 10, remainderFrames: 0, validFrames: nil))
        decoder.seek(to: StreamSeekPoint(byteOffset: 0, frame: 190, targetFrame: 205, isEstimated: false))
        #expect(codec.resets == 1)
        let output = try decoder.decode(Self.packets([100], from: 200))
        #expect(output.first == 215 && output.count == 85, "frame 205 after 10 frames of priming is untrimmed 215")
        #expect(decoder.position == 290)
    }
}
