/// A key the terminal player acts on.
enum PlayerKey: Equatable {
    case character(Character)
    case left, right, up, down
    /// Ctrl-C: with `ISIG` off it arrives as a byte, and means what SIGINT means.
    case interrupt
}

/// Turns the bytes a terminal sends into keys: printable characters, the arrow keys' escape
/// sequences (`ESC [ A…D`, and `ESC O A…D` from a terminal in application cursor mode, either
/// with parameters such as `ESC [ 1 ; 5 C` for a modified arrow), Ctrl-C. A sequence split
/// across two reads is kept until the rest arrives; other sequences and control bytes are
/// dropped whole, so their tail is never taken for keys.
struct KeyDecoder {
    private var pending: [UInt8] = []

    /// The keys in `bytes`, after what an earlier call left unfinished.
    mutating func keys(from bytes: [UInt8]) -> [PlayerKey] {
        pending += bytes
        var keys: [PlayerKey] = []
        var i = 0
        scan: while i < pending.count {
            let byte = pending[i]
            switch byte {
            case 0x1B:
                guard i + 1 < pending.count else { break scan }
                let introducer = pending[i + 1]
                guard introducer == UInt8(ascii: "[") || introducer == UInt8(ascii: "O") else {
                    i += 1  // a lone Escape, or Alt+key: the Escape is dropped
                    continue
                }
                // Parameters and intermediates (0x20…0x3F), then the final byte (0x40…0x7E).
                var j = i + 2
                while j < pending.count, (0x20...0x3F).contains(pending[j]) { j += 1 }
                guard j < pending.count else { break scan }
                switch pending[j] {
                case UInt8(ascii: "A"): keys.append(.up)
                case UInt8(ascii: "B"): keys.append(.down)
                case UInt8(ascii: "C"): keys.append(.right)
                case UInt8(ascii: "D"): keys.append(.left)
                default: break
                }
                i = j + 1
            case 0x03:
                keys.append(.interrupt)
                i += 1
            case 0x20...0x7E:
                keys.append(.character(Character(Unicode.Scalar(byte))))
                i += 1
            default:
                i += 1  // other control bytes, and UTF-8 the player has no key for
            }
        }
        pending.removeFirst(i)
        // Nothing a terminal sends is this long unfinished: drop it rather than grow.
        if pending.count > 32 { pending = [] }
        return keys
    }

    /// Forgets an unfinished sequence: a lone Escape typed and nothing after it.
    mutating func flush() { pending = [] }

    /// Whether a sequence waits for its end.
    var isWaiting: Bool { !pending.isEmpty }
}
