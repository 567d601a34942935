#!/usr/bin/env bash
#
# Regenerates Fixtures/long/: twelve seconds of mono 22.05 kHz audio in each compressed
# format, each file more than twice the 64 KiB a decoder reads ahead and longer than the two
# seconds a player decodes ahead, for the tests that change a file on disk while it plays
# (its decoder must meet the change, not bytes read or decoded at open).
#
#   Fixtures/long/tone-12s.mp3    a 300-900 Hz sweep, LAME 128 kbit/s CBR, with its Info frame
#   Fixtures/long/tone-12s.ogg    the sweep with white noise 20 dB under it (which keeps the
#                                 file from shrinking below the read-ahead), Ogg Vorbis
#                                 quality 8, serial number 12
#   Fixtures/long/tone-12s.flac   the sweep, FLAC 16-bit, level 5
#
# The files are committed; sox, lame, oggenc and flac are needed only to regenerate them.
# Deterministic: the same tool versions give byte-identical files (LAME 3.100, vorbis-tools
# 1.4.2, FLAC 1.4.2, SoX 14.4; SoX's noise is seeded with -R).
#
# Usage: Fixtures/make-long-fixtures.sh   (from any directory)

set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
export LC_ALL=C TZ=UTC
for tool in sox lame oggenc flac; do
    command -v "$tool" >/dev/null || { echo "missing tool: $tool" >&2; exit 1; }
done
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p long
sox -R -n -r 22050 -c 1 -b 16 "$TMP/sweep.wav" synth 12 sine 300-900 vol 0.5
sox -R -n -r 22050 -c 1 -b 16 "$TMP/noise.wav" synth 12 whitenoise vol 0.05
sox -R -m "$TMP/sweep.wav" "$TMP/noise.wav" "$TMP/noisy.wav"
lame --quiet --noreplaygain -b 128 "$TMP/sweep.wav" long/tone-12s.mp3
oggenc --quiet -q 8 --serial 12 -o long/tone-12s.ogg "$TMP/noisy.wav"
flac --silent --force -5 --no-padding -o long/tone-12s.flac "$TMP/sweep.wav"
