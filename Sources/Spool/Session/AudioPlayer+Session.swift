import SpoolCore

extension AudioPlayer: AudioSessionParticipant {
    var participantBackend: (any PlaybackBackend)? { backend }
    var isPlayingInSession: Bool { isPlaying }
    var sessionName: String { url.map { "the player of \($0.lastPathComponent)" } ?? "a player" }
    var keepsSessionBusy: Bool { true }

    func pauseForSession(_ cause: AudioSessionPauseCause) { try? pause() }

    func resumeForSession() { try? play() }

    func setSessionGain(_ gain: Float) { applySessionGain(gain) }
}

extension SoundEffects: AudioSessionParticipant {
    var participantBackend: (any PlaybackBackend)? { backend }
    var isPlayingInSession: Bool { isPlayingAny }
    var sessionName: String { "a sound effect" }
    /// Sounds take the audio from no one: they never keep a session busy.
    var keepsSessionBusy: Bool { false }

    func pauseForSession(_ cause: AudioSessionPauseCause) {
        if cause != .interruption(.otherSession) { stopAll() }
    }

    /// Short sounds do not resume.
    func resumeForSession() {}

    /// Sounds are not ducked: they are short, and play at the volume they were asked for.
    func setSessionGain(_ gain: Float) {}
}
