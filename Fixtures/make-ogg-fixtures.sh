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

# ----- Ogg pages and Vorbis packets -------------------------------------------

def pages(data):
    """The pages of a well-formed Ogg file, in order."""
    out, pos = [], 0
    while pos < len(data):
        assert data[pos:pos + 4] == b'OggS', 'lost page sync at %d' % pos
        n = data[pos + 26]
        lacing = list(data[pos + 27:pos + 27 + n])
        out.append(dict(offset=pos, size=27 + n + sum(lacing), htype=data[pos + 5],
                        granule=struct.unpack_from('<q', data, pos + 6)[0],
                        serial=struct.unpack_from('<I', data, pos + 14)[0],
                        sequence=struct.unpack_from('<I', data, pos + 18)[0],
                        lacing=lacing, body=pos + 27 + n))
        pos += out[-1]['size']
    return out

def fix_crc(data, page):
    o = page['offset']
    struct.pack_into('<I', data, o + 22, 0)
    struct.pack_into('<I', data, o + 22, crc(data[o:o + page['size']]))

def set_granule(data, page, granule):
    struct.pack_into('<q', data, page['offset'] + 6, granule)
    fix_crc(data, page)

def set_flags(data, page, header_type):
    data[page['offset'] + 5] = header_type
    fix_crc(data, page)

def link_pages(data, serial):
    return [p for p in pages(data) if p['serial'] == serial]

def packets(data, serial):
    """The packets of one logical stream, each with the file offset of every byte."""
    out, cur, where = [], bytearray(), []
    for p in link_pages(data, serial):
        off = p['body']
        for l in p['lacing']:
            cur += data[off:off + l]
            where += range(off, off + l)
            off += l
            if l < 255:
                out.append((bytes(cur), where))
                cur, where = bytearray(), []
    return out

class Bits:
    """Vorbis bit packing: least significant bit first."""
    def __init__(self, b, pos=0):
        self.b, self.pos = b, pos
    def read(self, n):
        v = 0
        for i in range(n):
            v |= ((self.b[self.pos >> 3] >> (self.pos & 7)) & 1) << i
            self.pos += 1
        return v

def ilog(x):
    return x.bit_length() if x > 0 else 0

def lookup1(entries, dims):
    r = 0
    while (r + 1) ** dims <= entries:
        r += 1
    return r

def setup_fields(packet, channels):
    """Bit positions of the setup header fields the cases change (Vorbis I §4.2.4)."""
    b = Bits(packet, 7 * 8)
    books, residues = [], []
    for i in range(b.read(8) + 1):
        bk = {}
        assert b.read(24) == 0x564342
        bk['dims_at'], bk['dims'] = b.pos, b.read(16)
        bk['entries'] = b.read(24)
        bk['lengths_at'] = []
        if not b.read(1):
            sparse = b.read(1)
            for e in range(bk['entries']):
                if sparse and not b.read(1):
                    bk['lengths_at'].append(None)
                    continue
                bk['lengths_at'].append(b.pos)
                b.read(5)
        else:
            bk['ordered'] = True
            cur = 0
            b.read(5)
            while cur < bk['entries']:
                cur += b.read(ilog(bk['entries'] - cur))
        bk['lookup'] = b.read(4)
        if bk['lookup'] in (1, 2):
            b.read(32); b.read(32)
            bits = b.read(4) + 1
            b.read(1)
            n = lookup1(bk['entries'], bk['dims']) if bk['lookup'] == 1 else bk['entries'] * bk['dims']
            b.pos += n * bits
        books.append(bk)
    for i in range(b.read(6) + 1):
        b.read(16)
    for i in range(b.read(6) + 1):
        assert b.read(16) == 1, 'only floor type 1 is expected here'
        parts = b.read(5)
        classes = [b.read(4) for _ in range(parts)]
        dims = []
        for c in range(max(classes) + 1 if classes else 0):
            dims.append(b.read(3) + 1)
            sub = b.read(2)
            if sub:
                b.read(8)
            for j in range(1 << sub):
                b.read(8)
        b.read(2)
        rangebits = b.read(4)
        for p in range(parts):
            b.pos += dims[classes[p]] * rangebits
    for i in range(b.read(6) + 1):
        r = {'type': b.read(16)}
        b.read(24); b.read(24)
        r['partsize_at'], r['partsize'] = b.pos, b.read(24) + 1
        ncls = b.read(6) + 1
        r['classbook'] = b.read(8)
        cascade = []
        for c in range(ncls):
            low = b.read(3)
            cascade.append((b.read(5) if b.read(1) else 0) * 8 + low)
        r['books'] = [b.read(8) for c in range(ncls) for j in range(8) if cascade[c] & (1 << j)]
        residues.append(r)
    return books, residues

