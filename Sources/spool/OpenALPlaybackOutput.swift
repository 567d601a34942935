import Foundation
import Spool

/// The OpenAL back-end on the output the command line names.
enum OpenALPlaybackOutput {
    static func open(output: String, wavPath: String?, configuration: OutputConfiguration) throws -> PlaybackOutput {
        throw AudioError(.unsupportedFormat, "the OpenAL back-end is not available yet")
    }
}
