import Dispatch
import Foundation
import SpoolCore

/// How a program's audio lives with the rest: its category (mix with other audio, or
/// interrupt it), interruptions (another session of the process, or the sound server corking
/// its stream for a call), route changes (a sink removed, the default switched, the server
/// gone), and the sample rate and I/O buffer it asked for and got. The corresponding Apple
/// class is `AVAudioSession`.
///
/// One session is shared per process (`shared`), as on iOS; every `AudioPlayer` (and so
/// every `Playlist` and `MusicPlayerPool` player) belongs to it unless given another
/// (`AudioPlayer.session`). A player's `play()` activates its session. Sessions made with
/// `init(group:)` arbitrate only with the sessions of their group: what tests and programs
/// that keep apart several audio worlds use.
///
/// Players pause when an interruption begins and when the output they play to goes away
/// (`oldDeviceUnavailable`); they resume when the program asks (`play()`), or by themselves
/// at the end of an interruption that says `shouldResume` when `resumesAfterInterruption` is
/// set. Events come in order on a queue of the session's own, as an `AsyncStream` (`events`)
/// and to a handler (`setEventHandler(_:)`).
public final class AudioSession: Sendable {
    /// The process's session: the one players belong to unless told otherwise.
    public static let shared = AudioSession(group: .process)

    /// The gain the sessions of a group play at while another of it is active with
    /// `duckOthers`.
    public static let duckedGain: Float = 0.25

    /// The sessions this one arbitrates with.
    public let group: AudioSessionGroup

    let state: Locked<State>
    let listeners = Locked(Listeners())
    /// Where events are delivered, in order; also where the outputs' reports are handled.
    let eventQueue = DispatchQueue(label: "spool.session.events")

    struct State: @unchecked Sendable {
        // Sendable: the back-end and participants are Sendable; reached only through the lock.
        var category = Category.soloAmbient
        var options = CategoryOptions()
        var active = false
        /// Set from `.began` to `.ended`, with who interrupted.
        var interruption: AudioSessionInterruptionSource?
        var resumesAfterInterruption = false
        var preferredSampleRate: Double?
        var preferredIOBufferDuration: Double?
        /// The output the session opened (or was given), for players that name none.
        var backend: (any PlaybackBackend)?
        /// How the session opens its output: nil for the system's default; never for an output
        /// it was given (`reopens` false).
        var opener: (@Sendable (OutputConfiguration, String) throws -> any PlaybackBackend)?
        var reopens = true
        /// Outputs of the session's own that were lost and replaced: players still on one move
        /// to the session's current output at their next `play()`.
        var retired: [WeakBackend] = []
        var sink: String?
        var participants: [WeakParticipant] = []
        /// The participants an interruption paused: the ones it may resume.
        var pausedByInterruption: [WeakParticipant] = []
        /// The outputs whose reports the session hears, by object, with their tokens.
        var watched: [ObjectIdentifier: (backend: WeakBackend, token: VoiceHandlerToken)] = [:]
        /// Outputs already reported lost, so that a lost sink and the loss of its device make
        /// one route change.
        var lost: Set<ObjectIdentifier> = []
        /// The sessions this one interrupted, told when it deactivates.
        var interrupted: [WeakSession] = []
        var ducked = false
    }

    struct Listeners {
        var continuations: [Int: AsyncStream<AudioSessionEvent>.Continuation] = [:]
        var next = 0
        var handler: (@Sendable (AudioSessionEvent) -> Void)?
    }

    struct WeakParticipant: @unchecked Sendable {
        // Sendable: the participant is Sendable.
        weak var participant: (any AudioSessionParticipant)?
    }

    struct WeakBackend: @unchecked Sendable {
        // Sendable: the back-end is Sendable.
        weak var backend: (any PlaybackBackend)?
    }

    struct WeakSession: @unchecked Sendable {
        // Sendable: the session is Sendable.
        weak var session: AudioSession?
    }

    /// Makes a session of `group`, inactive, `soloAmbient`, that opens its output on first use.
    /// - Parameter group: The sessions it arbitrates with; `.process` is the shared session's.
    public init(group: AudioSessionGroup = .process) {
        self.group = group
        state = Locked(State())
        group.add(self)
    }

