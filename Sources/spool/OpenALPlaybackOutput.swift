import Foundation
import Spool
import SpoolBenchmarks

/// The OpenAL back-end on the output the command line names.
enum OpenALPlaybackOutput {
    static func open(output: String, wavPath: String?, configuration: OutputConfiguration) throws -> PlaybackOutput {
        if let wavPath {
            let device = try OpenALDevice(.loopback(configuration))
            let writer = try WAVFileWriter(path: wavPath, format: device.format)
            return PlaybackOutput(
                backend: OpenALBackend(device: device),
                description: "wav:\(wavPath) via openal (loopback, \(device.format))", notice: nil,
                offline: OfflineTarget(device: device, writer: writer))
        }
        let backend: OpenALBackend
        var notice: String?
        switch output {
        case "null":
            backend = try OpenALBackend.open(.null, configuration: configuration).backend
        case "default":
            (backend, notice) = try OpenALBackend.open(.default, configuration: configuration)
        case _ where output == "pulse" || output.hasPrefix("pulse:"):
            // OpenAL Soft plays to PulseAudio through a driver of its own, which `default` picks
            // (and `openal:NAME` names a sink through).
            throw UsageError("--output \(output) is the queue back-end's; the OpenAL back-end reaches PulseAudio "
                             + "through OpenAL Soft's own driver: --output default or openal:NAME")
        default:
            guard output.hasPrefix("alsa:") || output.hasPrefix("openal:") else {
                throw UsageError("--output is default, null, openal:NAME or wav:PATH for the OpenAL back-end, not '\(output)'")
            }
            let name = String(output.drop(while: { $0 != ":" }).dropFirst())
            backend = try OpenALBackend(.named(name), configuration: configuration)
        }
        let device = backend.device
        let period = device.periodCount.map { "\(device.updateFrames) × \($0) frames" } ?? "\(device.updateFrames)-frame updates"
        return PlaybackOutput(backend: backend, description: "\(device.name) via openal (\(device.format), \(period))",
                              notice: notice, offline: nil)
    }
}
