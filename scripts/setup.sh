#!/usr/bin/env bash
# Installs the Debian packages Spool builds against and the tools its tests and benchmarks
# use. Safe to run again: apt skips what is already there.
set -euo pipefail

packages=(
    pkg-config
    libmpg123-dev libvorbis-dev libsndfile1-dev   # decoders
    libopusfile-dev                                # Ogg Opus decoder
    libflac-dev                                    # FLAC stream decoder (libFLAC)
    mpg123 vorbis-tools flac sox opus-tools        # reference decoders for `spool bench decode`
    libasound2-dev libsoxr-dev libsamplerate0-dev  # ALSA output and resamplers (buffer-queue back-end)
    libspeexdsp-dev libswresample-dev              # more resamplers, compared by `spool bench resample`
    libopenal-dev                                  # OpenAL Soft (OpenAL back-end)
    libsoundtouch-dev                              # time-stretch (pitch-preserving rate)
    pulseaudio pulseaudio-utils libasound2-plugins # sound server with a null sink, parec, ALSA `default` → server
    libpulse-dev                                   # the acoustic check's in-process monitor recorder
    nginx libcurl4                                 # HTTP streaming tests: nginx serves, URLSession (libcurl) fetches
)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
