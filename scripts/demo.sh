#!/usr/bin/env bash
# The main job: describe a fixture and decode it (playback arrives with the back-ends).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
swift build -c release --product spool
.build/release/spool info Fixtures/mp3-44100-stereo.mp3
.build/release/spool decode Fixtures/mp3-44100-stereo.mp3 --output /tmp/spool-demo.wav
.build/release/spool info /tmp/spool-demo.wav
