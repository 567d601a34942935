import Dispatch
import SpoolCore

/// Resamplers whose voices are gone, kept for the next voice of the same shape (channels,
/// rates, block and declick lengths).
///
/// Making a resampler makes every level's converters, which costs milliseconds (libsoxr's
/// and libswresample's filters, three windowed-sinc converters); taking one from here
/// costs a lock and a restart, so a program that plays sound after sound on new voices, as
/// effects do, pays for converters once. A voice gives its resampler back when it is freed,
/// off the render thread (`give`); at most `capacity` are kept, the oldest let go first.
///
/// A resampler taken from the pool renders what a new one renders, sample for sample: the
/// fixed-ratio streams the voice before fed (which would start over only to within rounding)
/// are made anew on a background queue before the resampler is kept, and the rest starts
/// over exactly.
package final class VoiceResamplerPool: Sendable {
    /// The pool every voice of the process draws from.
    package static let shared = VoiceResamplerPool(capacity: 16)

    private let capacity: Int
    // Sendable: a resampler in the pool is used by no voice and reached only under the lock.
    private struct Idle: @unchecked Sendable {
        var resamplers: [VoiceResampler] = []
    }
    private let idle = Locked(Idle())
    /// Where the fixed streams of given-back resamplers are made anew.
    private let renewals = DispatchQueue(label: "spool.resampler-pool", qos: .utility)

    // Sendable: handed from the thread that gives it back to the renewal queue, used by neither after.
    private struct Handed: @unchecked Sendable {
        let resampler: VoiceResampler
    }

    package init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    /// A resampler for a new voice: one of the shape asked for from the pool, restarted at
    /// `quality`, or a new one.
    /// - Throws: A rate-converter error, when a new one cannot be made.
    package func take(channelCount: Int, sourceRate: Double, ratio: Double, maximumFrames: Int, declickFrames: Int,
                      quality: ResamplingQuality) throws -> VoiceResampler {
        let shape = VoiceResampler.Shape(channelCount: channelCount, sourceRate: sourceRate, ratio: ratio,
                                         maximumFrames: maximumFrames, declickFrames: declickFrames)
        let pooled = idle.withLock { idle -> VoiceResampler? in
            guard let index = idle.resamplers.lastIndex(where: { $0.shape == shape }) else { return nil }
            return idle.resamplers.remove(at: index)
        }
        if let pooled {
            pooled.reuse(quality: quality)
            return pooled
        }
        return try VoiceResampler(channelCount: channelCount, sourceRate: sourceRate, ratio: ratio,
                                  maximumFrames: maximumFrames, declickFrames: declickFrames, quality: quality)
    }

    /// Takes back the resampler of a voice being freed, which nothing else holds or renders
    /// with any more. Never called on the render thread.
    package func give(_ resampler: VoiceResampler) {
        guard capacity > 0 else { return }
        guard resampler.needsRenewal else { return keep(resampler) }
        let handed = Handed(resampler: resampler)
        renewals.async { [self] in
            // One that cannot be made anew is let go: the next voice makes its own.
            guard (try? handed.resampler.renew()) != nil else { return }
            keep(handed.resampler)
        }
    }

    private func keep(_ resampler: VoiceResampler) {
        let dropped = idle.withLock { idle -> VoiceResampler? in
            idle.resamplers.append(resampler)
            return idle.resamplers.count > capacity ? idle.resamplers.removeFirst() : nil
        }
        withExtendedLifetime(dropped) {}  // freed here, outside the lock
    }

    /// Waits for the resamplers given back so far to be kept (their streams made anew).
    package func settle() { renewals.sync {} }

    /// Resamplers held now.
    package var count: Int { idle.withLock { $0.resamplers.count } }

    /// Lets every held resampler go (a benchmark measures a voice made from nothing).
    package func removeAll() {
        let held = idle.withLock { idle in
            defer { idle.resamplers = [] }
            return idle.resamplers
        }
        withExtendedLifetime(held) {}
    }
}
