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

        // MARK: - Targets

        .target(name: "SpoolCore"),
        .target(name: "SpoolDecoding", dependencies: ["SpoolCore", "CMPG123", "CVorbisFile", "CSndFile"]),
        .target(name: "Spool", dependencies: ["SpoolCore", "SpoolDecoding"]),
        .executableTarget(name: "spool", dependencies: ["Spool"]),

        // MARK: - Tests

        .testTarget(name: "SpoolCoreTests", dependencies: ["SpoolCore"]),
        .testTarget(name: "SpoolDecodingTests", dependencies: ["SpoolDecoding"]),
        .testTarget(name: "SpoolToolTests", dependencies: ["spool", "Spool"]),
    ],
    swiftLanguageModes: [.v6]
)
