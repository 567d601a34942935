#!/usr/bin/env bash
#
# Regenerates the MP3 fixtures in Fixtures/mp3/: real LAME frames wrapped in
# every kind of tag a real-world MP3 carries (ID3v2.3/2.4 in front, twice, with
# padding; ID3v2 appended at the end with and without the "3DI" footer; APEv2
# with and without its header; Lyrics3 v1 and v2; ID3v1; tags stacked in
# several orders and between frames), Fraunhofer-style VBRI files, a VBR file
# without any Xing/LAME/VBRI header, a very short MPEG-2 file, a file cut
# mid-way, and files whose ID3v2 or LAME header bytes were overwritten.
#
#   Fixtures/mp3/base-*.mp3             LAME's audio frames alone (lame -t: no
#                                       Info frame, no tag); every other file
#                                       holds exactly these frames
#   Fixtures/mp3/reference/<base>.f32   ffmpeg's decode of each base, every
#                                       frame untrimmed, float32 LE interleaved
#   Fixtures/mp3/*.mp3                  the fixtures
#   Fixtures/mp3/manifest.json          for each fixture: its base, the frames a
#                                       correct decode trims at the start
#                                       (startTrim) and produces (frames), its
#                                       tags, whether it is damaged, and what
#                                       ffmpeg and mpg123 make of it
#
# The files are committed; lame, ffmpeg, mpg123, sox and python3 (stdlib only)
# are needed only to regenerate them. Deterministic: the same tool versions give
# byte-identical files. Made with LAME 3.100, ffmpeg 5.1, mpg123 1.31, SoX 14.4.
#
# Usage: Fixtures/make-mp3-fixtures.sh   (from any directory)

set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
export LC_ALL=C TZ=UTC

for tool in sox lame ffmpeg mpg123 python3; do
    command -v "$tool" >/dev/null || { echo "missing tool: $tool" >&2; exit 1; }
done

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# Only ever delete what this script creates.
rm -rf mp3
mkdir -p mp3/reference

# Two steady sines per channel (440+1000 Hz left, 550+1250 Hz right), peak
# -6 dBFS, 16-bit (lame 3.100 misreads float WAV input), exactly SAMPLES long.
master() { py master "$@"; }
enc() { lame --quiet --nohist "$@"; }

cat >"$TMP/mp3fx.py" <<'PYEOF'
import json, os, struct, subprocess, sys

BR1 = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320]
BR2 = [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160]

def master(path, rate, channels, samples):
    import math, wave
    rate, channels, samples = int(rate), int(channels), int(samples)
    tones = [(440, 1000), (550, 1250)]
    out = bytearray()
    for i in range(samples):
        for c in range(channels):
            a, b = tones[c]
            v = 0.25 * math.sin(2 * math.pi * a * i / rate) + 0.25 * math.sin(2 * math.pi * b * i / rate)
            out += struct.pack('<h', int(round(v * 32767)))
    w = wave.open(path, 'wb')
    w.setnchannels(channels); w.setsampwidth(2); w.setframerate(rate)
    w.writeframes(bytes(out)); w.close()

def setlame(path, delay, padding):
    """Overwrites the LAME tag's 12-bit delay and/or padding ('-' keeps one)."""
    d = bytearray(open(path, 'rb').read())
    info = lame(bytes(d))
    delay = info['delay'] if delay == '-' else int(delay)
    padding = info['padding'] if padding == '-' else int(padding)
    p = info['lameAt'] + 21
    d[p:p + 3] = bytes([delay >> 4, ((delay & 15) << 4) | (padding >> 8), padding & 255])
    open(path, 'wb').write(bytes(d))

def run(cmd):
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout

def header(d, i):
    """(frame bytes, samples per frame, bit rate kbit/s) of the Layer III header at i, or None."""
    if i + 4 > len(d) or d[i] != 0xFF or d[i + 1] & 0xE0 != 0xE0:
        return None
    v, layer, b, r = (d[i + 1] >> 3) & 3, (d[i + 1] >> 1) & 3, d[i + 2] >> 4, (d[i + 2] >> 2) & 3
    if v == 1 or layer != 1 or b in (0, 15) or r == 3:
        return None
    rate = [44100, 48000, 32000][r] // {3: 1, 2: 2, 0: 4}[v]
    kbps = (BR1 if v == 3 else BR2)[b]
    return ((144 if v == 3 else 72) * kbps * 1000 // rate + ((d[i + 2] >> 1) & 1),
            1152 if v == 3 else 576, kbps)

