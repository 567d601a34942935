import Foundation
import SpoolBufferQueue
import SpoolCore
import SpoolOutput
import SpoolOpenAL
import Synchronization
import Testing

/// The back-ends the conformance suite runs every behaviour on. A new back-end joins the
/// suite by adding a case here and its rig below.
public enum Backend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case queue
    case openAL

    public var testDescription: String { rawValue }
}

/// One back-end rendering offline: the buffer queue on an `OfflineDevice`, OpenAL on a
/// loopback device. Every render runs the back-end's callbacks on this thread, so each test
/// is deterministic.
public final class Rig: Sendable {
    public let kind: Backend
    public let backend: any PlaybackBackend
    public let renderer: any OfflineRendering & Sendable
    /// Host time of frame 0 of the rendered timeline.
    public let hostTimeBase: UInt64

    public init(_ kind: Backend, rate: Double = 48_000, periodFrames: Int = 256) throws {
        self.kind = kind
        let configuration = OutputConfiguration(sampleRate: rate, channelCount: 2, periodFrames: periodFrames, periodCount: 2)
        switch kind {
        case .queue:
            let device = try OfflineDevice(configuration: configuration)
            backend = try BufferQueueBackend(device: device)
            renderer = device
            hostTimeBase = device.hostTimeBase
        case .openAL:
            let device = try OpenALDevice(.loopback(configuration), sourceLimit: 16)
            backend = OpenALBackend(device: device)
            renderer = device
            hostTimeBase = device.hostTimeBase
        }
    }

    public var rate: Double { backend.outputFormat.sampleRate }

    /// Renders `frames` stereo frames.
    public func render(_ frames: Int) throws -> [Float] { try renderer.render(frames: frames).samples }

    /// Renders in periods until `done()` holds (checked after each), at most `limit` frames.
    /// - Returns: Everything rendered.
    public func render(until done: () -> Bool, limit: Int, chunk: Int = 256) throws -> [Float] {
        var out: [Float] = []
        var rendered = 0
        while !done() && rendered < limit {
            out += try render(chunk)
            rendered += chunk
        }
        return out
    }

    /// The host time at which frame `frame` of the rendered timeline is heard.
    public func hostTime(ofFrame frame: Int) -> UInt64 {
        hostTimeBase + UInt64((Double(frame) * 1e9 / rate).rounded(.down))
    }

    public func voice(_ format: AudioFormat) throws -> any PlaybackVoice { try backend.makeVoice(format: format) }
}

/// What a voice reported, in order: consumed buffers and finishes, with the thread each ran on.
public final class Recorder: Sendable {
    public enum Event: Equatable, Sendable {
        case consumed(ObjectIdentifier)
        case finished(String)
    }

    private let events = Locked<[Event]>([])
    private let threads = Locked<Set<String>>([])

    public init(_ voice: any PlaybackVoice) {
        voice.addBufferConsumedHandler { [weak self] buffer in
            self?.events.withLock { $0.append(.consumed(buffer.storageIdentifier)) }
            self?.noteThread()
        }
        voice.addFinishedHandler { [weak self] finish in
            self?.events.withLock { $0.append(.finished(Self.name(finish))) }
            self?.noteThread()
        }
    }

    public static func name(_ finish: VoiceFinish) -> String {
        switch finish {
        case .playedOut: "playedOut"
        case .stopped: "stopped"
        case .disposed: "disposed"
        case .ended(let error): "ended(\(error.code))"
        }
    }

    private func noteThread() {
        let name = currentThreadName()
        threads.withLock { _ = $0.insert(name) }
    }

    public var log: [Event] { events.withLock { $0 } }
    public var consumed: [ObjectIdentifier] {
        log.compactMap { if case .consumed(let id) = $0 { id } else { nil } }
    }
    public var finishes: [String] {
        log.compactMap { if case .finished(let name) = $0 { name } else { nil } }
    }
    public var threadNames: Set<String> { threads.withLock { $0 } }
}

/// Stereo frames that carry their own index through any gain: frame k is
/// ((k + 1) / 2^17, 0.5), so left / right = (k + 1) / 2^16 whatever gain both channels share.
public func identityFrames(_ range: Range<Int>) -> [Float] {
    var out: [Float] = []
    out.reserveCapacity(range.count * 2)
    for k in range {
        out.append(Float(k + 1) / 131_072)
        out.append(0.5)
    }
    return out
}

/// A buffer of identity frames (see `identityFrames`) at 48 kHz stereo.
public func identityBuffer(_ range: Range<Int>) throws -> PCMBuffer {
    try PCMBuffer(format: stereo48, samples: identityFrames(range))
}

/// The index each output frame carries (see `identityFrames`), nil where it is silent.
public func decodeIdentity(_ samples: [Float]) -> [Int?] {
    stride(from: 0, to: samples.count - 1, by: 2).map { i in
        let right = samples[i + 1]
        guard right != 0 else { return nil }
        return Int((samples[i] / right * 65_536).rounded()) - 1
    }
}

