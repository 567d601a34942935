#if canImport(Glibc)
import Glibc
#endif

/// "One thread delivers at a time", as the seam's handler rule says: both back-ends hand
/// consumed buffers and finishes to the program through one of these, so that handlers run in
/// order, never two at once, and a handler that calls the voice back is not re-entered.
///
/// A call that finds no delivery under way delivers on its own thread. One that finds a
/// delivery under way on its own thread (a handler calling back), or that does not wait,
/// leaves what it brought to the running delivery, which goes round once more. One that waits
/// (a control call that must return with its handlers run) waits for the other thread to end
/// and then delivers what is left itself.
package final class DeliveryTurn: Sendable {
    private struct State {
        /// The thread delivering now, if any.
        var owner: pthread_t?
        /// More arrived while it delivered.
        var again = false
    }

    private let state = Locked(State())

    package init() {}

    /// Runs `deliver` here, or leaves it to the delivery under way.
    /// - Parameters:
    ///   - waitingForOthers: Whether to wait for another thread's delivery and then deliver here.
    ///   - deliver: Hands over everything due; run again while more arrived during it.
    /// - Returns: Whether this call delivered.
    @discardableResult
    package func deliver(waitingForOthers: Bool, _ deliver: () -> Void) -> Bool {
        let me = pthread_self()
        while true {
            let claimed = state.withLock { d -> Bool? in
                guard let owner = d.owner else {
                    d.owner = me
                    return true
                }
                if pthread_equal(owner, me) != 0 || !waitingForOthers {
                    d.again = true
                    return false
                }
                return nil  // another thread delivers: wait for it
            }
            if claimed == true { break }
            if claimed == false { return false }
            usleep(200)
        }
        repeat {
            deliver()
        } while state.withLock { d -> Bool in
            if d.again {
                d.again = false
                return true
            }
            d.owner = nil
            return false
        }
        return true
    }
}
