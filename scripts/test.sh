#!/usr/bin/env bash
# Builds Spool with warnings as errors and runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/pulseaudio.sh
swift build --build-tests -Xswiftc -warnings-as-errors
swift test --skip-build
