#!/usr/bin/env bash
# Makes the long files `spool bench decode` is run on (they are too large to commit):
# MINUTES (default 8) of a chord of slow sweeps over pink noise 20 dB down, in every codec
# and at the rates the benchmark notes use.
#
#   mp3-44100-stereo-v2.mp3    LAME -V2 (VBR, Xing/LAME tag), MPEG-1
#   mp3-22050-mono-64.mp3      LAME 64 kbit/s CBR, MPEG-2 (the 22.05 kHz file)
#   vorbis-44100-stereo-q5.ogg oggenc -q 5
#   opus-48000-stereo-128.opus opusenc 128 kbit/s
#   flac-44100-stereo.flac     flac -5
#   wav-44100-stereo-s16.wav   PCM
#
# Usage: scripts/make-bench-files.sh [DIR] [MINUTES]   (DIR defaults to /tmp/spool-bench)
set -euo pipefail
dir=${1:-/tmp/spool-bench}
minutes=${2:-8}
for tool in sox lame oggenc opusenc flac; do
    command -v "$tool" >/dev/null || { echo "missing tool: $tool (scripts/setup.sh installs it)" >&2; exit 1; }
done
mkdir -p "$dir"
seconds=$((minutes * 60))
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sox -R -n -r 44100 -c 2 -b 16 "$tmp/chord.wav" synth "$seconds" sine 220-440 sine 330-660 vol 0.3
sox -R -n -r 44100 -c 2 -b 16 "$tmp/noise.wav" synth "$seconds" pinknoise vol 0.03
sox -R -m "$tmp/chord.wav" "$tmp/noise.wav" "$dir/wav-44100-stereo-s16.wav"
sox -R "$dir/wav-44100-stereo-s16.wav" -r 22050 -c 1 "$tmp/mono22.wav"
lame --quiet --noreplaygain -V 2 "$dir/wav-44100-stereo-s16.wav" "$dir/mp3-44100-stereo-v2.mp3"
lame --quiet --noreplaygain -b 64 "$tmp/mono22.wav" "$dir/mp3-22050-mono-64.mp3"
oggenc --quiet -q 5 -o "$dir/vorbis-44100-stereo-q5.ogg" "$dir/wav-44100-stereo-s16.wav"
opusenc --quiet --bitrate 128 "$dir/wav-44100-stereo-s16.wav" "$dir/opus-48000-stereo-128.opus"
flac --silent --force -5 -o "$dir/flac-44100-stereo.flac" "$dir/wav-44100-stereo-s16.wav"
ls -l "$dir"
