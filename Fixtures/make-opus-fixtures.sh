#!/usr/bin/env bash
#
# Regenerates the Ogg Opus fixtures and the Ogg payload fixtures the sniffing tests use:
#
#   Fixtures/opus/*.opus               good files: mono (hard CBR), stereo, 5.1, a 44.1 kHz
#                                      source, tags, two chained files
#   Fixtures/opus/broken/              a truncated file, a corrupt page, bad headers
#   Fixtures/opus/ogg/                 Ogg streams that carry something other than Opus or
#                                      Vorbis (FLAC, Speex, Theora, an unknown codec) and
#                                      random bytes, all named .ogg
#   Fixtures/opus/reference/<f>.f32    PCM decoded by ffmpeg's own Opus decoder (not libopus,
#                                      not libopusfile: an independent implementation),
#                                      interleaved float32 little-endian, 48 kHz, WAV order
#
# The files are committed: opusenc, ffmpeg, sox, flac and python3 (standard library only)
# are needed to regenerate them, never to build or test Spool. The signal is the one
# make-fixtures.sh uses (two steady sines per channel at -6 dBFS, different in every
# channel), so a decoder that reorders channels is caught. Every step is deterministic
# (fixed serial numbers, fixed random seeds, no time stamps): with the same tool versions
# a second run writes byte-identical files.
#
# Usage: Fixtures/make-opus-fixtures.sh        (may be run from any directory)

set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
export LC_ALL=C TZ=UTC

for tool in sox opusenc ffmpeg flac python3; do
    command -v "$tool" >/dev/null || { echo "missing tool: $tool" >&2; exit 1; }
done
for codec in libspeex libtheora; do
    [[ $(ffmpeg -hide_banner -encoders 2>/dev/null) == *" $codec "* ]] ||
        { echo "ffmpeg lacks the $codec encoder" >&2; exit 1; }
