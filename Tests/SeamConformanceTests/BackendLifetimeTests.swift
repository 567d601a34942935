import Foundation
import SpoolBufferQueue
import SpoolCore
import SpoolOutput
import SpoolOpenAL
import Testing
import SpoolTestSupport

/// A back-end goes with everything it started.
@Suite("Seam conformance: back-end lifetime")
struct BackendLifetimeTests {
    /// Makes and drops ten back-ends on the real-time null device without stopping anything,
    /// and counts this process's threads (`/proc/self/task`) before and after. Other tests
    /// may make and end threads meanwhile, so the smallest growth over three rounds is the
    /// leak: a leak grows every round, a neighbour's threads come and go.
    @Test(arguments: Backend.allCases)
    func droppingABackEndWithoutStoppingItLeavesNoThreadBehind(_ kind: Backend) throws {
        let configuration = OutputConfiguration(sampleRate: 48_000, periodFrames: 256, periodCount: 2)
        var growth: [Int] = []
        for _ in 0..<3 {
            let before = threadCount()
            for _ in 0..<10 {
                let backend: any PlaybackBackend = switch kind {
                case .queue: try BufferQueueBackend(device: NullDevice(configuration: configuration))
                case .openAL: try OpenALBackend(.null(configuration))
                }
                let voice = try backend.makeVoice(format: stereo48)
                try voice.enqueue(try constant(0.1, frames: 480))
                try voice.start()
            }
            // Threads that were told to end finish their current period or pass first.
            let deadline = Date().addingTimeInterval(1)
            while threadCount() > before, Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
            growth.append(threadCount() - before)
        }
        #expect((growth.min() ?? 99) <= 1, "threads grew by \(growth) over three rounds of ten back-ends")
    }
}
