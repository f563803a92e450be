#!/usr/bin/env python3
"""Copies a Hugging Face model directory with its f32 weights rounded to bf16 (round to
nearest even), twice: once stored as BF16, once as the same values stored as F32. Used by
lcc-run-hf.test: lcc-run --init-from must read both to the same parameters.

  half_checkpoint.py SRC_DIR BF16_DIR F32_DIR      (no third-party modules)
"""
import json
import os
import shutil
import struct
import sys


def read(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack_from("<Q", data, 0)
    header = json.loads(data[8:8 + n])
    return header, data[8 + n:]


def write(path, tensors, metadata):
    header, body = {"__metadata__": metadata}, b""
    for name in sorted(tensors):
        dtype, shape, raw = tensors[name]
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(body), len(body) + len(raw)]}
        body += raw
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + body)


def main(src, bf16_dir, f32_dir):
    header, body = read(os.path.join(src, "model.safetensors"))
    as_bf16, as_f32 = {}, {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        words = struct.unpack(f"<{(end - begin) // 4}I", body[begin:end])
        # Round to nearest even on the dropped 16 bits (finite weights only here).
        halves = [((w + 0x7FFF + ((w >> 16) & 1)) >> 16) & 0xFFFF for w in words]
        as_bf16[name] = ("BF16", entry["shape"], struct.pack(f"<{len(halves)}H", *halves))
        as_f32[name] = ("F32", entry["shape"],
                        struct.pack(f"<{len(halves)}I", *[h << 16 for h in halves]))
    for out, tensors in ((bf16_dir, as_bf16), (f32_dir, as_f32)):
        os.makedirs(out, exist_ok=True)
        shutil.copy(os.path.join(src, "config.json"), out)
        write(os.path.join(out, "model.safetensors"), tensors, header.get("__metadata__", {}))
    print(f"{len(as_bf16)} tensors rounded to bf16")


if __name__ == "__main__":
    main(*sys.argv[1:4])
