import Foundation
import SpoolCore
import SpoolOutput
import Testing
@testable import SpoolOpenAL
import SpoolBufferQueue
import SpoolTestSupport

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

    /// `open(_:configuration:)` takes what `BufferQueueBackend.open` takes and gives what it
    /// gives: the same targets, defaults and result.
    @Test func bothBackEndsOpenTheSameTargetsTheSameWay() throws {
        let (null, nullNotice) = try OpenALBackend.open(.null, configuration: configuration)
        defer { null.device.close() }
        #expect(null.device.name == "null" && nullNotice == nil)
        #expect(null.device.periodCount == 3 && null.outputFormat.sampleRate == 48_000)
        let (queue, queueNotice) = try BufferQueueBackend.open(.null, configuration: configuration)
        #expect(queue.outputFormat == null.outputFormat && queueNotice == nil)
        let (offline, _) = try OpenALBackend.open(.offline)
        defer { offline.device.close() }
        #expect(offline.device.rendersOnDemand && offline.outputFormat.sampleRate == 48_000)
        let (queueOffline, _) = try BufferQueueBackend.open(.offline)
        #expect(queueOffline.outputFormat == offline.outputFormat)
        expectError(.unsupported) { try OpenALBackend.open(.alsa("hw:0,0")) }
    }

    @Test func everyListedDeviceOpens() throws {
        for name in OpenALDevice.availableDeviceNames() {
            let device = try OpenALDevice(.named(name))
            device.close()
        }
    }

    static let childVariable = "SPOOL_TEST_NO_SOUND_SERVER_CHILD"

    /// Where no sound server answers, OpenAL Soft's ALSA driver still names "ALSA Default",
    /// which then does not open (ALSA's `default` leads to the missing server). Run in a
    /// process of its own, whose PulseAudio client is pointed at a server that is not there.
    @Test func withoutASoundServerOnlyDevicesThatOpenAreListedAndTheFallbackPlays() throws {
        if ProcessInfo.processInfo.environment[Self.childVariable] != nil {
            let names = OpenALDevice.availableDeviceNames()
            for name in names {
                let device = try OpenALDevice(.named(name))
                device.close()
            }
            let (backend, notice) = try OpenALBackend.open(.systemDefault, fallbackToNull: true)
            defer { backend.device.close() }
            #expect(backend.device.name == "null")
            #expect(notice != nil)
            print("SPOOL-DEVICE-LIST \(names.count) listed, all open; fallback: \(notice ?? "none")")
            return
        }
        let (status, output) = try runInFreshProcess(
            filter: "withoutASoundServerOnlyDevicesThatOpen",
            environment: ["PULSE_SERVER": "unix:/nonexistent/spool-no-sound-server", Self.childVariable: "1"])
        #expect(status == 0, "the child process failed:\n\(output.suffix(1500))")
        #expect(output.contains("SPOOL-DEVICE-LIST"), "\(output.suffix(800))")
    }
}
