import Foundation
import SpoolCore
import Synchronization

/// The settings OpenAL Soft reads from its configuration file: the mixer's rate and the size
/// of the device buffer, and the order in which it tries its drivers.
///
/// OpenAL Soft 1.19 takes the device buffer from nowhere else: it ignores the `ALC_REFRESH`
/// context attribute, and reads its configuration and driver list **once per process**, at
/// the first OpenAL call. So `apply()` writes a file, points `ALSOFT_CONF` (and
/// `ALSOFT_DRIVERS`) at it, and must run before any OpenAL device is opened; a program that
/// needs several buffer sizes runs each in a process of its own.
///
/// The file holds `[general]` `frequency`, `period_size`, `periods` and `channels = stereo`
/// (the back-end mixes stereo and pans by the same law as the buffer queue). It replaces any
/// file `ALSOFT_CONF` named before; the per-user files (`~/.alsoftrc`, `alsoft.conf` in the
/// XDG directories) are still read first, and the values here win.
public struct OpenALConfiguration: Sendable, Equatable, CustomStringConvertible {
    /// Mixer rate in Hz (`frequency`); `nil` leaves it to OpenAL Soft (44 100, or the sound
    /// server's rate for PulseAudio).
    public var sampleRate: Int?
    /// Frames the mixer renders at a time (`period_size`); `nil` for OpenAL Soft's 1024.
    public var periodFrames: Int?
    /// Periods in the device buffer (`periods`); `nil` for OpenAL Soft's 3.
    public var periodCount: Int?
    /// Sources each device has (`sources`), which `OpenALDevice(sourceLimit:)` may then use
    /// up to; `nil` for OpenAL Soft's 256.
    public var sources: Int?
    /// Drivers to try, in order (`ALSOFT_DRIVERS`), e.g. `pulse`, `alsa`, `null`. OpenAL Soft's
    /// own `null` driver opens as the default device when nothing before it does, and plays
    /// to nowhere; Spool's null device (`OpenALDevice.Kind.null`) needs no driver at all.
    public var drivers: [String]

    /// The drivers Spool names when the program names none: the sound server, then ALSA.
    /// JACK (first in OpenAL Soft's own order) is left out: probing it without a JACK server
    /// prints warnings and costs time at every start.
    public static let defaultDrivers = ["pulse", "alsa"]

    /// Makes a configuration.
    /// - Parameters:
    ///   - sampleRate: Mixer rate in Hz, 8 000…192 000, or `nil`.
    ///   - periodFrames: Frames per period, 64…8 192, or `nil`.
    ///   - periodCount: Periods in the device buffer, 2…16, or `nil`.
    ///   - sources: Sources per device, 1…`OpenALConfiguration.maximumSources`, or `nil`.
    ///   - drivers: Driver names in the order to try them.
    public init(sampleRate: Int? = nil, periodFrames: Int? = nil, periodCount: Int? = nil, sources: Int? = nil,
                drivers: [String] = OpenALConfiguration.defaultDrivers) {
        self.sampleRate = sampleRate
        self.periodFrames = periodFrames
        self.periodCount = periodCount
        self.sources = sources
        self.drivers = drivers
    }

    /// The most sources a configuration may give each device.
    public static let maximumSources = 65_536

    /// Makes a configuration from the device buffer a program asks for: its rate (when
    /// given), period size and period count.
    /// - Parameters:
    ///   - output: The requested buffer; `channelCount` must be 2.
    ///   - drivers: Driver names in the order to try them.
    /// - Throws: `.invalidParameter` for a field OpenAL Soft cannot take.
    public init(_ output: OutputConfiguration, drivers: [String] = OpenALConfiguration.defaultDrivers) throws {
        let output = try output.validated()
        guard output.channelCount == 2 else {
            throw AudioError(.invalidParameter, "the OpenAL back-end mixes stereo, not \(output.channelCount) channels")
        }
        if let rate = output.sampleRate, rate != rate.rounded() {
            throw AudioError(.invalidParameter, "OpenAL Soft takes a whole-number mixer rate, not \(rate) Hz")
        }
        self.init(sampleRate: output.sampleRate.map { Int($0) }, periodFrames: output.periodFrames,
                  periodCount: output.periodCount, drivers: drivers)
        try validate()
    }

    /// Checks every field against the ranges OpenAL Soft 1.19 accepts.
    /// - Throws: `.invalidParameter` naming the field at fault.
    public func validate() throws {
        if let sampleRate, !(8_000...192_000).contains(sampleRate) {
            throw AudioError(.invalidParameter, "OpenAL mixer rate \(sampleRate) Hz is outside 8000...192000")
        }
        if let periodFrames, !(64...8_192).contains(periodFrames) {
            throw AudioError(.invalidParameter, "OpenAL period of \(periodFrames) frames is outside 64...8192")
        }
        if let periodCount, !(2...16).contains(periodCount) {
            throw AudioError(.invalidParameter, "OpenAL period count \(periodCount) is outside 2...16")
        }
        if let sources, !(1...Self.maximumSources).contains(sources) {
            throw AudioError(.invalidParameter, "OpenAL source count \(sources) is outside 1...\(Self.maximumSources)")
        }
        guard !drivers.isEmpty, drivers.allSatisfy({ !$0.isEmpty && $0.allSatisfy { $0.isLetter || $0.isNumber } }) else {
            throw AudioError(.invalidParameter, "OpenAL driver list \(drivers) must name at least one driver, letters and digits only")
        }
    }

    /// The configuration file's text.
    public var fileContents: String {
        var lines = ["# Written by Spool: OpenAL Soft reads it once, at the first OpenAL call of the process.",
                     "[general]", "channels = stereo"]
        if let sampleRate { lines.append("frequency = \(sampleRate)") }
        if let periodFrames { lines.append("period_size = \(periodFrames)") }
        if let periodCount { lines.append("periods = \(periodCount)") }
        if let sources { lines.append("sources = \(sources)") }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A one-line summary, e.g. `48000 Hz, 128 × 2 frames, drivers pulse,alsa`.
    public var description: String {
        let rate = sampleRate.map { "\($0) Hz" } ?? "default rate"
        let period = periodFrames.map { "\($0)" } ?? "default"
        let count = periodCount.map { "\($0)" } ?? "default"
        let pool = sources.map { ", \($0) sources" } ?? ""
        return "\(rate), \(period) × \(count) frames\(pool), drivers \(drivers.joined(separator: ","))"
    }

    /// Writes the configuration file and sets `ALSOFT_CONF` and `ALSOFT_DRIVERS` for this
    /// process, so that OpenAL Soft reads them at its first use. Applying the configuration
    /// already in effect again does nothing. Call it early, before other threads run:
    /// it changes the environment (`setenv`).
    /// - Throws: `.invalidParameter` for a field out of range; `.invalidState` when OpenAL was
    ///   already used in this process with another configuration (or with none from Spool):
    ///   OpenAL Soft 1.19 never reads its configuration again, so the values would not apply;
    ///   `.writeFailed` when the file cannot be written.
    public func apply() throws {
        try validate()
        try OpenALLibrary.apply(self)
    }

    /// The configuration applied before OpenAL Soft started in this process, if any.
    public static var current: OpenALConfiguration? { OpenALLibrary.state.withLock { $0.applied } }

    /// Whether OpenAL Soft has been used in this process (through Spool), so that its
    /// configuration is fixed.
    public static var isLibraryStarted: Bool { OpenALLibrary.state.withLock { $0.started } }
}
