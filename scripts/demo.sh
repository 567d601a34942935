#!/usr/bin/env bash
# The main job: play a fixture through the buffer-queue back-end on the default output
# (the sound server or card; the null device, with a notice, where there is none), then
# describe it and render it offline to a WAV file.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
swift build -c release --product spool
spool=.build/release/spool
$spool play Fixtures/vorbis-44100-stereo.ogg
$spool info Fixtures/mp3-44100-stereo.mp3
$spool play Fixtures/mp3-44100-stereo.mp3 --output wav:/tmp/spool-demo.wav
$spool info /tmp/spool-demo.wav
