#!/usr/bin/env python3
"""Damages or ages a checkpoint file for lcc-run's integrity tests (standard library only).

  checkpoint_bytes.py flip FILE N        flips the lowest bit of the N-th byte from the end
                                         (the end of the tensor data, after the header)
  checkpoint_bytes.py strip-sums FILE    rewrites FILE without its lcc.crc32c* metadata, as
                                         an lcc before checksums wrote it
"""
import json
import struct
import sys


def main():
    cmd, path = sys.argv[1], sys.argv[2]
    data = bytearray(open(path, "rb").read())
    if cmd == "flip":
        data[-int(sys.argv[3])] ^= 1
    elif cmd == "strip-sums":
        (n,) = struct.unpack("<Q", data[:8])
        header = json.loads(data[8:8 + n])
        meta = header.get("__metadata__", {})
        header["__metadata__"] = {k: v for k, v in meta.items() if not k.startswith("lcc.crc32c")}
        text = json.dumps(header, separators=(",", ":")).encode()
        text += b" " * (-len(text) % 8)
        data = struct.pack("<Q", len(text)) + text + data[8 + n:]
    else:
        sys.exit("unknown command " + cmd)
    open(path, "wb").write(data)


if __name__ == "__main__":
    main()