done

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# Only ever delete what this script creates (opus/README.md is written by hand).
rm -rf opus/broken opus/ogg opus/reference
rm -f opus/*.opus
mkdir -p opus/broken opus/ogg opus/reference

cat >"$TMP/fx.py" <<'PYEOF'
import json, math, random, struct, sys

TONE1 = [440, 550, 660, 110, 880, 990, 1100, 1210]
TONE2 = [1000, 1250, 1500, 165, 2000, 2250, 2500, 2750]

def crc(page):
    """Ogg's CRC-32: polynomial 0x04C11DB7, unreflected, initial value 0 (RFC 3533)."""
    r = 0
    for b in page:
        r ^= b << 24
        for _ in range(8):
            r = ((r << 1) ^ 0x04C11DB7) if r & 0x80000000 else (r << 1)
            r &= 0xFFFFFFFF
    return r

def pages(data):
    """(offset, size, header_type, granule, serial, body offset, lacing) of every page."""
    out, pos = [], 0
    while pos < len(data):
        assert data[pos:pos + 4] == b'OggS', 'lost sync at %d' % pos
        nseg = data[pos + 26]
        lacing = list(data[pos + 27:pos + 27 + nseg])
        size = 27 + nseg + sum(lacing)
        out.append((pos, size, data[pos + 5], struct.unpack_from('<q', data, pos + 6)[0],
                    struct.unpack_from('<I', data, pos + 14)[0], pos + 27 + nseg, lacing))
        pos += size
    return out

def refix(data, offset, size):
    struct.pack_into('<I', data, offset + 22, 0)
    struct.pack_into('<I', data, offset + 22, crc(data[offset:offset + size]))

def playable(path):
    """Frames a decoder must output, from the pages alone (RFC 7845 section 4): for each
    link, its last granule position minus its pre-skip (opusenc starts links at 0)."""
    data = open(path, 'rb').read()
    total, pre_skip, last = 0, None, None
    for off, size, htype, gp, serial, body, lacing in pages(data):
        if htype & 2:
            if pre_skip is not None:
                total += last - pre_skip
            assert data[body:body + 8] == b'OpusHead'
            pre_skip = struct.unpack_from('<H', data, body + 10)[0]
        if gp >= 0:
            last = gp
    return total + last - pre_skip

def check(path, ref, channels):
    """The reference is as long as the pages say and each channel carries its own tones."""
    raw, channels = open(ref, 'rb').read(), int(channels)
    frames = len(raw) // (4 * channels)
    assert frames == playable(path), '%s: ffmpeg decoded %d frames, the pages say %d' % (path, frames, playable(path))
    xs = struct.unpack('<%df' % (len(raw) // 4), raw)
    for c in range(channels):
        ys = xs[4096 * channels + c:8192 * channels:channels]
        def power(f):
            k = 2 * math.cos(2 * math.pi * f / 48000)
            s1 = s2 = 0.0
            for y in ys:
                s1, s2 = y + k * s1 - s2, s1
            return s1 * s1 + s2 * s2 - k * s1 * s2
        best = max(range(8), key=lambda i: power(TONE1[i]))
        assert best == c, '%s: channel %d carries the tones of channel %d' % (path, c, best)
    print('%-44s %6d frames' % (path, frames))

def cut(src, dst, fraction):
    """Cut a file in the middle of a page."""
    data = open(src, 'rb').read()
    n = int(len(data) * float(fraction))
    starts = [p[0] for p in pages(data)]
    assert n not in starts, 'cut on a page boundary'
    open(dst, 'wb').write(data[:n])

def corrupt(src, dst, seed):
    """Overwrite the body of a page in the middle of the audio with random bytes, leaving its
    checksum as it was: libogg drops the page, the decoder sees a hole."""
    data = bytearray(open(src, 'rb').read())
    audio = [p for p in pages(bytes(data)) if p[3] > 0]
    off, size, _, _, _, body, _ = audio[len(audio) // 2]
    rng = random.Random(int(seed))
    for i in range(body, off + size):
        data[i] = rng.getrandbits(8)
    open(dst, 'wb').write(bytes(data))
    print(json.dumps({'corruptPageOffset': off, 'corruptPageBytes': size}))

def patch_head(src, dst, field, value):
    """Change one field of the OpusHead packet and fix the page's checksum."""
    data = bytearray(open(src, 'rb').read())
    off, size, _, _, _, body, _ = pages(bytes(data))[0]
    where = {'version': 8, 'channels': 9, 'family': 18}[field]
    data[body + where] = int(value)
    refix(data, off, size)
    open(dst, 'wb').write(bytes(data))

def first_granule(src, dst, value):
    """Give the first audio page a granule position smaller than the pre-skip, which no
    valid stream can have (RFC 7845 section 4.5)."""
    data = bytearray(open(src, 'rb').read())
    off, size, *_ = [p for p in pages(bytes(data)) if p[3] > 0][0]
    struct.pack_into('<q', data, off + 6, int(value))
    refix(data, off, size)
    open(dst, 'wb').write(bytes(data))

def page(serial, sequence, packet, granule=0, htype=2):
    assert len(packet) < 255
    head = b'OggS' + bytes([0, htype]) + struct.pack('<qII', granule, serial, sequence) + b'\0\0\0\0'
    data = bytearray(head + bytes([1, len(packet)]) + packet)
    refix(data, 0, len(data))
    return bytes(data)

def unknown(dst):
    """A valid Ogg stream whose first packet names no codec anyone knows."""
    first = b'\x02SPLW\x00\x01' + bytes(range(20))
    second = bytes(range(64))
    open(dst, 'wb').write(page(77, 0, first) + page(77, 1, second, granule=1, htype=4))

def randbin(dst, n, seed):
    rng = random.Random(int(seed))
    open(dst, 'wb').write(bytes(rng.getrandbits(8) for _ in range(int(n))))

globals()[sys.argv[1]](*sys.argv[2:])
PYEOF
py() { python3 "$TMP/fx.py" "$@"; }

# master OUT RATE CHANNELS SECONDS -> 32-bit float WAV; the tones of make-fixtures.sh.
TONE1=(440 550 660 110 880 990 1100 1210)
TONE2=(1000 1250 1500 165 2000 2250 2500 2750)
master() {
    local out=$1 rate=$2 ch=$3 dur=$4 a=() b=() k
    for ((k = 0; k < ch; k++)); do
        a+=(sine "${TONE1[k]}")
        b+=(sine mix "${TONE2[k]}")
    done
    sox -V1 -n -r "$rate" -c "$ch" -b 32 -e float "$out" \
        synth "$dur" "${a[@]}" synth "$dur" "${b[@]}" gain -n -6
}

# enc SERIAL IN OUT [OPUSENC OPTIONS]: pages of at most 100 ms, so that even short files
# span several pages and seeking has pages to bisect. opusenc remarks on the master's
# 'fact' chunk even when quiet: its output is shown only if it fails.
enc() {
    local serial=$1 in=$2 out=$3 err
    shift 3
    if ! err=$(opusenc --quiet --serial "$serial" --max-delay 100 "$@" "$in" "$out" 2>&1); then
        printf '%s\n' "$err" >&2
        return 1
    fi
}
same() { cmp -s "$1" "$2" || { echo "unexpected difference: $1 vs $2" >&2; exit 1; }; }
# ref FILE OUT: ffmpeg's native Opus decoder (-c:a opus), float32, 48 kHz.
ref() { ffmpeg -nostdin -v error -y -c:a opus -i "$1" -f f32le -c:a pcm_f32le "$2"; }

M="$TMP/m"
mkdir -p "$M"
master "$M/48000-1.wav" 48000 1 0.5
master "$M/48000-1-long.wav" 48000 1 1.5
master "$M/48000-2.wav" 48000 2 0.5
master "$M/48000-6.wav" 48000 6 0.25
master "$M/44100-2.wav" 44100 2 0.5
master "$M/44100-2-short.wav" 44100 2 0.3

# ---------------------------------------------------------------------------
# Good files
# ---------------------------------------------------------------------------
# Mono at a hard constant bit rate (every packet the same size: not VBR).
enc 5001 "$M/48000-1.wav" opus/opus-48000-mono.opus --bitrate 48 --hard-cbr
# 1.5 s of mono, for seeks far enough from the start that the decoder must converge after
# op_pcm_seek (the tests compare it with its own full decode: no reference needed).
enc 5006 "$M/48000-1-long.wav" opus/opus-48000-mono-long.opus --bitrate 32
# Stereo, VBR (opusenc's default).
enc 5002 "$M/48000-2.wav" opus/opus-48000-stereo.opus --bitrate 96
# 5.1: opusenc takes the WAV order (L R C LFE BL BR) and stores Vorbis order
# (L C R BL BR LFE) with channel mapping family 1; a decoder must map back.
enc 5003 "$M/48000-6.wav" opus/opus-48000-5.1.opus --bitrate 192
# A 44.1 kHz source: opusenc resamples to 48 kHz and records 44100 as the input rate;
# Opus always decodes at 48 kHz.
enc 5004 "$M/44100-2.wav" opus/opus-44100-stereo.opus --bitrate 96
# OpusTags: the usual fields, one of them in UTF-8 beyond ASCII.
enc 5005 "$M/48000-2.wav" opus/opus-48000-stereo-tags.opus --bitrate 96 \
    --title "Spool Test" --artist Spool --album Fixtures --date 2024 --genre Test \
    --comment "TRACKNUMBER=3" --comment "COMMENT=Ogg Opus fixture" --comment "COMPOSER=Zoë"
for f in mono:1 stereo:2 5.1:6; do
    ref "opus/opus-48000-${f%:*}.opus" "opus/reference/opus-48000-${f%:*}.opus.f32"
    py check "opus/opus-48000-${f%:*}.opus" "opus/reference/opus-48000-${f%:*}.opus.f32" "${f#*:}"
done
ref opus/opus-44100-stereo.opus opus/reference/opus-44100-stereo.opus.f32
py check opus/opus-44100-stereo.opus opus/reference/opus-44100-stereo.opus.f32 2
# Same signal and settings as the stereo file, hence the same audio: its reference serves.
ref opus/opus-48000-stereo-tags.opus "$TMP/tags.f32"
same "$TMP/tags.f32" opus/reference/opus-48000-stereo.opus.f32

# Chained: two links of the same channel count, the second from a 44.1 kHz source. Both
# decode at 48 kHz, so the chain plays straight through; the reference is each link
# decoded on its own, one after the other.
enc 5011 "$M/48000-2.wav" "$TMP/link1.opus" --bitrate 96
enc 5012 "$M/44100-2-short.wav" "$TMP/link2.opus" --bitrate 64
cat "$TMP/link1.opus" "$TMP/link2.opus" >opus/opus-48000-stereo-chained.opus
ref "$TMP/link1.opus" "$TMP/link1.f32"
ref "$TMP/link2.opus" "$TMP/link2.f32"
cat "$TMP/link1.f32" "$TMP/link2.f32" >opus/reference/opus-48000-stereo-chained.opus.f32
py check opus/opus-48000-stereo-chained.opus opus/reference/opus-48000-stereo-chained.opus.f32 2

# Chained, the second link mono: decoding stops at the boundary (Spool does not switch
# channel counts mid-stream); the reference is the first link.
enc 5021 "$M/48000-2.wav" "$TMP/stereo.opus" --bitrate 96
enc 5022 "$M/48000-1.wav" "$TMP/mono.opus" --bitrate 48
cat "$TMP/stereo.opus" "$TMP/mono.opus" >opus/opus-48000-chained-channels.opus
# Its first link is the stereo file's audio: that reference serves.
ref "$TMP/stereo.opus" "$TMP/stereo.f32"
same "$TMP/stereo.f32" opus/reference/opus-48000-stereo.opus.f32

# ---------------------------------------------------------------------------
# Broken files
# ---------------------------------------------------------------------------
# Damaged copies of the stereo file. Cut in the middle of a page at 70 % of the file:
# the complete pages decode.
py cut opus/opus-48000-stereo.opus opus/broken/opus-truncated.opus 0.7
# One page in the middle with a random body (its checksum fails): a hole.
py corrupt opus/opus-48000-stereo.opus opus/broken/opus-corrupt-page.opus 9 \
    >opus/broken/opus-corrupt-page.json
# OpusHead version 16 (major version 1: not a version this specification describes).
py patch_head opus/opus-48000-stereo.opus opus/broken/opus-bad-version.opus version 16
# OpusHead with 0 channels.
py patch_head opus/opus-48000-stereo.opus opus/broken/opus-zero-channels.opus channels 0
# Channel mapping family 255 (channels without a speaker meaning), which libopusfile
# refuses: general-purpose players are not to play it (RFC 7845 section 5.1.1.3).
py patch_head opus/opus-48000-5.1.opus opus/broken/opus-family-255.opus family 255
# The first audio page's granule position below the pre-skip.
py first_granule opus/opus-48000-stereo.opus opus/broken/opus-bad-timestamp.opus 100

# ---------------------------------------------------------------------------
# Other Ogg payloads, all named .ogg: the extension must not make them Vorbis
# ---------------------------------------------------------------------------
# -D: no dither, so the copy is the same on every run.
sox -V1 -D "$M/48000-1.wav" -b 16 -r 16000 "$TMP/16000-1.wav"
flac --silent --ogg --serial-number=6001 -o opus/ogg/flac.ogg "$TMP/16000-1.wav"
ffmpeg -nostdin -v error -y -i "$TMP/16000-1.wav" -map_metadata -1 -fflags +bitexact \
    -flags:a +bitexact -c:a libspeex -f ogg opus/ogg/speex.ogg
ffmpeg -nostdin -v error -y -f lavfi -i "color=c=gray:s=16x16:d=0.08:r=25" -map_metadata -1 \
    -fflags +bitexact -flags:v +bitexact -c:v libtheora -f ogg opus/ogg/theora.ogg
py unknown opus/ogg/unknown.ogg
py randbin opus/ogg/random.ogg 4096 11

find opus -type f -printf "%8s  %p\n" | sort -k2
