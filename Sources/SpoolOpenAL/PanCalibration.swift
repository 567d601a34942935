internal import COpenAL
import Foundation
import SpoolCore

/// Where to place a mono source, and how much to boost it, so that OpenAL Soft's panner
/// gives the pan law both back-ends share (`PanLaw.mono`).
///
/// OpenAL Soft's stereo panner is not constant power. In 1.19 a source straight ahead comes
/// out at 0.596 on each side (−4.5 dB, not −3 dB), and the gains follow the azimuth through
/// an ambisonic decode that reaches one side fully at ±60°: left² + right² runs from 0.71
/// ahead to 1.00 at the sides. So a mono source is placed at the azimuth where OpenAL's
/// right/left ratio equals the law's, and its `AL_GAIN` is scaled by the law's total over
/// OpenAL's there (1/0.596 at the centre, where the law plays both sides at unity); what
/// comes out is the law's gains. Rather than copy 1.19's decoder
/// coefficients, Spool measures the panner once per process on a private loopback device
/// (181 directions, a few milliseconds), so a library that pans differently is matched too.
final class PanCalibration: Sendable {
    /// Azimuths measured, in radians, −π/2 (left) … π/2 (right), ascending.
    private let azimuths: [Float]
    /// atan2(right, left) at each azimuth: 0 hard left … π/2 hard right, never decreasing.
    private let angles: [Float]
    /// √(left² + right²) at each azimuth.
    private let magnitudes: [Float]

    /// The calibration every device uses, measured at the first use.
    static let shared: Result<PanCalibration, AudioError> = {
        do { return .success(try PanCalibration()) } catch let error as AudioError {
            return .failure(error)
        } catch {
            return .failure(AudioError(.libraryFailure, "measuring OpenAL's panner failed", underlying: error))
        }
    }()

    private init() throws {
        let steps = 180
        let frames = 64
        let rate: Int32 = 48_000
        let opened = try OpenALLibrary.use { alcLoopbackOpenDeviceSOFT(nil) }
        guard let opened else {
            throw AudioError(.deviceUnavailable, "openal: alcLoopbackOpenDeviceSOFT failed while measuring the panner")
        }
        let device = DeviceHandle(pointer: opened)
        let attributes: [Int32] = [ALC_FORMAT_CHANNELS_SOFT, ALC_STEREO_SOFT, ALC_FORMAT_TYPE_SOFT, ALC_FLOAT_SOFT,
                                   ALC_FREQUENCY, rate, ALC_HRTF_SOFT, ALC_FALSE, ALC_OUTPUT_LIMITER_SOFT, ALC_FALSE, 0]
        let context = try ContextHandle(device: device, attributes: attributes, deviceName: "openal:pan-calibration")
        var azimuths: [Float] = [], angles: [Float] = [], magnitudes: [Float] = []
        try context.withCurrent {
            alDistanceModel(AL_NONE)
            var source: UInt32 = 0, buffer: UInt32 = 0
            alGenSources(1, &source)
            alGenBuffers(1, &buffer)
            defer {
                alSourceStop(source)
                alSourcei(source, AL_BUFFER, 0)
                alDeleteSources(1, &source)
                alDeleteBuffers(1, &buffer)
            }
            let ones = [Float](repeating: 1, count: frames)
            ones.withUnsafeBytes { alBufferData(buffer, AL_FORMAT_MONO_FLOAT32, $0.baseAddress, Int32($0.count), rate) }
            alSourcei(source, AL_BUFFER, Int32(bitPattern: buffer))
            alSourcei(source, AL_SOURCE_RELATIVE, AL_TRUE)
            alSourcei(source, AL_LOOPING, AL_TRUE)
            try OpenALStatus.al().check("setting up the panner measurement")
            var out = [Float](repeating: 0, count: frames * 2)
            for step in 0...steps {
                let azimuth = (Float(step) / Float(steps) - 0.5) * Float.pi
                alSourceStop(source)
                alSource3f(source, AL_POSITION, sin(azimuth), 0, -cos(azimuth))
                alSourcePlay(source)
                out.withUnsafeMutableBufferPointer { alcRenderSamplesSOFT(opened, $0.baseAddress, Int32(frames)) }
                // A source that starts mixes at its target gains at once; the last frame is surely settled.
                let left = out[2 * frames - 2], right = out[2 * frames - 1]
                azimuths.append(azimuth)
                angles.append(atan2(max(0, right), max(0, left)))
                magnitudes.append((left * left + right * right).squareRoot())
            }
            try OpenALStatus.al().check("measuring the panner")
        }
        for i in 1..<angles.count where angles[i] < angles[i - 1] {
            angles[i] = angles[i - 1]  // never decreasing, so that it can be inverted
        }
        guard let first = angles.first, let last = angles.last, first < 0.01, last > Float.pi / 2 - 0.01,
              magnitudes.allSatisfy({ $0 > 0.1 }) else {
            throw AudioError(.libraryFailure, "OpenAL's panner does not sweep from left to right (HRTF or surround forced by its configuration?)")
        }
        self.azimuths = azimuths
        self.angles = angles
        self.magnitudes = magnitudes
    }

    /// The placement for `pan`: the unit vector to set as `AL_POSITION` (relative to the
    /// listener, who faces −z) and the factor to multiply `AL_GAIN` by, so that OpenAL's
    /// panner gives `PanLaw.mono(pan)`.
    func placement(forPan pan: Float) -> (x: Float, z: Float, gain: Float) {
        let law = PanLaw.mono(pan)
        let theta = atan2(law.right, law.left)
        // The first measured interval whose angles span theta.
        var upper = angles.firstIndex { $0 >= theta } ?? angles.count - 1
        if upper == 0 { upper = 1 }
        let lower = upper - 1
        let span = angles[upper] - angles[lower]
        let t = span > 0 ? min(1, max(0, (theta - angles[lower]) / span)) : 0
        let azimuth = azimuths[lower] + t * (azimuths[upper] - azimuths[lower])
        let magnitude = magnitudes[lower] + t * (magnitudes[upper] - magnitudes[lower])
        return (sin(azimuth), -cos(azimuth), (law.left * law.left + law.right * law.right).squareRoot() / magnitude)
    }
}
