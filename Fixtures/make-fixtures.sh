#!/usr/bin/env bash
#
# Regenerates every audio fixture used by the Spool test suite:
#
#   Fixtures/*.{mp3,mp2,ogg,wav,aiff,aifc,caf,flac}   good files, one per decoder path
#   Fixtures/broken/                                  damaged or misleading files
#   Fixtures/reference/<file>.f32                     PCM decoded by ffmpeg (a decoder
#                                                     independent of Spool), interleaved
#                                                     float32 little-endian
#   Fixtures/manifest.json                            what each file is and what a
#                                                     correct decode must produce
#
# The generated files are committed, so the tools below are only needed to
# regenerate the fixtures, never to build or test Spool:
#   sox, lame, oggenc + oggdec (vorbis-tools), ffmpeg + ffprobe, flac,
#   sndfile-convert + sndfile-info (sndfile-programs), mpg123, python3 (stdlib only).
#
# Usage: Fixtures/make-fixtures.sh        (may be run from any directory)
#
# Every step is deterministic (fixed Ogg serial numbers, no dither, fixed random
# seeds, ffmpeg in bitexact mode, no time-stamped comment/PEAK chunks), so with
# the same tool versions a second run produces byte-identical files.

set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
export LC_ALL=C TZ=UTC

for tool in sox lame oggenc oggdec ffmpeg ffprobe flac sndfile-convert sndfile-info mpg123 python3; do
    command -v "$tool" >/dev/null || { echo "missing tool: $tool" >&2; exit 1; }
done

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
GOOD="$TMP/good.tsv"           # file, container, codec, lossless, tags(json), note
BROKEN="$TMP/broken.tsv"       # file, case, extra(json)
DURATIONS="$TMP/durations.tsv" # file, seconds of signal fed to the encoder
: >"$GOOD"
: >"$BROKEN"
: >"$DURATIONS"

