import Foundation
import SpoolCore
import SpoolOpenAL
import SoundServerTestSupport
import SpoolResampling
import Testing
@testable import SpoolBenchmarks
import SpoolTestSupport

/// Each resampling level against the OpenAL Soft resampler it is matched with in the mix and
/// capacity benchmarks, measured the same way (the resampler table's tones and aliasing tone):
/// `fast` is no worse than OpenAL Soft's default linear resampler in SNR and aliasing or
/// imaging, `balanced` no lower in SNR than its 23rd-order sinc, `high` no worse than it in
/// either, at every benchmarked conversion. (`balanced`'s libswresample filter leaves the
/// images of tones near the input's Nyquist frequency 27 to 42 dB down where the sinc takes them
/// 72 to 75 dB down: libswresample keeps its cutoff at the input's Nyquist frequency when it
/// upsamples by more than 1 / cutoff, so a 32-tap filter cannot do better; `bench resample`
/// shows it.)
@Suite("Resampling levels against OpenAL Soft's resamplers",
       .disabled(if: SoundServer.underSanitizer, "deterministic figures that the plain run checks; a sanitizer's slow-down makes them minutes"))
struct QualityAgainstOpenALSoftTests {
    static let matched: [(ResamplingQuality, String)] = [(.fast, "linear"), (.balanced, "23rd"), (.high, "23rd")]

    @Test(arguments: RateConversion.benchmarked)
    func eachLevelIsNoWorseThanItsOpenALSoftPeer(_ conversion: RateConversion) throws {
        for (level, peerName) in Self.matched {
            let resampler = try OpenALSoftPeer.resampler(named: peerName)
            let peer = try measureResamplerQuality(
                converting: { input, channels, from, to in
                    try OpenALSoftPeer.convert(input, channelCount: channels, from: from, to: to, resampler: resampler)
                },
                name: resampler.name, conversion: conversion, channelCount: 2)
            let kind = VoiceResampler.fixedKind(level)
            let mine = try measureResamplerQuality(
                converting: kindConversion(kind), name: kind.description, conversion: conversion, channelCount: 2)
            let context = "\(level) (\(kind)) against OpenAL Soft \(resampler.name) at \(conversion)"
            #expect(mine.lowToneSNRDB >= peer.lowToneSNRDB, "\(context): SNR at 1 kHz \(mine.lowToneSNRDB) against \(peer.lowToneSNRDB) dB")
            #expect(mine.highToneSNRDB >= peer.highToneSNRDB,
                    "\(context): SNR at \(conversion.highToneHz) Hz \(mine.highToneSNRDB) against \(peer.highToneSNRDB) dB")
            guard level != .balanced else { continue }
            #expect(mine.aliasingDB <= peer.aliasingDB, "\(context): \(mine.aliasingMeasure) \(mine.aliasingDB) against \(peer.aliasingDB) dB")
        }
    }
}