def set_bits(packet, pos, n, value):
    touched = set()
    for i in range(n):
        bit = pos + i
        packet[bit >> 3] = (packet[bit >> 3] & ~(1 << (bit & 7))) | (((value >> i) & 1) << (bit & 7))
        touched.add(bit >> 3)
    return touched

def change_setup(src, dst, change):
    """Applies change(packet, books, residues) -> bytes touched to the setup header of the
    first stream and rewrites the pages it touched with their checksums recomputed."""
    data = bytearray(open(src, 'rb').read())
    first = pages(data)[0]
    channels = data[first['body'] + 11]
    setup, where = packets(data, first['serial'])[2]
    packet = bytearray(setup)
    books, residues = setup_fields(packet, channels)
    touched = change(packet, books, residues)
    offsets = sorted(where[i] for i in touched)
    for i in touched:
        data[where[i]] = packet[i]
    for p in pages(data):
        if any(p['offset'] <= o < p['offset'] + p['size'] for o in offsets):
            fix_crc(data, p)
    open(dst, 'wb').write(bytes(data))
    return offsets

def save(name, data):
    open('ogg/' + name, 'wb').write(bytes(data))

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

def chained():
    # Link 1 (44.1 kHz stereo) followed by link 2 (22.05 kHz mono); link 1's last granule
    # position raised by 20000, so a decoder that believes it reads on into link 2.
    data = bytearray(open('broken/vorbis-chained-mixed.ogg', 'rb').read())
    first = pages(data)[0]
    last = link_pages(data, first['serial'])[-1]
    set_granule(data, last, last['granule'] + 20000)
    save('chained-fewer-channels-raised-granule.ogg', data)
    case('chained-fewer-channels-raised-granule.ogg',
         'broken/vorbis-chained-mixed.ogg, the last granule position of link 1 (serial %d) raised from %d to %d, checksum recomputed'
         % (first['serial'], last['granule'], last['granule'] + 20000),
         changedPage=last['offset'], link1Frames=last['granule'], link2Offset=last['offset'] + last['size'])

def granules():
    src = open('vorbis-44100-stereo-chained.ogg', 'rb').read()
    ps = pages(src)
    serial1 = ps[0]['serial']
    link1 = [p for p in ps if p['serial'] == serial1]
    link2 = [p for p in ps if p['serial'] != serial1]
    # Link 1's last granule position 2^63-1: the links' frame totals overflow when added.
    data = bytearray(src)
    set_granule(data, link1[-1], 2**63 - 1)
    save('granule-max.ogg', data)
    case('granule-max.ogg', 'vorbis-44100-stereo-chained.ogg, link 1 last granule position 2^63-1, checksum recomputed',
         changedPage=link1[-1]['offset'], frames=44100)
    # The same, with page 3 of link 2 missing and page 3 of link 1 failing its checksum.
    hole = link2[3]
    damaged = bytearray(data[:hole['offset']] + data[hole['offset'] + hole['size']:])
    bad = link1[3]
    damaged[bad['body'] + 10] ^= 0x40
    save('granule-max-hole-bad-checksum.ogg', damaged)
    case('granule-max-hole-bad-checksum.ogg',
         'granule-max.ogg without page 3 of link 2 (%d bytes at byte %d) and with a byte of page 3 of link 1 (at byte %d) changed, checksum not recomputed'
         % (hole['size'], hole['offset'], bad['offset']),
         removedPage=hole['offset'], removedBytes=hole['size'], badChecksumPage=bad['offset'], badChecksumBytes=bad['size'])
    # A missing page alone.
    save('page-missing.ogg', src[:hole['offset']] + src[hole['offset'] + hole['size']:])
    case('page-missing.ogg', 'vorbis-44100-stereo-chained.ogg without page 3 of link 2 (%d bytes at byte %d)'
         % (hole['size'], hole['offset']), removedPage=hole['offset'], removedBytes=hole['size'])
    # Granule positions raised: link 1's last one to 2^32 (a decoder that believes it
    # makes audio without end), link 2's last one by 100.
    for name, page, granule in [('granule-raised.ogg', link1[-1], 2**32),
                                ('granule-last-raised.ogg', link2[-1], link2[-1]['granule'] + 100)]:
        data = bytearray(src)
        set_granule(data, page, granule)
        save(name, data)
        case(name, 'vorbis-44100-stereo-chained.ogg, the last granule position of link %d (%d) set to %d, checksum recomputed'
             % (1 if page in link1 else 2, page['granule'], granule), changedPage=page['offset'], frames=44100)

