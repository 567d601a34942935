#!/usr/bin/env bash
# Starts a PulseAudio daemon with a null sink for the tests that check what really comes out of
# the sound server (they record the sink's monitor, `null.monitor`). Does nothing when a server
# already answers, so it is safe to run again.
set -euo pipefail

if pactl info >/dev/null 2>&1; then
    exit 0
fi
if ! command -v pulseaudio >/dev/null; then
    echo "pulseaudio.sh: pulseaudio is not installed (run scripts/setup.sh)" >&2
    exit 1
fi

# -n: no default.pa, so the null sink is the only (and default) sink; never exit when idle.
pulseaudio -D --exit-idle-time=-1 -n --load=module-null-sink --load=module-native-protocol-unix

for _ in $(seq 50); do
    pactl info >/dev/null 2>&1 && exit 0
    sleep 0.1
done
echo "pulseaudio.sh: the PulseAudio daemon did not answer within 5 s" >&2
exit 1
