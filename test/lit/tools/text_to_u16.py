#!/usr/bin/env python3
"""text_to_u16.py TEXT OUT.u16 [MAX_BYTES]: a 64-symbol token file for small-vocabulary models.

Letters fold to 0..25 (case-insensitive), space is 26, newline 27, every other byte
28 + (byte % 36); written as little-endian uint16, the format lcc-run reads from *.u16."""
import array
import sys


def symbol(b):
    c = chr(b).lower()
    if "a" <= c <= "z":
        return ord(c) - ord("a")
    if c == " ":
        return 26
    if c == "\n":
        return 27
    return 28 + b % 36


text = open(sys.argv[1], "rb").read()
if len(sys.argv) > 3:
    text = text[: int(sys.argv[3])]
out = array.array("H", (symbol(b) for b in text))
if sys.byteorder != "little":
    out.byteswap()
open(sys.argv[2], "wb").write(out.tobytes())
