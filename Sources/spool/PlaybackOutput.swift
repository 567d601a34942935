import Foundation
import Spool
import SpoolBenchmarks

/// A back-end opened on the output the command line names, with what an offline render needs.
struct PlaybackOutput {
    let backend: any PlaybackBackend
    let description: String
    let notice: String?
    /// For `wav:PATH`: the device rendered on demand and the file it renders into; nil for a
    /// real-time output.
    let offline: OfflineTarget?

    static func open(backend name: String, output: String, configuration: OutputConfiguration) throws -> PlaybackOutput {
        let configuration = try configuration.validated()
        let wavPath: String? = output.hasPrefix("wav:") ? String(output.dropFirst(4)) : nil
        if let wavPath, wavPath.isEmpty { throw UsageError("--output wav:PATH needs a path") }
        switch name {
        case "queue":
            if let wavPath {
                var offlineConfiguration = configuration
                offlineConfiguration.sampleRate = configuration.sampleRate ?? 48_000
                let device = try OfflineDevice(configuration: offlineConfiguration)
                let backend = try BufferQueueBackend(device: device)
                let writer = try WAVFileWriter(path: wavPath, format: device.format)
                return PlaybackOutput(
                    backend: backend, description: "wav:\(wavPath) via queue (offline, \(device.format))", notice: nil,
                    offline: OfflineTarget(device: device, writer: writer))
            }
            let target: OutputTarget
            do { target = try OutputTarget(parsing: output) } catch is AudioError {
                throw UsageError("--output is default, null, pulse, pulse:SINK, alsa:NAME or wav:PATH, not '\(output)'")
            }
            let (backend, notice) = try BufferQueueBackend.open(target, configuration: configuration)
            let device = backend.engine.device
            return PlaybackOutput(
                backend: backend,
                description: "\(device.name) via queue (\(device.format), \(device.periodFrames) × \(device.periodCount) frames)",
                notice: notice, offline: nil)
        default:
            return try OpenALPlaybackOutput.open(output: output, wavPath: wavPath, configuration: configuration)
        }
    }
}

/// A device rendered on demand and the WAV file its frames go to.
struct OfflineTarget {
    let device: any OfflineRendering
    let writer: WAVFileWriter
}
