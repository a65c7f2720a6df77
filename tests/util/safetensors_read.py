#!/usr/bin/env python3
"""tests/util/safetensors_read.py — read a safetensors file with numpy alone.

Debian has no `safetensors` package, so this parses the format by hand: an 8-byte little-endian
header length N, N bytes of JSON header {name: {"dtype", "shape", "data_offsets": [begin, end]},
"__metadata__": {str: str}}, then the data buffer (offsets relative to its start). It checks the
file the way the reference implementation does (tensors tile the buffer exactly, sizes match).

    python3 tests/util/safetensors_read.py FILE

prints one JSON object: {"header_len", "metadata", "tensors": [{"name", "dtype", "shape",
"values"}] in header order, "torch"}. Values are flattened row-major; BF16 is widened to float32
(exactly); non-finite floats are the strings "nan", "inf", "-inf". If `import torch` works, every
tensor also goes through torch.from_numpy (BF16 via a uint16 view reinterpreted as
torch.bfloat16, as the PyTorch parity test does) and must come back with the same shape and
values; "torch" then says "ok (torch VERSION)", otherwise "absent (REASON)".

As a module: load(path) -> (tensors, metadata), tensors an ordered dict name -> (dtype, array).
Exit status 1 with a message on stderr if the file is malformed or the torch check fails.
"""
import json
import math
import struct
import sys

import numpy as np

NP_DTYPES = {
    "BOOL": np.bool_, "U8": np.uint8, "I8": np.int8,
    "U16": "<u2", "I16": "<i2", "F16": "<f2", "BF16": "<u2",
    "U32": "<u4", "I32": "<i4", "F32": "<f4",
    "U64": "<u8", "I64": "<i8", "F64": "<f8",
}


class FormatError(Exception):
    pass


def bf16_to_f32(raw):
    """uint16 bit patterns -> float32 (exact: bf16 is the top half of an f32)."""
    return (raw.astype(np.uint32) << 16).view(np.float32)


def load(path, keep_raw=False):
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise FormatError(f"only {len(blob)} bytes, too short for a safetensors file")
    (n,) = struct.unpack("<Q", blob[:8])
    if n > len(blob) - 8:
        raise FormatError(f"header length {n} exceeds the file ({len(blob)} bytes)")
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    if not isinstance(header, dict):
        raise FormatError("header is not a JSON object")
    metadata = header.pop("__metadata__", None) or {}
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        raise FormatError("__metadata__ must map strings to strings")
    buf = blob[8 + n:]
    tensors, spans = {}, []
    for name, info in header.items():
        dtype, shape, (begin, end) = info["dtype"], list(info["shape"]), info["data_offsets"]
        if dtype not in NP_DTYPES:
            raise FormatError(f"tensor {name}: unsupported dtype {dtype}")
        np_dtype = np.dtype(NP_DTYPES[dtype])
        numel = math.prod(shape)
        if end - begin != numel * np_dtype.itemsize or not 0 <= begin <= end <= len(buf):
            raise FormatError(f"tensor {name}: data_offsets [{begin}, {end}] do not fit "
                              f"{dtype} {tuple(shape)} in a {len(buf)}-byte buffer")
        raw = np.frombuffer(buf, dtype=np_dtype, count=numel, offset=begin).reshape(shape).copy()
        arr = bf16_to_f32(raw) if dtype == "BF16" else raw
        tensors[name] = (dtype, arr, raw) if keep_raw else (dtype, arr)
        spans.append((begin, end, name))
    pos = 0
    for begin, end, name in sorted(spans):
        if begin != pos:
            raise FormatError(f"tensor {name} starts at byte {begin}, expected {pos} "
                              "(overlap or gap in the data buffer)")
        pos = end
    if pos != len(buf):
        raise FormatError(f"{len(buf) - pos} bytes after the last tensor")
    return tensors, metadata


def torch_check(tensors):
    try:
        import torch
    except Exception as e:  # missing, or broken install
        return f"absent ({type(e).__name__}: {e})"
    for name, (dtype, arr, raw) in tensors.items():
        if dtype == "BF16":
            t = torch.from_numpy(raw.view(np.int16)).view(torch.bfloat16).float()
        elif dtype in ("U16", "U32"):  # no unsigned torch dtypes wider than 8 bits in older torch
            t = torch.from_numpy(arr.astype(np.int64))
        elif dtype == "U64":
            if arr.size and arr.max() >= 2**63:
                continue
            t = torch.from_numpy(arr.astype(np.int64))
        else:
            t = torch.from_numpy(arr)
        if tuple(t.shape) != arr.shape:
            raise FormatError(f"torch: tensor {name} has shape {tuple(t.shape)}, numpy {arr.shape}")
        back = t.numpy()
        if not np.array_equal(back.astype(np.float64) if back.dtype != np.bool_ else back,
                              arr.astype(np.float64) if arr.dtype != np.bool_ else arr,
                              equal_nan=back.dtype.kind == "f"):
            raise FormatError(f"torch: tensor {name} ({dtype}) reads back different values")
    return f"ok (torch {torch.__version__})"


def json_values(arr):
    vals = arr.ravel().tolist()
    if arr.dtype.kind == "f":
        vals = [v if math.isfinite(v) else str(v) for v in vals]
    return vals


def main(argv):
    if len(argv) != 2:
        print("usage: safetensors_read.py FILE", file=sys.stderr)
        return 2
    path = argv[1]
    try:
        tensors, metadata = load(path, keep_raw=True)
        torch_status = torch_check(tensors)
    except (OSError, ValueError, KeyError, TypeError, FormatError) as e:
        print(f"safetensors_read.py: {path}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    with open(path, "rb") as f:
        (header_len,) = struct.unpack("<Q", f.read(8))
    out = {
        "header_len": header_len,
        "metadata": metadata,
        "tensors": [{"name": name, "dtype": dtype, "shape": list(arr.shape),
                     "values": json_values(arr)}
                    for name, (dtype, arr, _) in tensors.items()],
        "torch": torch_status,
    }
    json.dump(out, sys.stdout, ensure_ascii=False)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
