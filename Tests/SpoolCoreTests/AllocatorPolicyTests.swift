import Foundation
import SpoolCore
import SpoolTestSupport
import Testing

/// `AllocatorPolicy.fixLargeBlockThreshold` keeps glibc from raising its mapping threshold
/// after a large block is freed, so that a large block made later is still mapped on its own
/// rather than carved from a heap arena. Each case runs in a process of its own: the setting is
/// the whole process's.
@Suite("AllocatorPolicy")
struct AllocatorPolicyTests {
    static let childVariable = "SPOOL_ALLOCATOR_POLICY_CHILD"

    @Test(arguments: [0, -1, 4_095, (32 << 20) + 1, Int.max, Int.min])
    func aThresholdOutOfRangeIsRefusedByName(_ bytes: Int) {
        #expect { try AllocatorPolicy.fixLargeBlockThreshold(bytes: bytes) } throws: { error in
            guard let error = error as? AudioError else { return false }
            return error.code == .invalidParameter && error.message.contains("\(bytes)")
        }
    }

    /// The child: frees a 1 MiB block (which raises glibc's threshold to 1 MiB unless it is
    /// fixed), then says whether a 256 KiB block made after it was mapped on its own.
    @Test(.disabled(if: TestEnvironment.underSanitizer,
                    "a sanitizer brings its own allocator"))
    func aLargeBlockAfterALargerOneIsFreedIsStillMappedOnItsOwn() throws {
        if let mode = ProcessInfo.processInfo.environment[Self.childVariable] {
            if mode == "fixed" { try AllocatorPolicy.fixLargeBlockThreshold() }
            let large = try #require(malloc(1 << 20))
            memset(large, 1, 1 << 20)
            free(large)
            let before = AllocatorPolicy.mappedBytes
            let block = try #require(malloc(256 << 10))
            memset(block, 1, 256 << 10)
            let mapped = AllocatorPolicy.mappedBytes - before >= 256 << 10
            free(block)
            print("SPOOL-ALLOCATOR \(mode) mapped=\(mapped)")
            return
        }
        for (mode, expected) in [("fixed", true), ("default", false)] {
            let (status, output) = try runInFreshProcess(filter: "aLargeBlockAfterALargerOneIsFreedIsStillMappedOnItsOwn",
                                                         environment: [Self.childVariable: mode],
                                                         removing: ["GLIBC_TUNABLES"])
            #expect(status == 0, "\(mode): the child failed:\n\(output.suffix(1500))")
            #expect(output.contains("SPOOL-ALLOCATOR \(mode) mapped=\(expected)"),
                    "\(mode): \(output.suffix(600))")
        }
    }
}
