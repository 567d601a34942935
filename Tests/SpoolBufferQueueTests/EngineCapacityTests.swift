import Foundation
import SpoolCore
import SpoolOutput
@testable import SpoolBufferQueue
import SpoolTestSupport
import Testing

/// The queue engine's voice count is a setting made at creation: an engine made for more than
/// the default mixes them all, every one heard; one past it is refused; the count is checked.
@Suite("Queue engine capacity")
struct EngineCapacityTests {
    static func device() throws -> OfflineDevice {
        try OfflineDevice(configuration: OutputConfiguration(sampleRate: 48_000, channelCount: 2, periodFrames: 256, periodCount: 2))
    }

    @Test func anEngineMadeForMoreThanTheDefaultMixesThemAll() throws {
        let device = try Self.device()
        let backend = try BufferQueueBackend(device: device, maximumVoices: 600)
        #expect(backend.engine.maximumQueues == 600)
        let format = try AudioFormat(sampleRate: 48_000, channelCount: 2)
        // Each voice a constant level of its own: the mix is their sum.
        let level: Float = 1.0 / 1_024
        var voices: [any PlaybackVoice] = []
        for _ in 0..<600 {
            let voice = try backend.makeVoice(format: format)
            try voice.enqueue(try PCMBuffer(format: format, samples: [Float](repeating: level, count: 4_096 * 2)))
            try voice.start()
            voices.append(voice)
        }
        #expect(throws: AudioError.self) { _ = try backend.makeVoice(format: format) }
        // Past the start fades, every frame is all 600 voices together.
        let out = try device.render(frames: 2_048).samples
        let mixed = out[(1_024 * 2)...]
        #expect(mixed.allSatisfy { abs($0 - 600 * level) < 1e-4 }, "mixed \(mixed.first ?? 0), expected \(600 * level)")
        for voice in voices { voice.dispose() }
    }

    @Test func theDefaultIsTwoHundredFiftySixAndTheCountIsChecked() throws {
        #expect(QueueEngine(device: try Self.device()).maximumQueues == QueueEngine.defaultMaximumQueues)
        #expect(QueueEngine.defaultMaximumQueues == 256)
        for bad in [0, -1, QueueEngine.maximumQueuesLimit + 1, Int.max, Int.min] {
            #expect {
                _ = try QueueEngine(device: try Self.device(), maximumQueues: bad)
            } throws: { ($0 as? AudioError)?.code == .invalidParameter }
            #expect {
                _ = try BufferQueueBackend(device: try Self.device(), maximumVoices: bad)
            } throws: { ($0 as? AudioError)?.code == .invalidParameter }
        }
    }
}