def frames(d, start=0):
    """Offsets of the frames chained from start to the end of d (which must be all frames)."""
    out, i = [], start
    while i < len(d):
        h = header(d, i)
        assert h, 'not a frame at %d' % i
        out.append((i, h[0]))
        i += h[0]
    assert i == len(d), 'last frame runs past the end'
    return out

def id3v2_size(d):
    if d[:3] != b'ID3':
        return 0
    s = d[6:10]
    return 10 + ((s[0] << 21) | (s[1] << 14) | (s[2] << 7) | s[3]) + (10 if d[5] & 0x10 else 0)

def lame(d):
    """Xing/Info and LAME fields of the first frame: offsets and values."""
    x = d.find(b'Xing', 0, 64)
    if x < 0:
        x = d.find(b'Info', 0, 64)
    flags = struct.unpack_from('>I', d, x + 4)[0]
    p = x + 8
    out = {'xing': x}
    if flags & 1:
        out['frames'] = struct.unpack_from('>I', d, p)[0]; out['framesAt'] = p; p += 4
    if flags & 2:
        p += 4
    if flags & 4:
        p += 100
    if flags & 8:
        p += 4
    out['lameAt'] = p
    dp = d[p + 21:p + 24]
    out['delay'] = (dp[0] << 4) | (dp[1] >> 4)
    out['padding'] = ((dp[1] & 0x0F) << 8) | dp[2]
    return out

def strip(src, dst):
    """The audio frames of a LAME file without its Info frame."""
    d = open(src, 'rb').read()
    f = frames(d)
    open(dst, 'wb').write(d[f[1][0]:])

# ----- tags -------------------------------------------------------------------

def synchsafe(n):
    return bytes([(n >> 21) & 0x7F, (n >> 14) & 0x7F, (n >> 7) & 0x7F, n & 0x7F])

def id3v2(major, fields, footer=False, padding=0):
    """An ID3v2.3 (UTF-16 text) or v2.4 (UTF-8 text) tag with text frames."""
    body = b''
    for fid, text in fields:
        if major == 4:
            payload = b'\x03' + text.encode('utf-8')
            size = synchsafe(len(payload))
        else:
            payload = b'\x01' + b'\xff\xfe' + text.encode('utf-16-le')
            size = struct.pack('>I', len(payload))
        if fid == 'COMM':
            lang = b'eng'
            payload = payload[:1] + lang + (b'\0' if major == 4 else b'\xff\xfe\0\0') + payload[1:]
            size = synchsafe(len(payload)) if major == 4 else struct.pack('>I', len(payload))
        body += fid.encode() + size + b'\0\0' + payload
    body += b'\0' * padding
    flags = 0x10 if footer else 0
    tag = b'ID3' + bytes([major, 0, flags]) + synchsafe(len(body)) + body
    if footer:
        tag += b'3DI' + bytes([major, 0, flags]) + synchsafe(len(body))
    return tag

def id3v1(title, artist, album, year, comment, track, genre):
    f = lambda s, n: s.encode('latin-1')[:n].ljust(n, b'\0')
    return b'TAG' + f(title, 30) + f(artist, 30) + f(album, 30) + f(year, 4) + f(comment, 28) + \
        bytes([0, track, genre])

def ape(items, with_header=True):
    body = b''
    for key, value in items:
        v = value.encode('utf-8')
        body += struct.pack('<II', len(v), 0) + key.encode('ascii') + b'\0' + v
    size = len(body) + 32
    def part(is_header):
        flags = (0x80000000 if with_header else 0) | (0x20000000 if is_header else 0)
        return b'APETAGEX' + struct.pack('<IIII', 2000, size, len(items), flags) + b'\0' * 8
    return (part(True) if with_header else b'') + body + part(False)

def lyrics3v1(text):
    return b'LYRICSBEGIN' + text.encode('latin-1') + b'LYRICSEND'

def lyrics3v2(lyrics, title):
    fields = b'IND00003' + b'100'
    for fid, value in (('LYR', lyrics), ('ETT', title)):
        v = value.encode('latin-1')
        fields += fid.encode() + b'%05d' % len(v) + v
    content = b'LYRICSBEGIN' + fields
    return content + b'%06d' % len(content) + b'LYRICS200'

