import Foundation
import SpoolBufferQueue
import SpoolCore
import SpoolOutput
import SpoolOpenAL
import Synchronization
import Testing

/// The back-ends the conformance suite runs every behaviour on. A new back-end joins the
/// suite by adding a case here and its rig below.
enum Backend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case queue
    case openAL

    var testDescription: String { rawValue }
}

/// One back-end rendering offline: the buffer queue on an `OfflineDevice`, OpenAL on a
/// loopback device. Every render runs the back-end's callbacks on this thread, so each test
/// is deterministic.
final class Rig: Sendable {
    let kind: Backend
    let backend: any PlaybackBackend
    let renderer: any OfflineRendering & Sendable
    /// Host time of frame 0 of the rendered timeline.
    let hostTimeBase: UInt64

    init(_ kind: Backend, rate: Double = 48_000, periodFrames: Int = 256) throws {
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

    var rate: Double { backend.outputFormat.sampleRate }

    /// Renders `frames` stereo frames.
    func render(_ frames: Int) throws -> [Float] { try renderer.render(frames: frames).samples }

    /// Renders in periods until `done()` holds (checked after each), at most `limit` frames.
    /// - Returns: Everything rendered.
    func render(until done: () -> Bool, limit: Int, chunk: Int = 256) throws -> [Float] {
        var out: [Float] = []
        var rendered = 0
        while !done() && rendered < limit {
            out += try render(chunk)
            rendered += chunk
        }
        return out
    }

    /// The host time at which frame `frame` of the rendered timeline is heard.
    func hostTime(ofFrame frame: Int) -> UInt64 {
        hostTimeBase + UInt64((Double(frame) * 1e9 / rate).rounded(.down))
    }

    func voice(_ format: AudioFormat) throws -> any PlaybackVoice { try backend.makeVoice(format: format) }
}

/// What a voice reported, in order: consumed buffers and finishes, with the thread each ran on.
final class Recorder: Sendable {
    enum Event: Equatable, Sendable {
        case consumed(ObjectIdentifier)
        case finished(String)
    }

    private let events = Locked<[Event]>([])
    private let threads = Locked<Set<String>>([])

    init(_ voice: any PlaybackVoice) {
        voice.addBufferConsumedHandler { [weak self] buffer in
            self?.events.withLock { $0.append(.consumed(buffer.storageIdentifier)) }
            self?.noteThread()
        }
        voice.addFinishedHandler { [weak self] finish in
            self?.events.withLock { $0.append(.finished(Self.name(finish))) }
            self?.noteThread()
        }
    }

    static func name(_ finish: VoiceFinish) -> String {
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

    var log: [Event] { events.withLock { $0 } }
    var consumed: [ObjectIdentifier] {
        log.compactMap { if case .consumed(let id) = $0 { id } else { nil } }
    }
    var finishes: [String] {
        log.compactMap { if case .finished(let name) = $0 { name } else { nil } }
    }
    var threadNames: Set<String> { threads.withLock { $0 } }
}

/// The kernel's name of the calling thread (`/proc/thread-self/comm`).
func currentThreadName() -> String {
    ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "?")
        .trimmingCharacters(in: .whitespacesAndNewlines)
}

let stereo48 = try! AudioFormat(sampleRate: 48_000, channelCount: 2)
let mono48 = try! AudioFormat(sampleRate: 48_000, channelCount: 1)

/// Stereo frames that carry their own index through any gain: frame k is
/// ((k + 1) / 2^17, 0.5), so left / right = (k + 1) / 2^16 whatever gain both channels share.
func identityFrames(_ range: Range<Int>) -> [Float] {
    var out: [Float] = []
    out.reserveCapacity(range.count * 2)
    for k in range {
        out.append(Float(k + 1) / 131_072)
        out.append(0.5)
    }
    return out
}

/// A buffer of identity frames (see `identityFrames`) at 48 kHz stereo.
func identityBuffer(_ range: Range<Int>) throws -> PCMBuffer {
    try PCMBuffer(format: stereo48, samples: identityFrames(range))
}

/// The index each output frame carries (see `identityFrames`), nil where it is silent.
func decodeIdentity(_ samples: [Float]) -> [Int?] {
    stride(from: 0, to: samples.count - 1, by: 2).map { i in
        let right = samples[i + 1]
        guard right != 0 else { return nil }
        return Int((samples[i] / right * 65_536).rounded()) - 1
    }
}

/// A buffer of `frames` frames of `value` on every channel.
func constant(_ value: Float, frames: Int, format: AudioFormat = stereo48) throws -> PCMBuffer {
    try PCMBuffer(format: format, samples: [Float](repeating: value, count: frames * format.channelCount))
}

/// A sine of `frequency` Hz, the same on every channel.
func sine(_ frequency: Double, frames: Int, format: AudioFormat, amplitude: Float = 0.5) throws -> PCMBuffer {
    var out = [Float](repeating: 0, count: frames * format.channelCount)
    for i in 0..<frames {
        let v = amplitude * Float(sin(2 * .pi * frequency * Double(i) / format.sampleRate))
        for c in 0..<format.channelCount { out[i * format.channelCount + c] = v }
    }
    return try PCMBuffer(format: format, samples: out)
}

/// One channel of interleaved samples.
func channel(_ samples: [Float], _ index: Int, of channels: Int = 2) -> [Float] {
    stride(from: index, to: samples.count, by: channels).map { samples[$0] }
}

/// Root mean square.
func rms<C: Collection>(_ x: C) -> Double where C.Element == Float {
    guard !x.isEmpty else { return 0 }
    return (x.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(x.count)).squareRoot()
}

/// Signal-to-noise ratio of `actual` against `reference`, in dB, over the longer of the two
/// (the shorter is padded with silence, so a missing frame counts as noise).
func snr(_ actual: [Float], _ reference: [Float]) -> Double {
    var signal = 0.0, noise = 0.0
    for i in 0..<max(actual.count, reference.count) {
        let a = i < actual.count ? Double(actual[i]) : 0
        let r = i < reference.count ? Double(reference[i]) : 0
        signal += r * r
        noise += (a - r) * (a - r)
    }
    return noise == 0 ? .infinity : 10 * log10(signal / noise)
}

/// Frequency of a signal by linearly interpolated rising zero crossings.
func zeroCrossingFrequency(_ x: ArraySlice<Float>, rate: Double) -> Double {
    var crossings: [Double] = []
    var previous = x.first ?? 0
    for (i, v) in zip(x.indices, x).dropFirst() {
        if previous < 0, v >= 0 { crossings.append(Double(i - x.startIndex) - Double(v) / Double(v - previous)) }
        previous = v
    }
    guard crossings.count > 2, let first = crossings.first, let last = crossings.last else { return 0 }
    return Double(crossings.count - 1) / (last - first) * rate
}

/// Index of the first frame (stereo) with a sample whose magnitude exceeds `threshold`.
func firstSoundingFrame(_ samples: [Float], threshold: Float = 0) -> Int? {
    samples.firstIndex { abs($0) > threshold }.map { $0 / 2 }
}

/// Expects `body` to throw an `AudioError` with `code`.
func expectError(_ code: AudioError.Code, _ what: String, sourceLocation: SourceLocation = #_sourceLocation,
                 _ body: () throws -> Void) {
    do {
        try body()
        Issue.record("\(what) did not throw", sourceLocation: sourceLocation)
    } catch let error as AudioError {
        #expect(error.code == code, "\(what): \(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("\(what) threw \(error)", sourceLocation: sourceLocation)
    }
}

/// Threads of this process (`/proc/self/task`).
func threadCount() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? -1
}
