// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "Spool",
    products: [
        .library(name: "Spool", targets: ["Spool"]),
        .executable(name: "spool", targets: ["spool"]),
    ],
    targets: [
        // MARK: - C libraries (Debian packages, found with pkg-config)

        .systemLibrary(
            name: "CMPG123", path: "Sources/CMPG123", pkgConfig: "libmpg123",
            providers: [.apt(["libmpg123-dev"])]),
        .systemLibrary(
            name: "CVorbisFile", path: "Sources/CVorbisFile", pkgConfig: "vorbisfile",
            providers: [.apt(["libvorbis-dev"])]),
        .systemLibrary(
            name: "CSndFile", path: "Sources/CSndFile", pkgConfig: "sndfile",
            providers: [.apt(["libsndfile1-dev"])]),
        // libFLAC's stream decoder: FLAC frames from a StreamParser (the file decoder reads
        // FLAC through libsndfile, which links it too).
        .systemLibrary(
            name: "CFLAC", path: "Sources/CFLAC", pkgConfig: "flac",
            providers: [.apt(["libflac-dev"])]),
        .systemLibrary(
            name: "CALSA", path: "Sources/CALSA", pkgConfig: "alsa",
            providers: [.apt(["libasound2-dev"])]),
        .systemLibrary(
            name: "COpenAL", path: "Sources/COpenAL", pkgConfig: "openal",
            providers: [.apt(["libopenal-dev"])]),
        .systemLibrary(
            name: "CSoxr", path: "Sources/CSoxr", pkgConfig: "soxr",
            providers: [.apt(["libsoxr-dev"])]),
        .systemLibrary(
            name: "CSampleRate", path: "Sources/CSampleRate", pkgConfig: "samplerate",
            providers: [.apt(["libsamplerate0-dev"])]),
        .systemLibrary(
            name: "CSpeexDSP", path: "Sources/CSpeexDSP", pkgConfig: "speexdsp",
            providers: [.apt(["libspeexdsp-dev"])]),
        // No `pkgConfig:` here: its `-lswresample` would link the library, which SpoolResampling
        // loads when first used instead (SwresampleLibrary.swift); the headers are in the
        // multiarch include directory the compiler searches anyway.
        .systemLibrary(
            name: "CSwresample", path: "Sources/CSwresample",
            providers: [.apt(["libswresample-dev"])]),
        .systemLibrary(
            name: "COpusFile", path: "Sources/COpusFile", pkgConfig: "opusfile",
            providers: [.apt(["libopusfile-dev"])]),
        // SpoolOutput records the sound server's monitor through it. No
        // `pkgConfig:` here: libpulse's .pc files add `-pthread -D_REENTRANT`, which SwiftPM
        // refuses with a warning; its headers are in /usr/include and the module map links it.
        .systemLibrary(
            name: "CPulseSimple", path: "Sources/CPulseSimple",
            providers: [.apt(["libpulse-dev"])]),
        // libpulse's asynchronous API, for the native PulseAudio output device. Not linked, as
        // CPulseSimple: SpoolOutput loads libpulse when a PulseAudio device is first opened.
        .systemLibrary(
            name: "CPulse", path: "Sources/CPulse",
            providers: [.apt(["libpulse-dev"])]),
        // glibc's <malloc.h> (mallopt, mallinfo2), for AllocatorPolicy (the soak reads it there). Part
        // of libc, nothing to link.
        .systemLibrary(name: "CMalloc", path: "Sources/CMalloc"),
        // SoundTouch's C wrapper library: no pkg-config file names it (soundtouch.pc is the C++ one).
        .systemLibrary(
            name: "CSoundTouch", path: "Sources/CSoundTouch",
            providers: [.apt(["libsoundtouch-dev"])]),

        // MARK: - Targets

        .target(name: "SpoolCore", dependencies: ["CMalloc"]),
        .target(name: "SpoolDecoding", dependencies: ["SpoolCore", "CMPG123", "CVorbisFile", "CSndFile", "COpusFile", "CFLAC"]),
        // The rate converters both back-ends use, so that they convert alike.
        .target(name: "SpoolResampling", dependencies: ["SpoolCore", "CSoxr", "CSampleRate", "CSpeexDSP", "CSwresample", "CSoundTouch"]),
        // The output devices both back-ends play through: ALSA, PulseAudio, the clock-paced
        // null device, the offline renderer, their render thread and the factory that picks one.
        .target(name: "SpoolOutput", dependencies: ["SpoolCore", "CALSA", "CPulse", "CPulseSimple"]),
        .target(name: "SpoolBufferQueue", dependencies: ["SpoolCore", "SpoolResampling", "SpoolOutput"]),
        .target(name: "SpoolOpenAL", dependencies: ["SpoolCore", "SpoolResampling", "SpoolOutput", "COpenAL"]),
        .target(name: "Spool",
                dependencies: ["SpoolCore", "SpoolDecoding", "SpoolResampling", "SpoolOutput", "SpoolBufferQueue",
                               "SpoolOpenAL"]),
        // Every `spool bench` measurement and the one harness they share; not a product.
        .target(name: "SpoolBenchmarks", dependencies: ["Spool", "SpoolCore", "SpoolResampling", "SpoolOpenAL",
                                                  "CMPG123", "CVorbisFile", "COpusFile", "CSndFile"]),
        .executableTarget(name: "spool", dependencies: ["Spool", "SpoolBenchmarks"]),

        // MARK: - Examples

        .executableTarget(name: "CompareLatency", dependencies: ["Spool"], path: "Examples/CompareLatency"),
        .executableTarget(name: "PlayFile", dependencies: ["Spool"], path: "Examples/PlayFile"),
        .executableTarget(name: "MemoryBuffer", dependencies: ["Spool"], path: "Examples/MemoryBuffer"),
        .executableTarget(name: "SoundBank", dependencies: ["Spool"], path: "Examples/SoundBank"),
        .executableTarget(name: "Playlist", dependencies: ["Spool"], path: "Examples/Playlist"),
        .executableTarget(name: "Session", dependencies: ["Spool"], path: "Examples/Session"),
        .executableTarget(name: "StreamURL", dependencies: ["Spool"], path: "Examples/StreamURL"),

        // MARK: - Tests

        // One test target per library target; the seam's conformance suite runs every
        // statement of the seam on both back-ends.
        .testTarget(name: "SpoolCoreTests", dependencies: ["SpoolCore", "SpoolTestSupport"]),
        .testTarget(name: "SpoolDecodingTests",
                    dependencies: ["SpoolDecoding", "SpoolCore", "CMPG123", "CAllocationCounter", "SpoolTestSupport"]),
        .testTarget(name: "SpoolResamplingTests",
                    dependencies: ["SpoolResampling", "SpoolCore", "CAllocationCounter", "SpoolBenchmarks", "SpoolTestSupport"]),
        .testTarget(name: "SpoolOutputTests",
                    dependencies: ["SpoolOutput", "SpoolCore", "SpoolBufferQueue", "SpoolDecoding", "CAllocationCounter",
                                   "SoundServerTestSupport", "SpoolTestSupport"]),
        .testTarget(name: "SpoolBufferQueueTests",
                    dependencies: ["SpoolBufferQueue", "SpoolCore", "SpoolOutput", "SpoolResampling", "SpoolDecoding",
                                   "CAllocationCounter", "SpoolTestSupport"]),
        .testTarget(name: "SpoolOpenALTests",
                    dependencies: ["SpoolOpenAL", "SpoolCore", "SpoolResampling", "SpoolOutput", "SpoolBufferQueue",
                                   "SpoolDecoding", "CAllocationCounter", "SoundServerTestSupport", "SpoolBenchmarks",
                                   "SpoolTestSupport"]),
        .testTarget(name: "SeamConformanceTests",
                    dependencies: ["SpoolBufferQueue", "SpoolCore", "SpoolOutput", "SpoolOpenAL", "SpoolDecoding",
                                   "SoundServerTestSupport", "SpoolTestSupport"]),
        .testTarget(name: "SpoolTests", dependencies: ["Spool", "SpoolCore", "SpoolOpenAL", "SoundServerTestSupport", "SpoolTestSupport", "HTTPTestSupport"]),
        .testTarget(name: "SpoolToolTests", dependencies: ["spool", "Spool", "SpoolCore", "SpoolBenchmarks", "SpoolTestSupport",
                                                           "SoundServerTestSupport", "HTTPTestSupport"]),

        // MARK: - Test support

        // Counts heap allocations made on a thread while counting is switched on: the proof
        // that the render path does not allocate.
        .target(name: "CAllocationCounter", path: "Tests/CAllocationCounter"),
        // A real PulseAudio server for the tests that play to one: private null sinks, a
        // monitor recorder, and the analysis of a recorded tone.
        .target(name: "SoundServerTestSupport", dependencies: ["SpoolCore", "SpoolOutput"], path: "Tests/SoundServerTestSupport"),
        // The helpers every test target shares: signals and their measures, expectations on
        // AudioError codes, the offline rig both back-ends render through, and the window that
        // counts a render thread's allocations.
        .target(name: "SpoolTestSupport",
                dependencies: ["SpoolCore", "SpoolOutput", "SpoolBufferQueue", "SpoolOpenAL", "CAllocationCounter"],
                path: "Tests/SpoolTestSupport"),
        // Real HTTP servers for the streaming tests: nginx, a response-cutting proxy, an ICY station.
        .target(name: "HTTPTestSupport", dependencies: ["SpoolCore"], path: "Tests/HTTPTestSupport"),
        // The proof that each of those servers answers as its streaming tests will expect.
        .testTarget(name: "HTTPTestSupportTests", dependencies: ["HTTPTestSupport"], path: "Tests/HTTPTestSupportTests"),
    ],
    swiftLanguageModes: [.v6]
)