def flags():
    # header_type flags changed, checksum recomputed.
    one = bytearray(open('vorbis-44100-stereo.ogg', 'rb').read())
    only = pages(one)[-1]
    set_flags(one, only, 0x07)
    save('flags-all-set.ogg', one)
    case('flags-all-set.ogg', 'vorbis-44100-stereo.ogg, its only audio page flagged continued, first and last (header_type 7), checksum recomputed',
         changedPage=only['offset'], frames=22050)
    src = open('vorbis-44100-stereo-chained.ogg', 'rb').read()
    last = pages(src)[-1]
    data = bytearray(src)
    set_flags(data, last, 0x05)
    save('flags-continued-last.ogg', data)
    case('flags-continued-last.ogg', 'vorbis-44100-stereo-chained.ogg, the last page of link 2 flagged as continuing a packet (it does not) and last (header_type 5), checksum recomputed',
         changedPage=last['offset'], frames=44100)

def setup():
    src = 'vorbis-44100-stereo.ogg'
    def first_length(books):
        # The first codebook with unordered lengths of at least 3 bits: a codeword one bit
        # shorter overfills its Huffman tree, one bit longer leaves it incomplete.
        for i, bk in enumerate(books):
            for at in bk['lengths_at']:
                if at is not None:
                    return i, at
    def shorter(packet, books, residues):
        i, at = first_length(books)
        value = Bits(packet, at).read(5)
        return set_bits(packet, at, 5, value - 1)
    def longer(packet, books, residues):
        i, at = first_length(books)
        value = Bits(packet, at).read(5)
        return set_bits(packet, at, 5, value + 1)
    def classbook_dims(packet, books, residues):
        return set_bits(packet, books[residues[0]['classbook']]['dims_at'], 16, 0)
    def partition_size(packet, books, residues):
        return set_bits(packet, residues[0]['partsize_at'], 24, residues[0]['partsize'] - 2)
    books, residues = setup_fields(bytearray(packets(open(src, 'rb').read(), pages(open(src, 'rb').read())[0]['serial'])[2][0]), 2)
    book, _ = first_length(books)
    for name, change, note, problem in [
            ('setup-huffman-overspecified.ogg', shorter, 'the first codeword length of codebook %d one bit shorter' % book,
             "codebook %d's Huffman tree is overspecified" % book),
            ('setup-huffman-underspecified.ogg', longer, 'the first codeword length of codebook %d one bit longer' % book,
             "codebook %d's Huffman tree is underspecified" % book),
            ('setup-classbook-no-dimensions.ogg', classbook_dims,
             'the dimensions of codebook %d, residue 0\'s classbook, set to 0' % residues[0]['classbook'],
             "residue 0's classbook %d has 0 dimensions" % residues[0]['classbook']),
            ('setup-partition-size.ogg', partition_size,
             'residue 0\'s partition size %d set to %d, not a multiple of its codebooks\' dimensions' % (residues[0]['partsize'], residues[0]['partsize'] - 1),
             "residue 0's partition size %d is not a multiple" % (residues[0]['partsize'] - 1))]:
        offsets = change_setup(src, 'ogg/' + name, change)
        case(name, src + ', ' + note + ' (bytes ' + ', '.join(map(str, offsets)) + '), checksums recomputed',
             changedBytes=offsets, problem=problem)

if __name__ == '__main__':
    for step in sys.argv[1:]:
        globals()[step]()
    json.dump(CASES, open('ogg/cases.json', 'w'), indent=2, sort_keys=True)
    open('ogg/cases.json', 'a').write('\n')
PYEOF
python3 "$TMP/ogg.py" non_vorbis chained granules flags setup

ls -l "$OUT"