# Only ever delete what this script creates.
rm -rf reference broken
rm -f ./*.mp3 ./*.mp2 ./*.ogg ./*.wav ./*.aiff ./*.aifc ./*.caf ./*.flac manifest.json
mkdir -p reference broken

# ---------------------------------------------------------------------------
# Python helpers (byte patching, tags, Ogg references, manifest). Stdlib only.
# ---------------------------------------------------------------------------
cat >"$TMP/fx.py" <<'PYEOF'
import json, math, os, random, re, struct, subprocess, sys

# Tone pairs per source channel (WAV channel order). Keep in sync with the bash
# arrays TONE1/TONE2. Channel 3 is the LFE of 5.1/7.1, hence the low tones
# (libvorbis low-passes the 5.1 LFE channel hard).
TONE1 = [440, 550, 660, 110, 880, 990, 1100, 1210]
TONE2 = [1000, 1250, 1500, 165, 2000, 2250, 2500, 2750]

def run(cmd, data=None):
    return subprocess.run(cmd, input=data, check=True, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL).stdout

# ----- byte-level damage ----------------------------------------------------

def cut(src, dst, fraction):
    data = open(src, 'rb').read()
    n = int(len(data) * float(fraction))
    open(dst, 'wb').write(data[:n])
    out = {"originalBytes": len(data), "truncatedAtByte": n}
    if data[:4] == b'RIFF':
        for cid, pos, size in riff_chunks(data):
            if cid == b'fmt ':
                align = struct.unpack_from('<H', data, pos + 20)[0]
            elif cid == b'data':
                have = n - (pos + 8)
                out.update({"dataOffset": pos + 8, "framesPresent": have // align,
                            "partialFrameBytes": have % align})
    print(json.dumps(out))

def garbage(src, dst, length, seed):
    """Overwrite LENGTH bytes in the middle of the audio data (for Ogg: after
    the header pages, so the codec setup survives and resync is what's tested)."""
    data = bytearray(open(src, 'rb').read())
    length = int(length)
    start = 0
    if data[:4] == b'OggS':
        pos = 0
        while struct.unpack_from('<q', data, pos + 6)[0] <= 0:
            nseg = data[pos + 26]
            pos += 27 + nseg + sum(data[pos + 27:pos + 27 + nseg])
        start = pos
    off = start + (len(data) - start) // 2 - length // 2
    rng = random.Random(int(seed))
    data[off:off + length] = bytes(rng.getrandbits(8) for _ in range(length))
    open(dst, 'wb').write(bytes(data))
    print(json.dumps({"garbageOffset": off, "garbageLength": length, "bytes": len(data),
                      "audioDataStart": start}))

def randbin(dst, n, seed):
    rng = random.Random(int(seed))
    open(dst, 'wb').write(bytes(rng.getrandbits(8) for _ in range(int(n))))

# ----- RIFF / WAV -----------------------------------------------------------

def riff_chunks(data):
    pos = 12
    while pos + 8 <= len(data):
        cid = data[pos:pos + 4]
        size = struct.unpack_from('<I', data, pos + 4)[0]
        yield cid, pos, size
        pos += 8 + size + (size & 1)

def wav_info(path):
    data = open(path, 'rb').read()
    out = {}
    if data[:4] != b'RIFF':
        return out
    for cid, pos, size in riff_chunks(data):
        if cid == b'fmt ':
            out['wavFormatTag'] = '0x%04X' % struct.unpack_from('<H', data, pos + 8)[0]
        elif cid == b'fact':
            out['factFrames'] = struct.unpack_from('<I', data, pos + 8)[0]
    return out

def hugewav(path, value):
    value = int(value, 0)
    data = bytearray(open(path, 'rb').read())
    assert data[:4] == b'RIFF' and data[8:12] == b'WAVE'
    real = None
    for cid, pos, size in riff_chunks(bytes(data)):
        if cid == b'data':
            real = size
            struct.pack_into('<I', data, pos + 4, value)
            break
    assert real is not None
    struct.pack_into('<I', data, 4, value)
    open(path, 'wb').write(bytes(data))
    print(json.dumps({"claimedRiffSize": value, "claimedDataBytes": value, "actualDataBytes": real}))

# ----- MPEG audio -----------------------------------------------------------

def find_xing(data):
    """Offset of the Xing/Info tag inside the first MPEG frame (after any ID3v2)."""
    start = 0
    if data[:3] == b'ID3':
        s = data[6:10]
        start = 10 + ((s[0] << 21) | (s[1] << 14) | (s[2] << 7) | s[3])
    for tag in (b'Xing', b'Info'):
        i = data.find(tag, start, start + 200)
        if i >= 0:
            return i
    return -1

def hugexing(path, value):
    value = int(value, 0)
    data = bytearray(open(path, 'rb').read())
    i = find_xing(bytes(data))
    assert i >= 0, 'no Xing tag'
    assert struct.unpack_from('>I', data, i + 4)[0] & 1, 'Xing tag without frame count'
    real = struct.unpack_from('>I', data, i + 8)[0]
    struct.pack_into('>I', data, i + 8, value)
    open(path, 'wb').write(bytes(data))
    print(json.dumps({"xingTagOffset": i, "claimedXingFrames": value, "originalXingFrames": real}))

def apetag(path, *items):
    """Append an APEv2 tag with header and footer (items are UTF-8 text)."""
    body = b''
    for item in items:
        key, value = item.split('=', 1)
        v = value.encode('utf-8')
        body += struct.pack('<II', len(v), 0) + key.encode('ascii') + b'\0' + v
    size = len(body) + 32  # items + footer; the header is not counted
    def hdr(is_header):
        flags = 0x80000000 | (0x20000000 if is_header else 0)  # has header / is header
        return b'APETAGEX' + struct.pack('<IIII', 2000, size, len(items), flags) + b'\0' * 8
    with open(path, 'ab') as f:
        f.write(hdr(True) + body + hdr(False))

def lameinfo(path):
    data = open(path, 'rb').read()
    i = find_xing(data)
    out = {}
    if i < 0:
        return out
    out['xingTag'] = data[i:i + 4].decode()
    flags = struct.unpack_from('>I', data, i + 4)[0]
    p = i + 8
    if flags & 1:
        out['xingFrames'] = struct.unpack_from('>I', data, p)[0]; p += 4
    if flags & 2:
        out['xingBytes'] = struct.unpack_from('>I', data, p)[0]; p += 4
    if flags & 4:
        p += 100
    if flags & 8:
        p += 4
    if data[p:p + 4] == b'LAME':
        d = data[p + 21:p + 24]
        out['encoderDelay'] = (d[0] << 4) | (d[1] >> 4)
        out['encoderPadding'] = ((d[1] & 0x0F) << 8) | d[2]
    return out

# ----- Ogg ------------------------------------------------------------------

def ogg_links(path):
    """Split an Ogg Vorbis file into its chained links (no multiplexing)."""
    data = open(path, 'rb').read()
    links, pos = [], 0
    while pos < len(data):
        if data[pos:pos + 4] != b'OggS':
            raise SystemExit('%s: lost Ogg sync at %d' % (path, pos))
        htype = data[pos + 5]
        granule = struct.unpack_from('<q', data, pos + 6)[0]
        serial = struct.unpack_from('<I', data, pos + 14)[0]
        nseg = data[pos + 26]
        body = pos + 27 + nseg
        end = body + sum(data[pos + 27:body])
        if htype & 2:
            links.append({'serial': serial, 'start': pos, 'granule': 0, 'audioPages': 0})
            assert data[body:body + 7] == b'\x01vorbis', 'not Vorbis'
            links[-1]['channels'] = data[body + 11]
            links[-1]['sampleRate'] = struct.unpack_from('<I', data, body + 12)[0]
        link = links[-1]
        assert serial == link['serial'], 'multiplexed Ogg not supported'
        link['end'] = end
        if granule > 0:
            link['granule'] = granule
            link['audioPages'] += 1
        pos = end
    return links, data

def ogg_crc(page):
    crc = 0
    for b in page:
        crc ^= b << 24
        for _ in range(8):
            crc = ((crc << 1) ^ 0x04C11DB7) if crc & 0x80000000 else (crc << 1)
            crc &= 0xFFFFFFFF
    return crc

def oggserial(src, dst, serial):
    """Give every page of a single-stream Ogg file a new serial number."""
    data = bytearray(open(src, 'rb').read())
    pos = 0
    while pos < len(data):
        assert data[pos:pos + 4] == b'OggS'
        nseg = data[pos + 26]
        end = pos + 27 + nseg + sum(data[pos + 27:pos + 27 + nseg])
        struct.pack_into('<I', data, pos + 14, int(serial))
        struct.pack_into('<I', data, pos + 22, 0)
        struct.pack_into('<I', data, pos + 22, ogg_crc(data[pos:end]))
        pos = end
    open(dst, 'wb').write(bytes(data))

def oggpages(path):
    links, _ = ogg_links(path)
    print(' '.join(str(l['audioPages']) for l in links))

def oggref(path, out):
    """Reference for Ogg Vorbis: ffmpeg decodes every link without applying its
    own trimming (-flags2 +skip_manual); each link is then cut to its final
    granule position, which by the Vorbis spec is the link's exact length.
    ffmpeg 5.1's own end trimming is wrong when all audio sits in one page
    (it output 11392 instead of 11025 and 21922 instead of 22050 frames here).
    Assumes links start at granule 0, as oggenc writes them."""
    links, data = ogg_links(path)
    assert len({l['channels'] for l in links}) == 1, 'links differ in channel count'
    pcm = bytearray()
    for l in links:
        raw = run(['ffmpeg', '-nostdin', '-v', 'error', '-flags2', '+skip_manual', '-f', 'ogg',
                   '-i', 'pipe:0', '-f', 'f32le', '-c:a', 'pcm_f32le', 'pipe:1'],
                  data[l['start']:l['end']])
        need = l['granule'] * l['channels'] * 4
        extra = (len(raw) - need) // (4 * l['channels'])
        assert 0 <= extra < 4096, '%s: untrimmed decode is %d frames off' % (path, extra)
        pcm += raw[:need]
    open(out, 'wb').write(bytes(pcm))

# ----- analysis -------------------------------------------------------------

def floats(raw):
    n = len(raw) // 4
    return struct.unpack('<%df' % n, raw[:n * 4])

def s16(raw):
    n = len(raw) // 2
    return [v / 32768.0 for v in struct.unpack('<%dh' % n, raw[:n * 2])]

def maxdiff(a, b):
    n = min(len(a), len(b))
    return max((abs(a[i] - b[i]) for i in range(n)), default=0.0)

def ffprobe(path):
    out = run(['ffprobe', '-v', 'error', '-select_streams', 'a:0', '-show_entries',
               'stream=sample_rate,channels,channel_layout', '-of', 'json', path])
    return json.loads(out)['streams'][0]

def goertzel(xs, rate, freq):
    k = 2.0 * math.cos(2.0 * math.pi * freq / rate)
    s1 = s2 = 0.0
    for x in xs:
        s1, s2 = x + k * s1 - s2, s1
    return s1 * s1 + s2 * s2 - k * s1 * s2

def channel_tones(samples, channels, rate):
    """For each channel of a reference, the tone pair that dominates it."""
    frames = len(samples) // channels
    skip = min(frames // 4, 2048)            # ignore codec start-up transients
    use = min(frames - skip, 4096)
    result = []
    for c in range(channels):
        xs = samples[skip * channels + c:(skip + use) * channels:channels]
        power = [goertzel(xs, rate, f) for f in TONE1]
        best = max(range(len(TONE1)), key=lambda i: power[i])
        result.append([TONE1[best], TONE2[best]])
    return result

def sndfile_frames(path):
    out = subprocess.run(['sndfile-info', path], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True).stdout
    m = re.findall(r'^Frames\s*:\s*(\d+)', out, re.M)
    return int(m[-1]) if m else None

def describe(entry, durations):
    """Everything that is measured rather than declared."""
    f = entry['file']
    ref = 'reference/' + os.path.basename(f) + '.f32'
    info = ffprobe(f)
    ch, rate = int(info['channels']), int(info['sample_rate'])
    raw = open(ref, 'rb').read()
    assert len(raw) % (4 * ch) == 0, ref
    samples = floats(raw)
    e = {'sampleRate': rate, 'channels': ch, 'frames': len(raw) // 4 // ch, 'reference': ref,
         'referenceChannelLayout': info.get('channel_layout') or 'unknown',
         'channelTones': channel_tones(samples, ch, rate),
         'peak': round(max(abs(v) for v in samples), 4)}
    if f in durations:
        e['sourceFrames'] = int(round(rate * float(durations[f])))
    container = entry.get('container')
    cross = {}
    if container == 'MP3':
        e.update(lameinfo(f))
        g = floats(run(['mpg123', '-q', '--gapless', '-e', 'f32', '-s', f]))
        cross['mpg123GaplessFrames'] = len(g) // ch
        cross['mpg123GaplessMaxAbsDiff'] = float('%.3g' % maxdiff(g, samples))
        cross['mpg123NoGaplessFrames'] = len(run(['mpg123', '-q', '--no-gapless', '-s', f])) // 2 // ch
    if container == 'Ogg':
        links, _ = ogg_links(f)
        e['oggLinks'] = [{'serial': l['serial'], 'frames': l['granule'], 'audioPages': l['audioPages']}
                         for l in links]
        e['referenceMethod'] = 'ffmpeg -flags2 +skip_manual per link, cut at the final granule position'
        d = s16(run(['oggdec', '-Q', '-R', '-b', '16', '-o', '-', f]))
        cross['oggdecFrames'] = len(d) // ch
        if ch > 2:
            # oggdec's raw output keeps Vorbis channel order; match channels
            # by their tones before comparing.
            tones = channel_tones(d, ch, rate)
            cross['oggdecChannelTones'] = tones
            if sorted(tones) == sorted(e['channelTones']):
                perm = [tones.index(t) for t in e['channelTones']]
                n = len(d) // ch
                d = [d[i * ch + perm[c]] for i in range(n) for c in range(ch)]
        cross['oggdecMaxAbsDiff'] = float('%.3g' % maxdiff(d, samples))
        if len(links) == 1:
            assert e['frames'] == cross['oggdecFrames'], f + ': reference length differs from libvorbis'
    if container == 'WAV':
        e.update(wav_info(f))
    cross['libsndfileFrames'] = sndfile_frames(f)
    e['crossCheck'] = cross
    return e

def manifest(good_tsv, broken_tsv, durations_tsv):
    durations = dict(line.rstrip('\n').split('\t') for line in open(durations_tsv))
    fixtures = []
    for line in open(good_tsv):
        f, container, codec, lossless, tags, note = line.rstrip('\n').split('\t')
        m = describe({'file': f, 'container': container}, durations)
        e = {'file': f, 'container': container, 'codec': codec}
        for k in ('sampleRate', 'channels', 'frames'):
            e[k] = m.pop(k)
        e['lossless'] = lossless == 'true'
        e['reference'] = m.pop('reference')
        if tags:
            e['tags'] = json.loads(tags)
        e.update(m)
        if note:
            e['note'] = note
        fixtures.append(e)
    broken = []
    for line in open(broken_tsv):
        f, case, extra = line.rstrip('\n').split('\t')
        e = {'file': f, 'case': case}
        e.update(json.loads(extra) if extra else {})
        if os.path.exists('reference/' + os.path.basename(f) + '.f32'):
            e.update(describe({'file': f, 'container': e.get('container')}, durations))
        broken.append(e)
    doc = {
        'about': 'Generated by make-fixtures.sh; do not edit. Each reference is the decode of '
                 'the file by ffmpeg, interleaved float32 little-endian in ffmpeg channel '
                 'order (referenceChannelLayout; "unknown" = no layout stored, file order kept). '
                 'frames = reference length. channelTones: the two sine frequencies in Hz '
                 'carried by each reference channel (source channel k of the WAV-order master '
                 'carries TONE1[k]+TONE2[k] = ' + ', '.join('%d+%d' % t for t in zip(TONE1, TONE2)) +
                 '). sourceFrames: length of the signal fed to the encoder. crossCheck: what '
                 'other decoders (mpg123, libvorbis via oggdec, libsndfile) report, for information.',
        'fixtures': fixtures,
        'broken': broken,
    }
    with open('manifest.json', 'w') as out:
        json.dump(doc, out, indent=2)
        out.write('\n')
    print('%-42s %8s %6s %3s %8s' % ('file', 'bytes', 'rate', 'ch', 'frames'))
    for e in fixtures + broken:
        frames = e.get('frames', e.get('fullFrames', e.get('actualFrames', '')))
        if 'frames' not in e and frames != '':
            frames = '(%s)' % frames
        print('%-42s %8d %6s %3s %8s' % (e['file'], os.path.getsize(e['file']),
                                          e.get('sampleRate', ''), e.get('channels', ''), frames))

if __name__ == '__main__':
    cmd, args = sys.argv[1], sys.argv[2:]
    {'cut': cut, 'garbage': garbage, 'random': randbin, 'hugewav': hugewav,
     'hugexing': hugexing, 'apetag': apetag, 'oggref': oggref, 'oggpages': oggpages,
     'oggserial': oggserial,
     'manifest': manifest,
     'wavtag': lambda p: print(wav_info(p)['wavFormatTag'])}[cmd](*args)
PYEOF
py() { python3 "$TMP/fx.py" "$@"; }

# ---------------------------------------------------------------------------
# Signal
# ---------------------------------------------------------------------------
# Two steady sines per channel (no fades), peak normalised to -6 dBFS.
# Channel k carries TONE1[k] + TONE2[k], so a decoder that swaps or reorders
# channels is caught. All tones stay below 4 kHz so even 8 kHz files keep them.
# Channel 3 is the LFE of 5.1 / 7.1 and gets low tones, because libvorbis
# low-passes the 5.1 LFE channel and would otherwise erase it.
TONE1=(440 550 660 110 880 990 1100 1210)
TONE2=(1000 1250 1500 165 2000 2250 2500 2750)

# master OUT RATE CHANNELS SECONDS -> 32-bit float WAV
master() {
    local out=$1 rate=$2 ch=$3 dur=$4 a=() b=() k
    for ((k = 0; k < ch; k++)); do
        a+=(sine "${TONE1[k]}")
        b+=(sine mix "${TONE2[k]}")
    done
    sox -V1 -n -r "$rate" -c "$ch" -b 32 -e float "$out" \
        synth "$dur" "${a[@]}" synth "$dur" "${b[@]}" gain -n -6
}

# 16/24-bit integer copy of a master; -D: no dither, so the output is repeatable.
to_int() { sox -V1 -D "$1" -b "$3" -e signed-integer "$2"; }

# Run an encoder that chats on stderr even when asked to be quiet (lame,
# oggenc and flac complain about the master's 'fact' chunk); show the output
# only if it fails.
quiet() {
    local err
    if ! err=$("$@" 2>&1 >/dev/null); then
        printf '%s\n' "$err" >&2
        return 1
    fi
}
# mp3enc [LAME OPTIONS] IN OUT. lame 3.100 misreads IEEE-float WAV input (the
# decoded level came out ~1.9x too high), so it gets a 24-bit integer copy.
mp3enc() {
    local args=("$@")
    local i=$(($# - 2))
    to_int "${args[i]}" "$TMP/lame-in.wav" 24
    args[i]="$TMP/lame-in.wav"
    quiet lame --quiet "${args[@]}"
}
vorbisenc() { quiet oggenc -Q "$@"; }
flacenc() { quiet flac -s -8 -f "$@"; }

# ffmpeg in bitexact mode writes no encoder-version strings.
ff() { ffmpeg -nostdin -v error -y "$@"; }
FFX=(-map_metadata -1 -fflags +bitexact -flags:a +bitexact)

# good FILE CONTAINER CODEC LOSSLESS SECONDS [TAGS_JSON] [NOTE]
good() {
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "${6:-}" "${7:-}" >>"$GOOD"
    printf '%s\t%s\n' "$1" "$5" >>"$DURATIONS"
}
# bad FILE CASE [EXTRA_JSON] [SECONDS]
bad() {
    printf '%s\t%s\t%s\n' "$1" "$2" "$(printf '%s' "${3:-}" | tr '\n' ' ')" >>"$BROKEN"
    if [[ -n ${4:-} ]]; then printf '%s\t%s\n' "$1" "$4" >>"$DURATIONS"; fi
}
# merge two JSON objects
jmerge() { python3 -c 'import json,sys; a=json.loads(sys.argv[1]); a.update(json.loads(sys.argv[2])); print(json.dumps(a))' "$1" "$2"; }
# reference decode of FILE into OUT (see oggref in fx.py for why Ogg differs)
decode() {
    case $(head -c 4 "$1") in
        OggS) py oggref "$1" "$2" ;;
        *) ff -i "$1" -f f32le -c:a pcm_f32le "$2" ;;
    esac
}
# same A B: byte-identical, or stop with a message
same() { cmp -s "$1" "$2" || { echo "unexpected difference: $1 vs $2" >&2; exit 1; }; }
# frames of a correct decode of FILE with CH channels
frames_of() { decode "$1" "$TMP/count.f32"; echo $(($(stat -c %s "$TMP/count.f32") / 4 / $2)); }

M="$TMP/m"
mkdir -p "$M"
master "$M/8000-1.wav" 8000 1 0.5
master "$M/11025-1.wav" 11025 1 0.5
master "$M/22050-1.wav" 22050 1 0.5
master "$M/32000-2.wav" 32000 2 0.5
master "$M/44100-2.wav" 44100 2 0.5
master "$M/48000-1.wav" 48000 1 0.5
master "$M/48000-2.wav" 48000 2 0.5
master "$M/48000-6.wav" 48000 6 0.25
master "$M/48000-8.wav" 48000 8 0.25
master "$M/44100-2-1s.wav" 44100 2 1.0
master "$M/44100-2-3s.wav" 44100 2 3.0
to_int "$M/44100-2.wav" "$TMP/44100-2-s16.wav" 16

TITLE_TAGS='{"title":"Spool Test","artist":"Spool","album":"Fixtures"}'

# ---------------------------------------------------------------------------
# MPEG audio
# ---------------------------------------------------------------------------
# MPEG-1 Layer III, CBR, Xing "Info" + LAME tag (gapless delay/padding), with
# an ID3v2 tag in front (skip it before looking for frame sync) and an ID3v1
# tag at the end (must not be decoded as audio).
mp3enc -b 128 --cbr --add-id3v2 --tt "Spool Test" --ta Spool --tl Fixtures \
    "$M/44100-2.wav" mp3-44100-stereo.mp3
good mp3-44100-stereo.mp3 MP3 "MPEG-1 Layer III" false 0.5 "$TITLE_TAGS" \
    "CBR 128k, Info+LAME tag, ID3v2 at start and ID3v1 at end"

# MPEG-2 Layer III (576 samples per frame), VBR with a Xing tag: the duration
# must come from the Xing frame count, not from bitrate and file size.
mp3enc -V 4 "$M/22050-1.wav" mp3-22050-mono-vbr.mp3
good mp3-22050-mono-vbr.mp3 MP3 "MPEG-2 Layer III" false 0.5 "" "VBR -V 4, Xing+LAME tag, no ID3"

# MPEG-2.5 Layer III (11.025 kHz), the unofficial extension some parsers reject.
mp3enc -b 32 --cbr "$M/11025-1.wav" mp3-11025-mono.mp3
good mp3-11025-mono.mp3 MP3 "MPEG-2.5 Layer III" false 0.5 "" "CBR 32k, Info+LAME tag"

# No Xing/LAME tag (lame -t): the length is only known by scanning frames and
# there is no gapless information, so encoder delay and padding stay in the
# decoded output (frames = 22 MPEG frames * 1152).
mp3enc -t -b 160 --cbr "$M/48000-2.wav" mp3-48000-stereo-notag.mp3
good mp3-48000-stereo-notag.mp3 MP3 "MPEG-1 Layer III" false 0.5 "" \
    "no Xing/LAME tag: length by frame scan only (22 frames * 1152); no gapless trimming, the signal starts 1105 frames in (576 encoder + 529 decoder delay)"

# APEv2 tag at the end (header + items + footer): its bytes must not reach the
# decoder and its items should be readable. Also covers 32 kHz MPEG-1.
mp3enc -b 96 --cbr "$M/32000-2.wav" mp3-32000-stereo-apev2.mp3
py apetag mp3-32000-stereo-apev2.mp3 "Title=APE Title" "Artist=APE Artist"
good mp3-32000-stereo-apev2.mp3 MP3 "MPEG-1 Layer III" false 0.5 \
    '{"title":"APE Title","artist":"APE Artist"}' "Info+LAME tag, APEv2 tag (with header) appended, no ID3"

# MPEG-1 Layer II: a different decoder path from Layer III; no gapless info.
ff -i "$M/48000-2.wav" "${FFX[@]}" -c:a mp2 -b:a 192k -f mp2 mp2-48000-stereo.mp2
good mp2-48000-stereo.mp2 MP3 "MPEG-1 Layer II" false 0.5 "" \
    "192k, bare Layer II frames, no tags; 21 frames * 1152, the signal starts 481 frames in (codec delay)"

# ---------------------------------------------------------------------------
# Ogg Vorbis (fixed --serial numbers so the output is repeatable)
# ---------------------------------------------------------------------------
# Short files: all audio packets sit in one page, the end-of-stream page, so
# its granule position alone tells how much of the last packet to drop.
vorbisenc --serial 1001 -q 3 -o vorbis-22050-mono.ogg "$M/22050-1.wav"
good vorbis-22050-mono.ogg Ogg Vorbis false 0.5 "" "all audio in one page"

# Vorbis comments (TITLE/ARTIST/ALBUM).
vorbisenc --serial 1002 -q 3 -t "Spool Test" -a Spool -l Fixtures \
    -o vorbis-44100-stereo.ogg "$M/44100-2.wav"
good vorbis-44100-stereo.ogg Ogg Vorbis false 0.5 "$TITLE_TAGS" "all audio in one page"

# Multichannel: Vorbis stores 5.1 as L C R Ls Rs LFE and 7.1 as
# L C R Ls Rs Lb Rb LFE; oggenc converts from WAV order. The decoder has to map
# back to its own order (channelTones in the manifest shows ffmpeg's result).
vorbisenc --serial 1003 -q 3 -o vorbis-48000-5.1.ogg "$M/48000-6.wav"
good vorbis-48000-5.1.ogg Ogg Vorbis false 0.25
vorbisenc --serial 1004 -q 3 -o vorbis-48000-7.1.ogg "$M/48000-8.wav"
good vorbis-48000-7.1.ogg Ogg Vorbis false 0.25

# Chained Ogg: two complete logical streams back to back, same format. They
# are the two halves of one 1 s signal, so a correct decode is one continuous
# 1 s stream. Each link is spread over several audio pages (ffmpeg's Ogg
# muxer with -page_duration; oggenc puts 0.5 s in a single page), because
# libvorbisfile 1.3.7 skips a chain's first link when that link has only one
# audio page; that case is broken/vorbis-chained-short-links.ogg. ffmpeg
# writes serial 0 in bitexact mode, so the serials are rewritten afterwards.
[[ $(ffmpeg -hide_banner -encoders 2>/dev/null) == *" libvorbis "* ]] ||
    { echo "ffmpeg lacks the libvorbis encoder" >&2; exit 1; }
sox -V1 "$M/44100-2-1s.wav" "$TMP/half1.wav" trim 0 0.5
sox -V1 "$M/44100-2-1s.wav" "$TMP/half2.wav" trim 0.5
for i in 1 2; do
    ff -i "$TMP/half$i.wav" "${FFX[@]}" -c:a libvorbis -q:a 3 -page_duration 100000 -f ogg "$TMP/lavf$i.ogg"
    py oggserial "$TMP/lavf$i.ogg" "$TMP/link$i.ogg" "200$i"
done
cat "$TMP/link1.ogg" "$TMP/link2.ogg" >vorbis-44100-stereo-chained.ogg
pages=$(py oggpages vorbis-44100-stereo-chained.ogg)
[[ " $pages " != *" 1 "* ]] || { echo "chained links should span several pages, got: $pages" >&2; exit 1; }
good vorbis-44100-stereo-chained.ogg Ogg Vorbis false 1.0 "" \
    "chained: serials 2001 and 2002, same format, 0.5 s each over several pages (muxed by ffmpeg); must decode as one continuous 1 s stream"

# ---------------------------------------------------------------------------
# libsndfile formats
# ---------------------------------------------------------------------------
# 16-bit PCM with a LIST/INFO chunk (INAM/IART/IPRD) before the data chunk.
ff -i "$M/44100-2.wav" "${FFX[@]}" -c:a pcm_s16le \
    -metadata title="Spool Test" -metadata artist=Spool -metadata album=Fixtures \
    wav-44100-stereo-s16.wav
good wav-44100-stereo-s16.wav WAV "PCM s16le" true 0.5 "$TITLE_TAGS" "LIST/INFO chunk before data"

# 8-bit WAV is unsigned (offset binary), unlike every other PCM width.
sox -V1 -D "$M/22050-1.wav" -b 8 -e unsigned-integer wav-22050-mono-u8.wav
good wav-22050-mono-u8.wav WAV "PCM u8" true 0.5

# 24- and 32-bit integer with a plain WAVE_FORMAT_PCM (1) header; libsndfile
# writes tag 1 here, sox would write EXTENSIBLE.
sndfile-convert -pcm24 "$M/48000-2.wav" wav-48000-stereo-s24.wav
good wav-48000-stereo-s24.wav WAV "PCM s24le" true 0.5 "" "format tag 1"
sndfile-convert -pcm32 "$M/44100-2.wav" wav-44100-stereo-s32.wav
good wav-44100-stereo-s32.wav WAV "PCM s32le" true 0.5 "" "format tag 1"

# IEEE float, format tag 3 with a fact chunk: this is the sox-written master
# itself. (libsndfile would add a PEAK chunk holding the current time.)
cp "$M/48000-2.wav" wav-48000-stereo-f32.wav
good wav-48000-stereo-f32.wav WAV "IEEE float32" true 0.5 "" "format tag 3 + fact chunk"

# IMA ADPCM (tag 0x11) is block based: fact says 11025 frames, but the last
# 505-sample block is padded and ffmpeg/libsndfile decode whole blocks.
sox -V1 -D "$M/22050-1.wav" -e ima-adpcm wav-22050-mono-ima-adpcm.wav
good wav-22050-mono-ima-adpcm.wav WAV "IMA ADPCM" false 0.5 "" \
    "fact chunk = 11025 = sourceFrames; ffmpeg and libsndfile decode whole blocks (11110)"

# G.711 mu-law (tag 7) and A-law (tag 6): table decodes, so bit-exact.
sox -V1 -D "$M/8000-1.wav" -e u-law wav-8000-mono-ulaw.wav
good wav-8000-mono-ulaw.wav WAV "G.711 mu-law" true 0.5 "" "lossless=true: bit-exact table decode expected"
sox -V1 -D "$M/8000-1.wav" -e a-law wav-8000-mono-alaw.wav
good wav-8000-mono-alaw.wav WAV "G.711 A-law" true 0.5 "" "lossless=true: bit-exact table decode expected"

# WAVE_FORMAT_EXTENSIBLE (0xFFFE), 24-bit, 5.1 with channel mask 0x3F.
sox -V1 -D "$M/48000-6.wav" -b 24 -e signed-integer wav-48000-5.1-s24-extensible.wav
tag=$(py wavtag wav-48000-5.1-s24-extensible.wav)
[[ $tag == 0xFFFE ]] || { echo "expected WAVE_FORMAT_EXTENSIBLE, got $tag" >&2; exit 1; }
good wav-48000-5.1-s24-extensible.wav WAV "PCM s24le" true 0.25 "" "WAVE_FORMAT_EXTENSIBLE, channel mask 0x3F"

# AIFF: big-endian 16-bit. --comment "" stops sox writing a COMT chunk that
# holds the current time.
sox -V1 -D "$M/44100-2.wav" --comment "" -b 16 -e signed-integer aiff-44100-stereo-s16.aiff
good aiff-44100-stereo-s16.aiff AIFF "PCM s16be" true 0.5

# AIFF-C with compression types other than NONE: 'fl32' (big-endian float)
# and 'sowt' (little-endian 16-bit, as macOS writes it).
sox -V1 -D "$M/48000-2.wav" -t aifc -e floating-point -b 32 aifc-48000-stereo-f32.aifc
good aifc-48000-stereo-f32.aifc AIFF-C "fl32 float32be" true 0.5
ff -i "$M/44100-2.wav" "${FFX[@]}" -c:a pcm_s16le -f aiff aifc-44100-stereo-sowt.aifc
good aifc-44100-stereo-sowt.aifc AIFF-C "sowt s16le" true 0.5

# CAF (Core Audio Format): 16-bit big-endian lpcm, a 'free' chunk before 'data'.
sndfile-convert -pcm16 "$TMP/44100-2-s16.wav" caf-44100-stereo-s16.caf
good caf-44100-stereo-s16.caf CAF "PCM s16be" true 0.5

# FLAC: the three common shapes, one with a Vorbis-comment TITLE.
flacenc --tag=TITLE="Spool Test" -o flac-44100-stereo-s16.flac "$TMP/44100-2-s16.wav"
good flac-44100-stereo-s16.flac FLAC FLAC true 0.5 '{"title":"Spool Test"}'
to_int "$M/48000-1.wav" "$TMP/48000-1-s24.wav" 24
flacenc -o flac-48000-mono-s24.flac "$TMP/48000-1-s24.wav"
good flac-48000-mono-s24.flac FLAC FLAC true 0.5
to_int "$M/22050-1.wav" "$TMP/22050-1-s16.wav" 16
flacenc -o flac-22050-mono-s16.flac "$TMP/22050-1-s16.wav"
good flac-22050-mono-s16.flac FLAC FLAC true 0.5

# ---------------------------------------------------------------------------
# Broken / edge cases: a decoder must fail cleanly (or play what is
# recoverable) and never crash, hang or allocate absurd amounts of memory.
# ---------------------------------------------------------------------------
: >broken/empty.mp3
bad broken/empty.mp3 empty '{"bytes":0}'

printf 'RIF' >broken/tiny.wav
bad broken/tiny.wav tiny '{"bytes":3}'

printf 'This is not an MP3 file.\nIt is plain text with an .mp3 extension.\nA decoder must reject it cleanly.\n' >broken/text.mp3
bad broken/text.mp3 text

py random broken/random.bin 4096 1234
bad broken/random.bin random '{"seed":1234,"bytes":4096}'

# Sources for the damaged files: 1 s, except Ogg. oggenc writes ~4 KB pages
# and the Vorbis headers alone take ~4 KB, so the Ogg source is 3 s long:
# cut at 60 % or with 2000 bytes destroyed it still has whole audio pages
# before (and, for corrupt-middle, after) the damage.
to_int "$M/44100-2-1s.wav" "$TMP/1s-s16.wav" 16
mp3enc -b 128 --cbr "$M/44100-2-1s.wav" "$TMP/1s.mp3"
vorbisenc --serial 3001 -q 3 -o "$TMP/3s.ogg" "$M/44100-2-3s.wav"
flacenc -o "$TMP/1s.flac" "$TMP/1s-s16.wav"

# Cut at 60 %: headers still promise the full length (LAME tag, WAV data size,
# FLAC STREAMINFO total samples; the Ogg end-of-stream page is missing).
# The WAV is the 0.5 s one, to keep the folder small; its cut falls inside a
# frame (partialFrameBytes in the manifest).
for src in "$TMP/1s.mp3" "$TMP/44100-2-s16.wav" "$TMP/3s.ogg" "$TMP/1s.flac"; do
    ext=${src##*.}
    full=$(frames_of "$src" 2)
    info=$(py cut "$src" "broken/truncated.$ext" 0.6)
    bad "broken/truncated.$ext" truncated \
        "$(jmerge "$info" "{\"fullFrames\":$full,\"sampleRate\":44100,\"channels\":2}")"
done

# 2000 bytes of garbage in the middle, file size unchanged: the decoder must
# resync (MPEG frame sync / Ogg capture pattern + page CRC) or stop cleanly.
full=$(frames_of "$TMP/1s.mp3" 2)
info=$(py garbage "$TMP/1s.mp3" broken/corrupt-middle.mp3 2000 42)
bad broken/corrupt-middle.mp3 corrupt-middle \
    "$(jmerge "$info" "{\"fullFrames\":$full,\"sampleRate\":44100,\"channels\":2,\"note\":\"CBR 128k with Info+LAME tag\"}")"
full=$(frames_of "$TMP/3s.ogg" 2)
info=$(py garbage "$TMP/3s.ogg" broken/corrupt-middle.ogg 2000 43)
bad broken/corrupt-middle.ogg corrupt-middle \
    "$(jmerge "$info" "{\"fullFrames\":$full,\"sampleRate\":44100,\"channels\":2}")"

# Valid 0.5 s 16-bit mono WAV whose RIFF and data sizes claim ~4 GB: the
# decoder must stop at end of file, not trust the size for allocation or
# duration. Same samples as flac-22050-mono-s16.flac, so that reference applies.
cp "$TMP/22050-1-s16.wav" broken/huge-header.wav
info=$(py hugewav broken/huge-header.wav 0xFFFFFFF0)
bad broken/huge-header.wav huge-header \
    "$(jmerge "$info" '{"actualFrames":11025,"sampleRate":22050,"channels":1,"sameAudioAs":"flac-22050-mono-s16.flac","reference":"reference/flac-22050-mono-s16.flac.f32"}')"

# VBR MP3 whose Xing frame count claims 0x7FFFFFFF frames (~9 days): length
# estimates taken from the tag must be sanity-checked.
mp3enc -V 2 "$M/44100-2.wav" "$TMP/vbr.mp3"
actual=$(frames_of "$TMP/vbr.mp3" 2)
cp "$TMP/vbr.mp3" broken/huge-xing.mp3
info=$(py hugexing broken/huge-xing.mp3 0x7FFFFFFF)
bad broken/huge-xing.mp3 huge-xing \
    "$(jmerge "$info" "{\"actualFrames\":$actual,\"sampleRate\":44100,\"channels\":2}")"

# Wrong extensions: detection has to go by content. The MP3 has no ID3v2 tag,
# so it starts straight with an MPEG frame sync.
cp mp3-22050-mono-vbr.mp3 broken/mp3-named.wav
bad broken/mp3-named.wav wrong-extension \
    '{"container":"MP3","codec":"MPEG-2 Layer III","lossless":false,"sameAs":"mp3-22050-mono-vbr.mp3"}' 0.5
cp vorbis-22050-mono.ogg broken/ogg-named.mp3
bad broken/ogg-named.mp3 wrong-extension \
    '{"container":"Ogg","codec":"Vorbis","lossless":false,"sameAs":"vorbis-22050-mono.ogg"}' 0.5

# Chained Ogg whose links differ (44.1 kHz stereo, then 22.05 kHz mono): a
# player must reconfigure at the link boundary or stop cleanly after link 1.
# Link 1 is the first link of the good chained file, link 2 decodes exactly
# like vorbis-22050-mono.ogg (same encoder input, other serial), so their
# references are reused.
vorbisenc --serial 4002 -q 3 -o "$TMP/mono-link.ogg" "$M/22050-1.wav"
cat "$TMP/link1.ogg" "$TMP/mono-link.ogg" >broken/vorbis-chained-mixed.ogg
bad broken/vorbis-chained-mixed.ogg chained-format-change '{
 "links":[
  {"serial":2001,"sampleRate":44100,"channels":2,"frames":22050,
   "reference":"reference/vorbis-44100-stereo-chained.ogg.f32","referenceFrameRange":[0,22050]},
  {"serial":4002,"sampleRate":22050,"channels":1,"frames":11025,
   "reference":"reference/vorbis-22050-mono.ogg.f32"}]}'

# Valid chained file whose first link has only one audio page (the
# end-of-stream page). libvorbisfile 1.3.7 opens it positioned at link 2 and
# never plays link 1; a correct decode is link 1 then link 2.
vorbisenc --serial 4003 -q 3 -t "Spool Test" -a Spool -l Fixtures -o "$TMP/again.ogg" "$M/44100-2.wav"
cat vorbis-44100-stereo.ogg "$TMP/again.ogg" >broken/vorbis-chained-short-links.ogg
bad broken/vorbis-chained-short-links.ogg chained-single-page-links '{
 "sampleRate":44100,"channels":2,"expectedFrames":44100,
 "links":[
  {"serial":1002,"frames":22050,"audioPages":1,"reference":"reference/vorbis-44100-stereo.ogg.f32"},
  {"serial":4003,"frames":22050,"audioPages":1,"reference":"reference/vorbis-44100-stereo.ogg.f32"}],
 "note":"valid file; both links decode exactly like vorbis-44100-stereo.ogg"}'

# ---------------------------------------------------------------------------
# References: interleaved float32 LE in ffmpeg channel order. ffmpeg applies
# the LAME tag's gapless delay/padding; for Ogg see oggref in fx.py.
# ---------------------------------------------------------------------------
for f in $(cut -f1 "$GOOD") broken/mp3-named.wav broken/ogg-named.mp3; do
    decode "$f" "reference/$(basename "$f").f32"
done
# The wrongly named copies must decode exactly like the originals, and the
# reused link references must match the audio actually inside the chains.
same reference/mp3-named.wav.f32 reference/mp3-22050-mono-vbr.mp3.f32
same reference/ogg-named.mp3.f32 reference/vorbis-22050-mono.ogg.f32
py oggref "$TMP/mono-link.ogg" "$TMP/mono-link.f32"
same "$TMP/mono-link.f32" reference/vorbis-22050-mono.ogg.f32
py oggref "$TMP/again.ogg" "$TMP/again.f32"
same "$TMP/again.f32" reference/vorbis-44100-stereo.ogg.f32
py oggref broken/vorbis-chained-short-links.ogg "$TMP/short.f32"
same "$TMP/short.f32" <(cat reference/vorbis-44100-stereo.ogg.f32 reference/vorbis-44100-stereo.ogg.f32)
decode "$TMP/22050-1-s16.wav" "$TMP/huge.f32"
same "$TMP/huge.f32" reference/flac-22050-mono-s16.flac.f32
py oggref "$TMP/link1.ogg" "$TMP/link1.f32"
same "$TMP/link1.f32" <(head -c $((22050 * 8)) reference/vorbis-44100-stereo-chained.ogg.f32)

py manifest "$GOOD" "$BROKEN" "$DURATIONS"
echo
du -sh .