    /// Makes a session whose players play on `backend` unless they name another: a session
    /// on the OpenAL back-end, a private sound-server output, an offline renderer.
    /// - Parameters:
    ///   - backend: The output.
    ///   - group: The sessions it arbitrates with.
    public convenience init(backend: any PlaybackBackend, group: AudioSessionGroup = .process) {
        self.init(group: group)
        state.withLock { s in
            s.backend = backend
            s.reopens = false
        }
        watch(backend)
    }

    /// Makes a session that opens its output with `opening` (on first use, and again once
    /// the output was lost, for a player's next `play()`): a session on the OpenAL back-end, a
    /// named sink, another server.
    /// - Parameters:
    ///   - group: The sessions it arbitrates with.
    ///   - opening: Opens an output with the configuration the session asks for (its preferred
    ///     rate and I/O buffer) and the category's stream role.
    public convenience init(group: AudioSessionGroup = .process,
                            opening: @escaping @Sendable (_ configuration: OutputConfiguration, _ role: String) throws
                                -> any PlaybackBackend) {
        self.init(group: group)
        state.withLock { $0.opener = opening }
    }

    deinit {
        for entry in state.withLock({ $0.watched.values }) {
            entry.backend.backend?.removeOutputEventHandler(entry.token)
        }
        listeners.withLock { l in
            for continuation in l.continuations.values { continuation.finish() }
        }
    }

    // MARK: Category

    /// The category; `soloAmbient` until set. The corresponding Apple property is `category`.
    public var category: Category { state.withLock { $0.category } }

    /// The category's options. The corresponding Apple property is `categoryOptions`.
    public var categoryOptions: CategoryOptions { state.withLock { $0.options } }

    /// Whether the session mixes with the group's others rather than interrupting them.
    public var isMixable: Bool { state.withLock { Self.mixes($0) } }

    private static func mixes(_ s: State) -> Bool {
        s.category == .ambient || !s.options.isDisjoint(with: [.mixWithOthers, .duckOthers])
    }

    /// Sets the category and its options; the output the session opened or was given takes
    /// the category's role on the sound server at once (`Category.role`; an output a program
    /// opened itself keeps the role it was opened with), and a change is reported as a route change
    /// (`categoryChange`). The corresponding Apple call is `setCategory(_:options:)`.
    /// - Throws: `AudioError.Code.unsupported` for a category that records or processes
    ///   offline (Spool plays only); `.invalidParameter` for `duckOthers` on `ambient`
    ///   (which never takes the audio from anyone).
    public func setCategory(_ category: Category, options: CategoryOptions = []) throws {
        guard category.isSupported else {
            throw AudioError(.unsupported, "the audio session category \(category) is not offered: Spool plays only "
                             + "(ambient, soloAmbient, playback)")
        }
        if category == .ambient, options.contains(.duckOthers) {
            throw AudioError(.invalidParameter, "duckOthers needs soloAmbient or playback: ambient audio never takes over")
        }
        let (changed, route, backend) = state.withLock { s -> (Bool, Route, (any PlaybackBackend)?) in
            let changed = s.category != category || s.options != options
            s.category = category
            s.options = options
            return (changed, Self.route(s), s.backend)
        }
        guard changed else { return }
        backend?.setOutputRole(category.role)
        send(.routeChange(AudioSessionRouteChange(reason: .categoryChange, device: nil, previousRoute: route)))
    }

    // MARK: Activation

    /// Whether the session is active: set by `setActive(true)` or a player's `play()`,
    /// cleared by `setActive(false)` and by an interruption. The corresponding Apple notion
    /// is an active session.
    public var isActive: Bool { state.withLock { $0.active } }

    /// Whether an interruption has begun and not ended.
    public var isInterrupted: Bool { state.withLock { $0.interruption != nil } }

    /// Whether players an interruption paused play again by themselves when it ends with
    /// `shouldResume`; false (as on iOS, where the program decides) until set.
    public var resumesAfterInterruption: Bool {
        get { state.withLock { $0.resumesAfterInterruption } }
        set { state.withLock { $0.resumesAfterInterruption = newValue } }
    }

