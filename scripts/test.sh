#!/usr/bin/env bash
# Checks the style and the documentation, builds Spool with warnings as errors and runs every
# test, then the same tests under the address and thread sanitizers and a short run of each
# fuzz target.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each step says when it starts, so that a slow step shows in the log.
step() { echo "== $* ($(date +%T), ${SECONDS} s in)"; }
step "set-up: Debian packages and the sound server"
./scripts/setup.sh
./scripts/pulseaudio.sh
# One style (the checked-in .swift-format's rules).
step "style"
./scripts/lint.sh
step "build"
swift build --build-tests -Xswiftc -warnings-as-errors
# Documentation whose every symbol link resolves (DocC from the symbol graphs of the modules
# just built; any docc warning fails).
step "documentation"
./scripts/docs.sh
log=$(mktemp)
# A test run that hangs fails in bounded time, naming the tests that started and never ended,
# instead of holding the run until its caller gives up.
bounded() {
    local seconds=$1; shift
    local status=0
    timeout -k 30 "$seconds" "$@" || status=$?
    if [ "$status" = 124 ] || [ "$status" = 137 ]; then
        echo "timed out after $seconds s; tests started and not ended:"
        scripts/unfinished-tests "$log"
    fi
    return "$status"
}
# The suites that time a real sound server or a real-time device run on their own after the rest, so that the rest's
# parallel work does not steal their real-time threads' wake-ups.
realtime='SoundServerTests|PulseAudioTests|SoundServerEventTests|PulseAudioRewindTests|PlaySessionTests|NativeOutputToolTests|PlaylistAnnouncementTests|StreamingRealTimeTests|SlowDecoderTests'
# The test servers' own suites (nginx, the fault proxy, the ICY server) wait on URLSession
# from async tests: on two cores the rest's blocking tests can hold the cooperative threads
# past their time limits, so they run on their own too (a few seconds).
servers='HTTPTestSupportTests'
step "every test but the timed and the servers' suites"
bounded 1200 swift test --skip-build --skip "$realtime|$servers" 2>&1 | tee "$log"
first=$(sed -n 's/.*Test run with \([0-9]*\) tests.* passed after.*/\1/p' "$log" | tail -1)
step "the test servers' suites"
bounded 300 swift test --skip-build --filter "$servers" 2>&1 | tee "$log"
first=$(( ${first:-0} + $(sed -n 's/.*Test run with \([0-9]*\) tests.* passed after.*/\1/p' "$log" | tail -1) ))
# They time a real server on a shared machine, which can hold its threads off once (the
# figures they print say by how much); a failure twice in a row fails.
timed() { bounded 600 swift test --skip-build --filter "$realtime" 2>&1 | tee "$log"; }
step "the suites that time a real sound server or a real-time device"
timed || { echo "the sound-server suites failed once; running them again"; timed; }
second=$(sed -n 's/.*Test run with \([0-9]*\) tests.* passed after.*/\1/p' "$log" | tail -1)
passed=$(( ${first:-0} + ${second:-0} ))
rm -f "$log"
# A short run of the latency bench on the sound server, the acoustic check included, so that
# it cannot rot (it asserts nothing about speed; it fails when a back-end's own latency
# report disagrees with what the recording of the server's monitor heard). A recording of a
# real sound server on a busy machine can miss a click once; twice in a row fails.
smoke() {
    .build/debug/spool bench latency --backends queue,openal --output default --buffer-frames 256 --buffers 3 \
        --starts 10 --seconds 1 --no-reference --acoustic
}
step "latency smoke run"
smoke || { echo "the latency smoke run failed once; running it again"; smoke; }

# The same tests under AddressSanitizer (LeakSanitizer on) and ThreadSanitizer, and every
# libFuzzer target for a short time (scripts/sanitize.sh; SPOOL_SANITIZE=0 skips it locally).
if [ "${SPOOL_SANITIZE:-1}" != 0 ]; then
    ./scripts/sanitize.sh
fi

step "done"
# The closing count (Swift Testing's; swift test's XCTest runner finds no tests here).
echo "tests: ${passed:-0} passed, 0 failed"
