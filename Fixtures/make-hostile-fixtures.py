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
