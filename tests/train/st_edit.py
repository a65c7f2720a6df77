#!/usr/bin/env python3
"""tests/train/st_edit.py — edit a safetensors file in place, for the bad-input tests.

    st_edit.py FILE meta KEY VALUE        set a __metadata__ string
    st_edit.py FILE poke TENSOR INDEX V   write V (e.g. nan, inf) at element INDEX of an F32 or F64 tensor

The header is rewritten (padded to a multiple of 8, as writers do) and the data is kept. The file
is replaced through a temp file and a rename, like every writer of the project.
"""
import json
import os
import struct
import sys


def main():
    path, op = sys.argv[1], sys.argv[2]
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    data = bytearray(raw[8 + n:])
    if op == "meta":
        header.setdefault("__metadata__", {})[sys.argv[3]] = sys.argv[4]
    elif op == "poke":
        t = header[sys.argv[3]]
        fmt = {"F32": "<f", "F64": "<d"}[t["dtype"]]
        size = struct.calcsize(fmt)
        off = t["data_offsets"][0] + size * int(sys.argv[4])
        data[off:off + size] = struct.pack(fmt, float(sys.argv[5]))
    else:
        sys.exit("unknown op " + op)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    tmp = path + ".edit"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + bytes(data))
    os.replace(tmp, os.path.realpath(path))


if __name__ == "__main__":
    main()