# ----- VBRI -------------------------------------------------------------------

def vbri(src, dst, delay):
    """Writes a Fraunhofer VBRI header frame in front of src's frames, per the
    VBRI layout: the frame header, 32 zero bytes, 'VBRI', version 1, delay,
    quality, stream bytes, audio frames, TOC entries, TOC scale, bytes per TOC
    entry, frames per TOC entry, then the TOC (bytes of each group of frames)."""
    d = open(src, 'rb').read()
    f = frames(d)
    lsf = (d[1] >> 3) & 3 != 3
    rate = [44100, 48000, 32000][(d[2] >> 2) & 3] // (2 if lsf else 1)
    per = 1
    entries = len(f)
    for idx in range(1, 15):
        size = (72 if lsf else 144) * (BR2 if lsf else BR1)[idx] * 1000 // rate
        if size >= 36 + 26 + 2 * entries:
            break
    frame = bytearray(size)
    frame[0:4] = bytes([0xFF, d[1], (idx << 4) | (d[2] & 0x0C), d[3]])
    toc = [f[i + 1][0] - f[i][0] if i + 1 < len(f) else len(d) - f[i][0] for i in range(len(f))]
    struct.pack_into('>4sHHHIIHHHH', frame, 36, b'VBRI', 1, delay, 75, size + len(d), len(f),
                     entries, 1, 2, per)
    for i, n in enumerate(toc):
        struct.pack_into('>H', frame, 36 + 26 + 2 * i, n)
    open(dst, 'wb').write(bytes(frame) + d)

# ----- damage -----------------------------------------------------------------

def poke(path, offset, hexbytes):
    d = bytearray(open(path, 'rb').read())
    b = bytes.fromhex(hexbytes)
    d[offset:offset + len(b)] = b
    open(path, 'wb').write(bytes(d))

def cut(src, dst, fraction):
    d = open(src, 'rb').read()
    open(dst, 'wb').write(d[:int(len(d) * float(fraction))])

# ----- manifest ---------------------------------------------------------------

