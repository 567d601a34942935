// Spool: iOS-style audio playback for Swift on Linux. This module re-exports every layer,
// so `import Spool` is all a program needs.
@_exported import SpoolCore
@_exported import SpoolDecoding
@_exported import SpoolOutput
@_exported import SpoolBufferQueue
@_exported import SpoolOpenAL
@_exported import SpoolResampling
