internal import COpenAL
import SpoolCore

/// Decoded audio copied once into an OpenAL buffer (`alGenBuffers`, `alBufferData`) for any
/// number of `OpenALStaticSource`s to play at the same time: a sound effect.
///
/// The OpenAL buffer lives as long as this object, and every source playing it holds it:
/// it is deleted (`alDeleteBuffers`) once the program has let it go *and* no source uses it
/// any more. (OpenAL refuses to delete a buffer a source still has attached; here that
/// cannot happen.)
public final class OpenALStaticBuffer: SharedBuffer {
    /// The format of the audio it was made from. More than two channels were folded down to stereo.
    public let format: AudioFormat
    /// Frames it holds.
    public let frameCount: Int
    /// The device whose buffers it is among.
    public let device: OpenALDevice
    /// The OpenAL buffer name.
    let name: UInt32

    /// Copies `buffer` into a new OpenAL buffer of `device`.
    /// - Parameters:
    ///   - buffer: The audio, at a whole-number rate; it is not kept.
    ///   - device: The device to play it on.
    /// - Throws: `.invalidParameter` for an empty buffer or a rate OpenAL cannot take;
    ///   `.invalidState` / `.deviceLost` when the device is closed or lost; the AL error of
    ///   `alBufferData` otherwise.
    public init(_ buffer: PCMBuffer, device: OpenALDevice) throws {
        guard buffer.frameCount > 0 else { throw AudioError(.invalidParameter, "an empty buffer cannot be uploaded") }
        guard buffer.format.sampleRate == buffer.format.sampleRate.rounded(), buffer.format.sampleRate <= 384_000 else {
            throw AudioError(.invalidParameter,
                "OpenAL takes whole-number sample rates up to 384000 Hz, not \(buffer.format.sampleRate) Hz")
        }
        format = buffer.format
        frameCount = buffer.frameCount
        self.device = device
        name = try device.perform { _ -> UInt32 in
            var name: UInt32 = 0
            alGenBuffers(1, &name)
            try OpenALStatus.al().check("alGenBuffers")
            var upload = SampleUpload()
            do {
                try upload.upload(buffer, into: name)
            } catch {
                alDeleteBuffers(1, &name)
                throw error
            }
            return name
        }
    }

    deinit { device.retire(buffers: [name]) }

    /// How long it plays at rate 1, in seconds.
    public var duration: Double { format.seconds(forFrames: frameCount) }

    /// Whether OpenAL still has the buffer (`alIsBuffer`); false once it was deleted.
    func isResident() -> Bool { device.isBuffer(name) }
}

extension OpenALDevice {
    /// Copies `buffer` into an OpenAL buffer of this device, to be shared by static sources.
    /// - Parameter buffer: The audio.
    /// - Returns: The shared buffer.
    /// - Throws: As `OpenALStaticBuffer.init(_:device:)`.
    public func makeStaticBuffer(_ buffer: PCMBuffer) throws -> OpenALStaticBuffer {
        try OpenALStaticBuffer(buffer, device: self)
    }

    /// Whether `name` is an OpenAL buffer of this device (`alIsBuffer`), after deleting
    /// what was retired. False once the device is closed.
    func isBuffer(_ name: UInt32) -> Bool {
        (try? perform { _ in alIsBuffer(name) != 0 }) ?? false
    }
}