def floats(raw):
    return struct.unpack('<%df' % (len(raw) // 4), raw[:len(raw) // 4 * 4])

def decode(cmd):
    """Output of an informational decode; None when the decoder gives up."""
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return r.stdout if r.returncode == 0 else None

def describe(entry):
    f = 'mp3/' + entry['file']
    base = 'mp3/' + entry['base']
    d = open(base, 'rb').read()
    fr = frames(d)
    spf = header(d, 0)[1]
    ch = 1 if d[3] >> 6 == 3 else 2
    # Frames present: all of the base's, or for a cut file those before the cut.
    raw = entry.get('rawFrames', len(fr) * spf)
    entry['channels'] = ch
    entry['sampleRate'] = [44100, 48000, 32000][(d[2] >> 2) & 3] // (1 if spf == 1152 else 2)
    entry['baseFrames'] = len(fr)
    entry['rawFrames'] = raw
    entry['frames'] = entry.get('frames', raw - entry['startTrim'] - entry.pop('endTrim', 0))
    ff = decode(['ffmpeg', '-v', 'error', '-i', f, '-f', 'f32le', '-'])
    entry['ffmpegFrames'] = None if ff is None else len(ff) // 4 // ch
    # What mpg123 (the libmpg123 Spool uses, with its own parsing) makes of the
    # fixture, with its own gapless trimming and untrimmed, against the base's
    # untrimmed frames: the largest sample difference, or None when the lengths
    # differ. A VBRI frame it decodes as a leading frame of silence.
    lead = entry.get('mpg123LeadingFrames', 0)
    raw_base = floats(run(['mpg123', '-q', '--no-gapless', '-e', 'f32', '-s', base]))
    s = entry['startTrim'] * ch
    expected = raw_base[s:s + entry['frames'] * ch]
    raw_base = raw_base[:raw * ch]
    for key, flag, want in (('mpg123Gapless', '--gapless', expected), ('mpg123Raw', '--no-gapless', raw_base)):
        got = decode(['mpg123', '-q', flag, '-e', 'f32', '-s', f])
        got = [] if got is None else floats(got)
        entry[key + 'Frames'] = len(got) // ch
        same = len(got) == len(want) + lead * ch
        entry[key + 'MaxAbsDiff'] = max((abs(a - b) for a, b in zip(got[lead * ch:], want)), default=0.0) if same else None
    return entry

def manifest(tsv, out):
    fixtures = []
    for line in open(tsv):
        if line.strip():
            fixtures.append(describe(json.loads(line)))
    doc = {'about': 'Generated by make-mp3-fixtures.sh; do not edit. Each fixture holds the '
                    'frames of its base (LAME frames without Info frame or tags) plus tags, '
                    'header frames or damage. A correct decode is the base decoded untrimmed '
                    '(rawFrames), minus startTrim frames at the start, frames long. '
                    'reference/<base>.f32 is ffmpeg\'s untrimmed decode of the base. '
                    'ffmpegFrames: what ffmpeg makes of the fixture. mpg123Gapless*/mpg123Raw*: '
                    'what mpg123 (libmpg123 with its own parsing) decodes with and without its '
                    'gapless trimming, and its largest difference from the expected samples '
                    '(null: other length); a VBRI frame it decodes as mpg123LeadingFrames of '
                    'silence.',
           'fixtures': fixtures}
    with open(out, 'w') as o:
        json.dump(doc, o, indent=1)
        o.write('\n')
    print('%-42s %6s %6s %6s %6s %8s %6s %8s' % ('file', 'bytes', 'frames', 'ffmpeg', 'mpg123', 'diff', 'raw', 'diff'))
    for e in fixtures:
        print('%-42s %6d %6d %6s %6s %8s %6s %8s' % (e['file'], os.path.getsize('mp3/' + e['file']), e['frames'],
              e['ffmpegFrames'], e['mpg123GaplessFrames'], e['mpg123GaplessMaxAbsDiff'], e['mpg123RawFrames'],
              e['mpg123RawMaxAbsDiff']))

if __name__ == '__main__':
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == 'lame':
        info = lame(open(args[0], 'rb').read())
        print(info[args[1]])
    elif cmd == 'id3v2':
        major, footer, padding = int(args[0]), args[1] == 'footer', int(args[2])
        fields = [tuple(a.split('=', 1)) for a in args[3:]]
        sys.stdout.buffer.write(id3v2(major, fields, footer, padding))
    elif cmd == 'id3v1':
        sys.stdout.buffer.write(id3v1(*args[:5], int(args[5]), int(args[6])))
    elif cmd == 'ape':
        header_, items = args[0] == 'header', [tuple(a.split('=', 1)) for a in args[1:]]
        sys.stdout.buffer.write(ape(items, header_))
    elif cmd == 'lyrics3v1':
        sys.stdout.buffer.write(lyrics3v1(args[0]))
    elif cmd == 'lyrics3v2':
        sys.stdout.buffer.write(lyrics3v2(args[0], args[1]))
    elif cmd == 'split':
        # First N frames of a frame-only file to stdout, or the rest with 'rest'.
        d = open(args[0], 'rb').read()
        f = frames(d, int(args[3]) if len(args) > 3 else 0)
        at = f[int(args[1])][0]
        sys.stdout.buffer.write(d[:at] if args[2] == 'head' else d[at:])
    else:
        {'strip': strip, 'master': master, 'setlame': setlame, 'vbri': lambda s, d, delay: vbri(s, d, int(delay)), 'poke': lambda p, o, h: poke(p, int(o), h),
         'cut': cut, 'manifest': manifest}[cmd](*args)
PYEOF
py() { python3 "$TMP/mp3fx.py" "$@"; }

LIST="$TMP/list.jsonl"
: >"$LIST"
# add FILE BASE START_TRIM END_TRIM TAGS_JSON NOTE [EXTRA_JSON]
add() {
    local extra=${7:-'{}'}
    python3 -c 'import json,sys; e={"file":sys.argv[1],"base":sys.argv[2],"startTrim":int(sys.argv[3]),"endTrim":int(sys.argv[4]),"tags":json.loads(sys.argv[5]),"note":sys.argv[6]}; e.update(json.loads(sys.argv[7])); print(json.dumps(e))' \
        "$1" "$2" "$3" "$4" "$5" "$6" "$extra" >>"$LIST"
}

# ---------------------------------------------------------------------------
# Encodings. Each LAME file is kept with its Info+LAME frame (lame-*.mp3, in
# $TMP) and as bare frames (base-*.mp3): lame -t writes exactly the same audio
# frames, only without the Info frame (checked below).
# ---------------------------------------------------------------------------
master "$TMP/44-2.wav" 44100 2 8820        # 0.2 s
master "$TMP/16-1.wav" 16000 1 16000       # 1 s
master "$TMP/24-2.wav" 24000 2 229         # 229 frames, the length ffmpeg decodes
enc -V 5 "$TMP/44-2.wav" "$TMP/lame-44-vbr.mp3"
enc -b 128 --cbr "$TMP/44-2.wav" "$TMP/lame-44-cbr.mp3"
enc -V 6 "$TMP/16-1.wav" "$TMP/lame-16.mp3"
enc -V 9 --resample 24 "$TMP/24-2.wav" "$TMP/lame-24.mp3"
for b in 44-vbr 44-cbr 16 24; do
    py strip "$TMP/lame-$b.mp3" "$TMP/base-$b.mp3"
done
enc -t -V 5 "$TMP/44-2.wav" "$TMP/t.mp3"
cmp -s "$TMP/t.mp3" "$TMP/base-44-vbr.mp3" || { echo "lame -t frames differ from the tagged file's" >&2; exit 1; }
cp "$TMP/base-44-vbr.mp3" mp3/base-44100-stereo-vbr.mp3
cp "$TMP/base-44-cbr.mp3" mp3/base-44100-stereo-cbr.mp3
cp "$TMP/base-16.mp3" mp3/base-16000-mono-vbr.mp3
cp "$TMP/base-24.mp3" mp3/base-24000-stereo-short.mp3
for b in mp3/base-*.mp3; do
    ffmpeg -nostdin -v error -y -i "$b" -f f32le -c:a pcm_f32le "mp3/reference/$(basename "$b").f32"
done
V44=base-44100-stereo-vbr.mp3 C44=base-44100-stereo-cbr.mp3 M16=base-16000-mono-vbr.mp3 S24=base-24000-stereo-short.mp3
# LAME's gapless trims: delay + 529 (the decoder's delay) at the start,
# padding - 529 at the end.
trims() { echo $(($(py lame "$1" delay) + 529)) $(($(py lame "$1" padding) - 529)); }
read -r V44S V44E <<<"$(trims "$TMP/lame-44-vbr.mp3")"
read -r C44S C44E <<<"$(trims "$TMP/lame-44-cbr.mp3")"
read -r M16S M16E <<<"$(trims "$TMP/lame-16.mp3")"
read -r S24S S24E <<<"$(trims "$TMP/lame-24.mp3")"

T='{"title":"Spool Tags","artist":"Spool","album":"Fixtures"}'
cat_to() { local out=$1; shift; cat "$@" >"mp3/$out"; }

# ---------------------------------------------------------------------------
# Tags: none of them may be played or reported as corrupt.
# ---------------------------------------------------------------------------
py id3v2 4 nofooter 300 TIT2='Spool Tags' TPE1=Spool TALB=Fixtures TRCK=7 TDRC=2024 COMM='a comment' >"$TMP/id3v24.tag"
py id3v2 3 nofooter 0 TIT2='Spool Tags' TPE1=Spool TALB=Fixtures >"$TMP/id3v23.tag"
py id3v2 4 footer 0 TIT2='Spool Tags' TPE1=Spool TALB=Fixtures >"$TMP/id3v24-footer.tag"
py id3v2 3 nofooter 64 TIT2='Appended' >"$TMP/id3v23-end.tag"
py id3v1 'ID3v1 Title' 'ID3v1 Artist' 'ID3v1 Album' 2001 'v1 comment' 3 12 >"$TMP/id3v1.tag"
py ape header Title='APE Title' Artist='APE Artist' Album='APE Album' Year=2002 >"$TMP/ape.tag"
py ape noheader Title='APE Title' Artist='APE Artist' >"$TMP/ape-noheader.tag"
py lyrics3v1 'Spool lyrics, version one' >"$TMP/lyrics3v1.tag"
py lyrics3v2 'Spool lyrics, version two' 'Lyrics3 Title' >"$TMP/lyrics3v2.tag"

cat_to id3v24-front-ape-lyrics3v2-id3v1.mp3 "$TMP/id3v24.tag" "$TMP/lame-44-vbr.mp3" "$TMP/ape.tag" "$TMP/lyrics3v2.tag" "$TMP/id3v1.tag"
add id3v24-front-ape-lyrics3v2-id3v1.mp3 $V44 $V44S $V44E '{"title":"Spool Tags","artist":"Spool","album":"Fixtures","tracknumber":"7","date":"2024","comment":"a comment"}' \
    "MPEG-1 VBR: ID3v2.4 (UTF-8, 300 bytes of padding) in front; APEv2, Lyrics3v2, ID3v1 at the end"
cat_to mpeg2-id3v23-end-ape.mp3 "$TMP/lame-16.mp3" "$TMP/id3v23-end.tag" "$TMP/ape.tag"
add mpeg2-id3v23-end-ape.mp3 $M16 $M16S $M16E '{"title":"Appended","artist":"APE Artist","album":"APE Album","date":"2002"}' \
    "MPEG-2 16 kHz mono: ID3v2.3 appended after the audio (no footer), then APEv2 with header"
cat_to mpeg2-id3v24-footer-end-ape-noheader.mp3 "$TMP/lame-16.mp3" "$TMP/id3v24-footer.tag" "$TMP/ape-noheader.tag"
add mpeg2-id3v24-footer-end-ape-noheader.mp3 $M16 $M16S $M16E "$T" \
    "MPEG-2 16 kHz mono: ID3v2.4 with its 3DI footer appended after the audio, then APEv2 without header"
cat_to stack-lyrics3v2-ape-id3v1.mp3 "$TMP/lame-44-vbr.mp3" "$TMP/lyrics3v2.tag" "$TMP/ape.tag" "$TMP/id3v1.tag"
add stack-lyrics3v2-ape-id3v1.mp3 $V44 $V44S $V44E '{"title":"APE Title","artist":"APE Artist","album":"APE Album"}' \
    "Lyrics3v2, then APEv2 with header, then ID3v1"
cat_to stack-ape-noheader-lyrics3v1-id3v1.mp3 "$TMP/lame-44-vbr.mp3" "$TMP/ape-noheader.tag" "$TMP/lyrics3v1.tag" "$TMP/id3v1.tag"
add stack-ape-noheader-lyrics3v1-id3v1.mp3 $V44 $V44S $V44E '{"title":"APE Title","artist":"APE Artist","album":"ID3v1 Album","tracknumber":"3"}' \
    "APEv2 without header, then Lyrics3v1, then ID3v1 (v1.1, track 3)"
cat_to stack-id3v1-ape.mp3 "$TMP/lame-44-vbr.mp3" "$TMP/id3v1.tag" "$TMP/ape.tag"
add stack-id3v1-ape.mp3 $V44 $V44S $V44E '{"title":"APE Title","artist":"APE Artist"}' \
    "ID3v1 followed by APEv2 (appended after the ID3v1 tag)"
cat_to lyrics3v1-only.mp3 "$TMP/lame-44-vbr.mp3" "$TMP/lyrics3v1.tag"
add lyrics3v1-only.mp3 $V44 $V44S $V44E '{}' "Lyrics3v1 with no ID3v1 after it"
head -c 100 /dev/zero >"$TMP/zeros"
cat_to two-id3v2-front-padding.mp3 "$TMP/id3v23.tag" "$TMP/id3v24.tag" "$TMP/zeros" "$TMP/lame-44-cbr.mp3" "$TMP/id3v1.tag"
add two-id3v2-front-padding.mp3 $C44 $C44S $C44E "$T" \
    "MPEG-1 CBR: ID3v2.3 then ID3v2.4 in front, 100 zero bytes before the first frame, ID3v1 at the end"
cat_to id3v24-footer-end.mp3 "$TMP/lame-44-cbr.mp3" "$TMP/id3v24-footer.tag"
add id3v24-footer-end.mp3 $C44 $C44S $C44E "$T" "ID3v2.4 with its footer as the last thing in the file"
# Tags between frames: the Info frame and 4 audio frames, an ID3v2.3 and an
# APEv2 tag, the other frames.
py split "$TMP/lame-44-vbr.mp3" 5 head >"$TMP/head.mp3"
py split "$TMP/lame-44-vbr.mp3" 5 rest >"$TMP/rest.mp3"
cat_to tags-between-frames.mp3 "$TMP/head.mp3" "$TMP/id3v23-end.tag" "$TMP/ape.tag" "$TMP/rest.mp3"
add tags-between-frames.mp3 $V44 $V44S $V44E '{"title":"Appended","artist":"APE Artist"}' "ID3v2.3 and APEv2 tags between the 4th and 5th audio frames"

# ---------------------------------------------------------------------------
# Fraunhofer-style VBRI header frames (no Fraunhofer encoder here: the frame is
# written by py vbri). Decoders skip the VBRI frame and, like ffmpeg and
# libmpg123, do not trim by its delay field; libmpg123 alone decodes the VBRI
# frame itself as a frame of silence.
# ---------------------------------------------------------------------------
py vbri "mp3/$C44" mp3/vbri-cbr.mp3 1105
add vbri-cbr.mp3 $C44 0 0 '{}' "VBRI frame in front of LAME CBR 128k frames" '{"mpg123LeadingFrames":1152}'
py vbri "mp3/$V44" "$TMP/vbri-vbr.mp3" 1105
cat_to vbri-vbr-id3v1.mp3 "$TMP/vbri-vbr.mp3" "$TMP/id3v1.tag"
add vbri-vbr-id3v1.mp3 $V44 0 0 '{"title":"ID3v1 Title","artist":"ID3v1 Artist","album":"ID3v1 Album","date":"2001"}' \
    "VBRI frame in front of LAME VBR frames, ID3v1 at the end" '{"mpg123LeadingFrames":1152}'
py vbri "mp3/$M16" mp3/vbri-mpeg2.mp3 1105
add vbri-mpeg2.mp3 $M16 0 0 '{}' "VBRI frame in front of MPEG-2 16 kHz mono VBR frames" '{"mpg123LeadingFrames":576}'

# ---------------------------------------------------------------------------
# Stream facts
# ---------------------------------------------------------------------------
# VBR without any header frame: the bit rate is measured, not read off frame 1.
add $V44 $V44 0 0 '{}' "VBR frames, no Xing/LAME/VBRI header: nothing to trim, no length to read" \
    "{\"isVBR\":true,\"bitRate\":$(python3 -c "
import os; n=$(py lame "$TMP/lame-44-vbr.mp3" frames); print(round(os.path.getsize('mp3/$V44')*8*44100/(n*1152)))")}"
add $C44 $C44 0 0 '{}' "CBR 128k frames, no header" '{"isVBR":false,"bitRate":128000}'
add $M16 $M16 0 0 '{}' "MPEG-2 VBR frames, no header" '{"isVBR":true}'
# Very short LAME file: 229 frames of MPEG-2 24 kHz stereo, lame -V 9.
cp "$TMP/lame-24.mp3" mp3/short-24000-stereo.mp3
add short-24000-stereo.mp3 $S24 $S24S $S24E '{}' "lame -V 9 of 229 frames: Info frame + 3 frames of 576"
add $S24 $S24 0 0 '{}' "the short file's frames without the Info frame"
cp "$TMP/lame-44-vbr.mp3" mp3/lame-44100-stereo-vbr.mp3
add lame-44100-stereo-vbr.mp3 $V44 $V44S $V44E '{}' "the plain LAME file the tag fixtures are made of"
cp "$TMP/lame-16.mp3" mp3/lame-16000-mono-vbr.mp3
add lame-16000-mono-vbr.mp3 $M16 $M16S $M16E '{}' "the plain MPEG-2 LAME file"
# ffmpeg writes its own Info+LAME frame ("Lavc"), whose CRC-16 does not match
# LAME's for MPEG-2; its delay and padding hold all the same.
master "$TMP/16-1-short.wav" 16000 1 4000
ffmpeg -nostdin -v error -y -i "$TMP/16-1-short.wav" -map_metadata -1 -fflags +bitexact -flags:a +bitexact \
    -id3v2_version 0 -c:a libmp3lame -b:a 32k mp3/ffmpeg-16000-mono.mp3
py strip mp3/ffmpeg-16000-mono.mp3 mp3/base-16000-mono-ffmpeg.mp3
ffmpeg -nostdin -v error -y -i mp3/base-16000-mono-ffmpeg.mp3 -f f32le -c:a pcm_f32le mp3/reference/base-16000-mono-ffmpeg.mp3.f32
read -r FFS FFE <<<"$(trims mp3/ffmpeg-16000-mono.mp3)"
add ffmpeg-16000-mono.mp3 base-16000-mono-ffmpeg.mp3 $FFS $FFE '{}' "MPEG-2 CBR 32k by ffmpeg (libmp3lame), ffmpeg's own Info+LAME frame"
# Cut mid-way: the Info frame still claims every frame. The delay is trimmed
# at the start all the same; the padding is not (the end is gone).
py cut "$TMP/lame-16.mp3" mp3/truncated-16000-mono.mp3 0.6
cut_frames=$(python3 -c "
import sys; sys.path.insert(0, '$TMP'); import mp3fx
d = open('mp3/truncated-16000-mono.mp3','rb').read(); i = 0; n = 0
while True:
    h = mp3fx.header(d, i)
    if not h or i + h[0] > len(d): break
    i += h[0]; n += 1
print(n - 1)")
add truncated-16000-mono.mp3 $M16 $M16S 0 '{}' "lame-16000-mono-vbr.mp3 cut at 60 %, inside a frame" \
    "{\"damaged\":true,\"warnings\":[\"truncated\"],\"rawFrames\":$((cut_frames * 576))}"

# ---------------------------------------------------------------------------
# Overwritten header bytes. Whatever LAME's delay and padding say is trimmed
# (as libmpg123 does), but never more than there is; a Xing frame count that
# differs from the frames present leaves the end untrimmed (the frames decide).
# ---------------------------------------------------------------------------
mutate() { # NAME SOURCE OFFSET HEX
    cp "$2" "mp3/$1"
    py poke "mp3/$1" "$3" "$4"
}
F=$(py lame "$TMP/lame-44-vbr.mp3" framesAt)
N=$(py lame "$TMP/lame-44-vbr.mp3" frames)
V44D=$(py lame "$TMP/lame-44-vbr.mp3" delay)
V44P=$(py lame "$TMP/lame-44-vbr.mp3" padding)
lamemut() { # NAME DELAY PADDING NOTE
    cp "$TMP/lame-44-vbr.mp3" "mp3/$1"
    py setlame "mp3/$1" "$2" "$3"
    local d=$2 p=$3
    [[ $d == - ]] && d=$V44D
    [[ $p == - ]] && p=$V44P
    add "$1" $V44 $((d + 529)) $((p > 529 ? p - 529 : 0)) '{}' "$4" '{"damaged":true}'
}
lamemut lame-delay-padding-4095.mp3 4095 4095 "LAME delay and padding overwritten with 4095 each (bytes FF FF FF)"
lamemut lame-delay-4095.mp3 4095 - "LAME delay overwritten with 4095"
lamemut lame-padding-4095.mp3 - 4095 "LAME padding overwritten with 4095"
lamemut lame-delay-padding-0.mp3 0 0 "LAME delay and padding overwritten with 0"
mutate xing-frames-short.mp3 "$TMP/lame-44-vbr.mp3" "$F" "$(printf '%08x' $((N - 1)))"
add xing-frames-short.mp3 $V44 $V44S 0 '{}' "Xing frame count one short of the frames present" '{"damaged":true}'
L24=$(py lame "$TMP/lame-24.mp3" framesAt)
mutate short-24000-xing-frames-short.mp3 "$TMP/lame-24.mp3" "$L24" 00000002
add short-24000-xing-frames-short.mp3 $S24 $S24S 0 '{}' "the short file with its Xing frame count one short" '{"damaged":true}'
# ID3v2 header bytes overwritten: the tag's size claims past the end of the
# file, or the magic is gone. Its bytes are then junk in front of the first
# frame, skipped without playing them.
cat "$TMP/id3v24.tag" "$TMP/lame-44-vbr.mp3" >"$TMP/id3.mp3"
mutate id3v2-size-past-end.mp3 "$TMP/id3.mp3" 6 7f7f7f7f
add id3v2-size-past-end.mp3 $V44 $V44S $V44E '{}' "ID3v2.4 tag whose size claims 256 MB" '{"damaged":true}'
mutate id3v2-magic-overwritten.mp3 "$TMP/id3.mp3" 0 584433
add id3v2-magic-overwritten.mp3 $V44 $V44S $V44E '{}' "ID3v2.4 tag whose 'ID3' reads 'XD3'" '{"damaged":true}'
mutate id3v2-size-non-synchsafe.mp3 "$TMP/id3.mp3" 8 ff
add id3v2-size-non-synchsafe.mp3 $V44 $V44S $V44E '{}' "ID3v2.4 tag size with a byte that is not synchsafe" '{"damaged":true}'

py manifest "$LIST" mp3/manifest.json
du -sh mp3
