#!/usr/bin/env bash
# Runs the test suite under AddressSanitizer (with LeakSanitizer) and under ThreadSanitizer,
# each in its own build folder, then a short run of every libFuzzer target. Called by
# scripts/test.sh; `scripts/sanitize.sh address`, `thread` or `fuzz` runs one part.
#
# Any sanitizer report fails the run: ASan and TSan make the test process (or the `spool`
# child it started) exit non-zero, which fails the test that started it or the run itself.
set -euo pipefail
cd "$(dirname "$0")/.."
parts=("$@")
((${#parts[@]})) || parts=(address thread fuzz)

summary() { grep -E '^(✔|✘|━) Test run with' "$1" | tail -n 1 || true; }
# The test servers' suites run on their own after the rest (see scripts/test.sh).
servers='HTTPTestSupportTests'
# `swift test` with the sanitizer's flags, the rest and then the servers' suites, into "$log".
# `skip` names more suites to leave out of the first run.
both() {
    bounded "$@" --skip "$servers${skip:+|$skip}" >"$log" 2>&1 \
        && { summary "$log" >"$log.rest"; bounded "$@" --filter "$servers" >>"$log" 2>&1; }
}
# ThreadSanitizer finds races between threads; the suites below run their code on one thread
# only (the decoders, parsers and converters as a voice's feeder calls them, and the tool's
# info, decode and offline benchmarks), so under it they would cost about half its run for
# nothing it can see. They run in the plain and AddressSanitizer runs. Left in: the buffer
# cache's and the resampler pool's suites (their work crosses threads) and every suite of
# the voices, players, sessions, devices and the tool's play and effects commands.
singleThreaded='SpoolDecodingTests\.(?!BufferCacheTests)|SpoolResamplingTests\.(?!VoiceResamplerPoolTests)'
singleThreaded+='|SpoolToolTests\.(BarChart|BenchReport|DecodeBenchSink|DecodeLoopBench|DecodeOutput|DecodeDiagnostics'
singleThreaded+='|DecodeRawOutput|DecodeSizeLimit|InfoCommand|MixBenchOutput|OpusTool|ResampleBenchOutput|Tool)Tests/'
# A sanitized test run that hangs fails in bounded time; `unfinished` names the tests left running.
bounded() { timeout -k 30 1500 "$@"; }
unfinished() {
    local left
    left=$(scripts/unfinished-tests "$1")
    [ -z "$left" ] || printf 'tests started and not ended:\n%s\n' "$left"
}

for part in "${parts[@]}"; do
    case "$part" in
        address)
            echo "== AddressSanitizer + LeakSanitizer: every test ($(date +%T))"
            swift build --build-tests --sanitize=address --scratch-path .build/asan -Xswiftc -warnings-as-errors 2>&1 \
                | { grep -v "Cannot export local symbol" || true; } | tail -n 3
            log=$(mktemp)
            # detect_leaks is on by default on Linux; the suppressions name toolchain-held memory only.
            # SPOOL_SANITIZER: the suites that time a real sound server leave that to the plain run.
            if ! SPOOL_SANITIZER=address ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1" \
                LSAN_OPTIONS="suppressions=$PWD/scripts/sanitizers/lsan.supp:print_suppressions=0" \
                both swift test --skip-build --sanitize=address --scratch-path .build/asan; then
                grep -E '✘|ERROR: (AddressSanitizer|LeakSanitizer)|SUMMARY' "$log" | head -n 60
                grep -A 60 -m 2 -E 'ERROR: (AddressSanitizer|LeakSanitizer)' "$log" | head -n 150
                unfinished "$log"
                echo "address sanitizer run failed" >&2
                exit 1
            fi
            cat "$log.rest"; summary "$log"; rm -f "$log" "$log.rest" ;;
        thread)
            echo "== ThreadSanitizer: every suite whose code crosses threads ($(date +%T))"
            # `Locked` announces its critical sections to the sanitizer (see Sources/SpoolCore/Locked.swift).
            swift build --build-tests --sanitize=thread --scratch-path .build/tsan -Xswiftc -warnings-as-errors \
                2>&1 | tail -n 3
            log=$(mktemp)
            # SPOOL_SANITIZER: the suites that time a real sound server leave that to the plain run.
            if ! SPOOL_SANITIZER=thread TSAN_OPTIONS="halt_on_error=0:second_deadlock_stack=1:report_signal_unsafe=0" \
                skip="$singleThreaded" both swift test --skip-build --sanitize=thread --scratch-path .build/tsan \
                || grep -q "WARNING: ThreadSanitizer" "$log"; then
                grep -E '✘|WARNING: ThreadSanitizer|SUMMARY' "$log" | head -n 60
                grep -A 30 -m 3 "WARNING: ThreadSanitizer" "$log" | head -n 120
                unfinished "$log"
                echo "thread sanitizer run failed" >&2
                exit 1
            fi
            cat "$log.rest"; summary "$log"; rm -f "$log" "$log.rest" ;;
        fuzz)
            echo "== libFuzzer targets, ${SPOOL_FUZZ_SECONDS:-10} s each ($(date +%T))"
            scripts/fuzz.sh --seconds "${SPOOL_FUZZ_SECONDS:-10}" ;;
        *) echo "sanitize.sh: unknown part '$part' (address, thread, fuzz)" >&2; exit 2 ;;
    esac
done
