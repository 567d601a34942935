#!/usr/bin/env bash
#
# Regenerates Fixtures/ogg/: Ogg files that are not Vorbis, and Vorbis files damaged the
# way a mutation fuzzer damaged them (chained links that change channel count, granule
# positions raised to 2^63-1, missing pages, changed header_type flags, setup headers
# whose codebooks declare 0 dimensions, ...). Each damaged file is an existing Vorbis
# fixture from Fixtures/ with a few bytes changed by the Python step below, page
# checksums recomputed where the case says so; cases.json says what was changed.
#
# The generated files are committed; the tools are only needed to regenerate them:
#   sox, opusenc (opus-tools), flac, ffmpeg with libspeex, python3 (stdlib only).
#
# Usage: Fixtures/make-ogg-fixtures.sh        (may be run from any directory)
#
# Deterministic: fixed serial numbers, fixed random seeds, ffmpeg in bitexact mode.

set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
export LC_ALL=C TZ=UTC

for tool in sox opusenc flac ffmpeg python3; do
    command -v "$tool" >/dev/null || { echo "missing tool: $tool" >&2; exit 1; }
done

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
OUT=ogg
# Only ever delete what this script creates.
rm -rf "$OUT"
mkdir -p "$OUT"

# ---------------------------------------------------------------------------
# Other codecs in Ogg (VorbisDecoder must refuse each, naming it)
# ---------------------------------------------------------------------------
sox -V1 -D -n -r 48000 -c 2 -b 16 "$TMP/48000-2.wav" synth 0.25 sine 440 sine 550 gain -n -6
sox -V1 -D -n -r 16000 -c 1 -b 16 "$TMP/16000-1.wav" synth 0.25 sine 440 gain -n -6

opusenc --quiet --serial 3001 --padding 0 --discard-comments "$TMP/48000-2.wav" "$OUT/opus-48000-stereo.opus"
flac -s -f --ogg --serial-number=3002 --no-padding -o "$OUT/flac-48000-stereo.oga" "$TMP/48000-2.wav"
ffmpeg -nostdin -v error -y -i "$TMP/16000-1.wav" -map_metadata -1 -fflags +bitexact -flags:a +bitexact \
    -c:a libspeex -f ogg "$OUT/speex-16000-mono.spx"

# ---------------------------------------------------------------------------
# Byte-level cases (Python, standard library only)
# ---------------------------------------------------------------------------
cat >"$TMP/ogg.py" <<'PYEOF'
import json, random, struct, sys

CASES = {}

def crc(page):
    """Ogg CRC-32: polynomial 0x04C11DB7, unreflected, initial value 0 (RFC 3533)."""
    c = 0
    for b in page:
        c ^= b << 24
        for _ in range(8):
            c = ((c << 1) ^ 0x04C11DB7) if c & 0x80000000 else (c << 1)
            c &= 0xFFFFFFFF
    return c

def page_with_crc(header_type, granule, serial, sequence, packets_lacing, body):
    head = bytearray(b'OggS' + bytes([0, header_type]) + struct.pack('<qIII', granule, serial, sequence, 0)
                     + bytes([len(packets_lacing)]) + bytes(packets_lacing))
    page = head + body
    struct.pack_into('<I', page, 22, crc(page))
    return bytes(page)

def case(name, note, **facts):
    CASES[name] = dict(note=note, **facts)

def randombytes(rng, n):
    return bytes(rng.getrandbits(8) for _ in range(n))

def non_vorbis():
    rng = random.Random(9001)
    # "OggS" and then nothing but noise: no page at all.
    open('ogg/random-after-capture-pattern.ogg', 'wb').write(b'OggS' + randombytes(rng, 4092))
    case('random-after-capture-pattern.ogg', 'the capture pattern OggS, then 4092 random bytes: no valid page')
    # A valid BOS page (checksum right) whose only packet is noise, then more noise.
    body = randombytes(rng, 200)
    page = page_with_crc(0x02, 0, 3003, 0, [200], body)
    open('ogg/random-packet.ogg', 'wb').write(page + randombytes(rng, 3000))
    case('random-packet.ogg', 'one valid BOS page whose packet is 200 random bytes, then 3000 random bytes')

if __name__ == '__main__':
    for step in sys.argv[1:]:
        globals()[step]()
    json.dump(CASES, open('ogg/cases.json', 'w'), indent=2, sort_keys=True)
    open('ogg/cases.json', 'a').write('\n')
PYEOF
python3 "$TMP/ogg.py" non_vorbis

ls -l "$OUT"