    /// Activates or deactivates the session. Activating a non-mixable session interrupts the
    /// group's other active non-mixable sessions (their players pause, they hear `.began`);
    /// with `duckOthers` the others play at `duckedGain` while it is active. Deactivating
    /// ends the interruptions it caused (`.ended`, with `shouldResume` when `options` holds
    /// `notifyOthersOnDeactivation`) and the ducking. The corresponding Apple call is
    /// `setActive(_:options:)`.
    /// - Throws: `AudioError.Code.unsupported` for an unsupported category;
    ///   `.invalidState` on deactivating while a player of the session plays (iOS's
    ///   `isBusy`: pause or stop it first).
    public func setActive(_ active: Bool, options: SetActiveOptions = []) throws {
        if active { return try activate() }
        if let playing = participants.first(where: { $0.isPlayingInSession && $0.keepsSessionBusy }) {
            throw AudioError(.invalidState, "the audio session cannot be deactivated while \(playing.sessionName) plays: "
                             + "pause or stop it first")
        }
        let (interrupted, ducking) = state.withLock { s -> ([AudioSession], Bool) in
            defer { (s.active, s.interrupted) = (false, []) }
            return (s.interrupted.compactMap(\.session), s.active && s.options.contains(.duckOthers))
        }
        for other in interrupted {
            other.endInterruption(from: .otherSession, shouldResume: options.contains(.notifyOthersOnDeactivation))
        }
        if ducking { for other in group.sessions where other !== self { other.setDucked(false) } }
    }

    private func activate() throws {
        let (category, mixes, ducks, wasActive) = state.withLock { s in
            (s.category, Self.mixes(s), s.options.contains(.duckOthers), s.active)
        }
        guard category.isSupported else { throw AudioError(.unsupported, "the audio session category \(category) is not offered") }
        guard !wasActive else { return }
        let corked = state.withLock { s -> [any PlaybackBackend] in
            defer {
                s.active = true
                s.interruption = nil
                s.pausedByInterruption = []
            }
            return s.interruption == .soundServer ? s.watched.values.compactMap { $0.backend.backend } : []
        }
        // Played during a call: the stream plays again on the server (which keeps it muted
        // until the call ends).
        for backend in corked { backend.setOutputCorked(false) }
        for other in group.sessions where other !== self {
            if ducks { other.setDucked(true) }
            if !mixes, other.isActive, !other.isMixable {
                other.interrupt(by: .otherSession)
                state.withLock { $0.interrupted.append(WeakSession(session: other)) }
            }
        }
    }

    /// Pauses the session's players and reports `.began`.
    func interrupt(by source: AudioSessionInterruptionSource) {
        let playing = state.withLock { s -> [any AudioSessionParticipant] in
            let playing = s.participants.compactMap(\.participant).filter { $0.isPlayingInSession }
            s.active = false
            s.interruption = source
            s.pausedByInterruption = playing.map { WeakParticipant(participant: $0) }
            return playing
        }
        for participant in playing { participant.pauseForSession(.interruption(source)) }
        send(.interruption(.began(source)))
    }

    /// Reports `.ended` for an interruption from `source`, resuming the players it paused
    /// when the session says so; nothing when no such interruption is on.
    func endInterruption(from source: AudioSessionInterruptionSource, shouldResume: Bool) {
        let resume = state.withLock { s -> [any AudioSessionParticipant]? in
            guard s.interruption == source else { return nil }
            s.interruption = nil
            defer { s.pausedByInterruption = [] }
            return shouldResume && s.resumesAfterInterruption ? s.pausedByInterruption.compactMap(\.participant) : []
        }
        guard let resume else { return }
        send(.interruption(.ended(shouldResume: shouldResume)))
        if !resume.isEmpty { state.withLock { $0.active = true } }
        for participant in resume { participant.resumeForSession() }
    }

    private func setDucked(_ ducked: Bool) {
        let participants = state.withLock { s -> [any AudioSessionParticipant]? in
            guard s.ducked != ducked else { return nil }
            s.ducked = ducked
            return s.participants.compactMap(\.participant)
        }
        for participant in participants ?? [] { participant.setSessionGain(ducked ? Self.duckedGain : 1) }
    }

    // MARK: Events

