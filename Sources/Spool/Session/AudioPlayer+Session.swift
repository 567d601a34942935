import SpoolCore

extension AudioPlayer: AudioSessionParticipant {
    var participantBackend: (any PlaybackBackend)? { backend }
    var isPlayingInSession: Bool { isPlaying }
    var sessionName: String { url.map { "the player of \($0.lastPathComponent)" } ?? "a player" }

    func pauseForSession() { try? pause() }

    func resumeForSession() { try? play() }

    func setSessionGain(_ gain: Float) { applySessionGain(gain) }
}
