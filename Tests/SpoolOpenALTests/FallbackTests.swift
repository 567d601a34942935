import Foundation
import SpoolCore
import Testing
@testable import SpoolOpenAL

/// Where no device opens, the library itself offers the null device, and says so; and it
/// lists only the devices that open.
@Suite("OpenAL fallback and device list")
struct FallbackTests {
    let configuration = OutputConfiguration(sampleRate: 48_000, periodFrames: 480, periodCount: 3)

    // No configuration for a named device: OpenAL Soft takes one per process (the tests in
    // this process may have started it already), and the fallback does not need one.
    @Test func aDeviceThatDoesNotOpenFallsBackToTheNullDeviceWithANotice() throws {
        let (backend, notice) = try OpenALBackend.open(.named("Spool test: no such device"), fallbackToNull: true)
        defer { backend.device.close() }
        #expect(backend.device.name == "null")
        #expect(backend.device.periodCount == 3)
        #expect(backend.outputFormat.sampleRate == 48_000)
        let text = try #require(notice)
        #expect(text.hasPrefix("no audio device could be opened (openal:Spool test: no such device: "))
        #expect(text.hasSuffix("; playing to the null device"))
        // It plays there, in real time.
        let voice = try backend.makeVoice(format: try AudioFormat(sampleRate: 48_000, channelCount: 2))
        try voice.enqueue(try PCMBuffer(format: voice.format, samples: [Float](repeating: 0.1, count: 4800)))
        try voice.start()
        Thread.sleep(forTimeInterval: 0.2)
        #expect(voice.framesPlayed > 0)
    }

    @Test func withoutTheFallbackItIsDeviceUnavailable() throws {
        expectError(.deviceUnavailable) {
            try OpenALBackend.open(.named("Spool test: no such device"), fallbackToNull: false)
        }
    }

    @Test func aDeviceThatOpensHasNoNotice() throws {
        let (backend, notice) = try OpenALBackend.open(.null(configuration), fallbackToNull: true)
        defer { backend.device.close() }
        #expect(notice == nil)
    }

    @Test func everyListedDeviceOpens() throws {
        for name in OpenALDevice.availableDeviceNames() {
            let device = try OpenALDevice(.named(name))
            device.close()
        }
    }
}