    /// The session's events from now on, in order: a new stream for each reader, finished when
    /// the session goes.
    public var events: AsyncStream<AudioSessionEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: AudioSessionEvent.self)
        let key = listeners.withLock { l in
            l.next += 1
            l.continuations[l.next] = continuation
            return l.next
        }
        continuation.onTermination = { [weak self] _ in _ = self?.listeners.withLock { $0.continuations.removeValue(forKey: key) } }
        return stream
    }

    /// Sets what to call, on the session's queue, for each event; `nil` to stop.
    public func setEventHandler(_ handler: (@Sendable (AudioSessionEvent) -> Void)?) {
        listeners.withLock { $0.handler = handler }
    }

    func send(_ event: AudioSessionEvent) {
        eventQueue.async { [listeners] in
            let (continuations, handler) = listeners.withLock { ($0.continuations.values, $0.handler) }
            for continuation in continuations { continuation.yield(event) }
            handler?(event)
        }
    }

    // MARK: Participants

    var participants: [any AudioSessionParticipant] { state.withLock { $0.participants.compactMap(\.participant) } }

    /// Takes `participant` in (once), and listens to its output.
    func register(_ participant: any AudioSessionParticipant) {
        let ducked = state.withLock { s -> Bool in
            s.participants.removeAll { $0.participant == nil || $0.participant === participant }
            s.participants.append(WeakParticipant(participant: participant))
            return s.ducked
        }
        if let backend = participant.participantBackend { watch(backend) }
        if ducked { participant.setSessionGain(Self.duckedGain) }
    }

    /// Lets `participant` go.
    func unregister(_ participant: any AudioSessionParticipant) {
        state.withLock { s in s.participants.removeAll { $0.participant == nil || $0.participant === participant } }
        participant.setSessionGain(1)
        if let backend = participant.participantBackend { unwatch(backend) }
    }

    /// A participant is about to play: the session activates (interrupting others, as
    /// `setActive(true)` does).
    func participantWillPlay(_ participant: any AudioSessionParticipant) throws {
        try activate()
    }
}

/// The sessions that arbitrate with each other: a non-mixable one that activates interrupts
/// the group's other active non-mixable ones. `process` holds the shared session and every
/// session made without a group.
public final class AudioSessionGroup: Sendable {
    /// The process's group.
    public static let process = AudioSessionGroup()

    private let members = Locked<[AudioSession.WeakSession]>([])

    /// Makes an empty group.
    public init() {}

    func add(_ session: AudioSession) {
        members.withLock { m in
            m.removeAll { $0.session == nil }
            m.append(AudioSession.WeakSession(session: session))
        }
    }

    /// The group's sessions still alive.
    var sessions: [AudioSession] { members.withLock { $0.compactMap(\.session) } }
}

/// The session a participant belongs to: `AudioSession.shared` from the start, held weakly.
final class SessionMembership: Sendable {
    private let link = Locked(AudioSession.WeakSession(session: AudioSession.shared))

    var session: AudioSession? { link.withLock { $0.session } }

    /// Registers `participant` with the session it starts in.
    func join(_ participant: any AudioSessionParticipant) { session?.register(participant) }

    /// Moves `participant` from its session to `newValue`.
    func move(_ participant: any AudioSessionParticipant, to newValue: AudioSession?) {
        let old = link.withLock { link in
            defer { link.session = newValue }
            return link.session
        }
        guard old !== newValue else { return }
        old?.unregister(participant)
        newValue?.register(participant)
    }
}

/// Why the session pauses a participant.
enum AudioSessionPauseCause: Sendable, Equatable {
    case interruption(AudioSessionInterruptionSource)
    case outputLost
}

/// A player the session pauses and resumes: `AudioPlayer` (and through it `Playlist` and
/// `MusicPlayerPool`), `SoundEffects`.
protocol AudioSessionParticipant: AnyObject, Sendable {
    /// The output it plays on, whose reports the session hears.
    var participantBackend: (any PlaybackBackend)? { get }
    /// Whether it plays now.
    var isPlayingInSession: Bool { get }
    /// A name for messages.
    var sessionName: String { get }
    /// Whether its playing stops the session from being deactivated (players: yes).
    var keepsSessionBusy: Bool { get }
    /// Pauses for an interruption or a lost output.
    func pauseForSession(_ cause: AudioSessionPauseCause)
    /// Resumes after an interruption.
    func resumeForSession()
    /// Plays at `gain` × its own volume (ducking).
    func setSessionGain(_ gain: Float)
}
