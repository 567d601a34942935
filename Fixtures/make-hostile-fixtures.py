#!/usr/bin/env python3
"""Makes Fixtures/hostile/: files whose headers lie in ways that once crashed or misled Spool,
each derived deterministically from a good fixture. Standard library only."""
import os
import struct

here = os.path.dirname(os.path.abspath(__file__))
out = os.path.join(here, "hostile")
os.makedirs(out, exist_ok=True)


def chunks(riff):
    """(id, offset of body, size) of each chunk of a RIFF/WAVE file."""
    at, found = 12, []
    while at + 8 <= len(riff):
        cid, size = riff[at:at + 4], struct.unpack("<I", riff[at + 4:at + 8])[0]
        found.append((cid, at + 8, size))
        at += 8 + size + (size & 1)
    return found


def wav_parts(name):
    riff = open(os.path.join(here, name), "rb").read()
    parts = {cid: riff[body:body + size] for cid, body, size in chunks(riff)}
    return parts[b"fmt "], parts[b"data"]


def write(name, data):
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)


fmt, data = wav_parts("wav-44100-stereo-s16.wav")
huge = 0x7FFFFFFFFFFFFFFF

# RF64 whose ds64 chunk gives every size as 2^63 - 1: the sizes libsndfile then seeks by
# overflow any sum a reader callback makes.
ds64 = struct.pack("<QQQI", huge, huge, huge, 0)
body = b"WAVE" + b"ds64" + struct.pack("<I", len(ds64)) + ds64 \
    + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", 0xFFFFFFFF) + data
write("rf64-huge-ds64.wav", b"RF64" + struct.pack("<I", 0xFFFFFFFF) + body)

# The same, with the ds64 sizes at the largest unsigned value (read back as -1 by a signed reader).
ds64 = struct.pack("<QQQI", 2**64 - 1, 2**64 - 1, 2**64 - 1, 0)
body = b"WAVE" + b"ds64" + struct.pack("<I", len(ds64)) + ds64 \
    + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", 0xFFFFFFFF) + data
write("rf64-negative-ds64.wav", b"RF64" + struct.pack("<I", 0xFFFFFFFF) + body)

# A WAV whose fmt chunk claims 4 GiB: chunk walks must not trust it.
body = b"WAVE" + b"fmt " + struct.pack("<I", 0xFFFFFFF0) + fmt + b"data" + struct.pack("<I", len(data)) + data
write("wav-huge-fmt.wav", b"RIFF" + struct.pack("<I", len(body)) + body)

# A WAV whose block align and channel count are zero.
bad_fmt = bytearray(fmt)
bad_fmt[2:4] = b"\0\0"
bad_fmt[12:14] = b"\0\0"
body = b"WAVE" + b"fmt " + struct.pack("<I", len(bad_fmt)) + bytes(bad_fmt) + b"data" + struct.pack("<I", len(data)) + data
write("wav-zero-channels.wav", b"RIFF" + struct.pack("<I", len(body)) + body)

# MPEG Layer III inside a WAV (WAVE_FORMAT_MPEGLAYER3), as some encoders write it: the frames
# of mp3-44100-stereo.mp3 (its LAME tag frame included) after an MPEGLAYER3WAVEFORMAT fmt chunk.
mp3 = open(os.path.join(here, "mp3-44100-stereo.mp3"), "rb").read()
if mp3[:3] == b"ID3":
    size = (mp3[6] & 0x7F) << 21 | (mp3[7] & 0x7F) << 14 | (mp3[8] & 0x7F) << 7 | (mp3[9] & 0x7F)
    mp3 = mp3[10 + size:]
if mp3[-128:-125] == b"TAG":
    mp3 = mp3[:-128]
# wFormatTag 0x55, 2 channels, 44100 Hz, 16000 bytes/s, block align 1, 0 bits, cbSize 12,
# then wID 1, fdwFlags 2, nBlockSize 418, nFramesPerBlock 1, nCodecDelay 1393.
mpeg_fmt = struct.pack("<HHIIHHH", 0x55, 2, 44100, 16000, 1, 0, 12) + struct.pack("<HIHHH", 1, 2, 418, 1, 1393)
body = b"WAVE" + b"fmt " + struct.pack("<I", len(mpeg_fmt)) + mpeg_fmt \
    + b"fact" + struct.pack("<II", 4, 22050) + b"data" + struct.pack("<I", len(mp3)) + mp3 + (b"\0" if len(mp3) & 1 else b"")
write("wav-mpeg-layer3.wav", b"RIFF" + struct.pack("<I", len(body)) + body)

# The same with bytes of three frames in the middle overwritten: damage libmpg123 reports.
damaged = bytearray(b"RIFF" + struct.pack("<I", len(body)) + body)
for i in range(len(damaged) // 2, len(damaged) // 2 + 1200, 7):
    damaged[i] = 0x55
write("wav-mpeg-layer3-damaged.wav", bytes(damaged))

# Found by the sndfile fuzz target (kept as it was found): a LIST chunk before the data that
# claims 4 GiB, in a WAV whose fmt chunk says 65529 channels; libsndfile 1.2 spins on it for
# ever inside sf_open, so Spool must refuse it before libsndfile sees it.
write("wav-list-claims-4gib.wav", bytes.fromhex(
    "52494646ee58010057415645666d7420100000000100f9ff44ac000010b10200040010004c495354ffffffffffffffff"
    "fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7ffffffffffffffffffffffffffffff"
    "ffffffffffffffffff380000004900000000000101d90000005370537472690b6e004100674d0053706f6f6c20546573"
    "740000495052440900006946007874757265730000646174618858010037000f13f12342aaaa"))

# FLAC whose VORBIS_COMMENT block claims 20 bytes fewer than it holds: where the next block
# header should be, the comment's last bytes read as a header of reserved type 16. libFLAC
# (and so libsndfile) refuses the file whole; its audio frames are intact. Whole, and cut to
# four fifths of its length (its last frame cut short).
flac = bytearray(open(os.path.join(here, "flac-44100-stereo-s16.flac"), "rb").read())
at = 4
while True:
    last, kind = flac[at] & 0x80, flac[at] & 0x7F
    size = int.from_bytes(flac[at + 1:at + 4], "big")
    if kind == 4:
        flac[at + 1:at + 4] = (size - 20).to_bytes(3, "big")
    at += 4 + size
    if last:
        break
write("flac-short-block.flac", bytes(flac))
write("flac-short-block-cut.flac", bytes(flac[:len(flac) * 4 // 5]))
