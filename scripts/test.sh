#!/usr/bin/env bash
# Builds Spool with warnings as errors and runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/pulseaudio.sh
swift build --build-tests -Xswiftc -warnings-as-errors
swift test --skip-build
# A short run of the latency bench on the sound server, the acoustic check included, so that
# it cannot rot (it asserts nothing about speed; it fails when a back-end's own latency
# report disagrees with what the recording of the server's monitor heard).
.build/debug/spool bench latency --backends queue,openal --output default --buffer-frames 256 --buffers 3 \
    --starts 10 --seconds 1 --no-reference --acoustic
