#!/usr/bin/env python3
"""The project's own reader of lcc-run's TensorBoard event files (no third-party
modules: CI has no tensorboard package; test/fixtures/tensorboard/ checks the
same files with TensorBoard's own reader).

  check_tensorboard.py DIR CSV    every record of every event file in DIR has
                                  valid framing and CRC-32Cs; after TensorBoard's
                                  purge rule (a SessionLog START at step s drops
                                  the earlier files' points at steps >= s), the
                                  scalars are exactly the CSV's values as float32,
                                  step for step: train/loss, train/lr,
                                  train/grad_norm, val/loss (train/tokens_per_s, a
                                  double in the CSV, to 1e-6)

The record framing and the masked CRC are described in tools/lcc-run/TensorBoard.h.
"""
import csv
import math
import os
import struct
import sys

TABLE = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    TABLE.append(c)


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked(c):
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def records(path):
    data = open(path, "rb").read()
    at, out = 0, []
    while at < len(data):
        if len(data) - at < 12:
            raise ValueError(f"{path}: a record cut short at byte {at}")
        (length,) = struct.unpack_from("<Q", data, at)
        (lcrc,) = struct.unpack_from("<I", data, at + 8)
        if lcrc != masked(crc32c(data[at:at + 8])):
            raise ValueError(f"{path}: record {len(out)}: length CRC mismatch")
        payload = data[at + 12:at + 12 + length]
        if len(payload) != length or len(data) < at + 16 + length:
            raise ValueError(f"{path}: a record cut short at byte {at}")
        (dcrc,) = struct.unpack_from("<I", data, at + 12 + length)
        if dcrc != masked(crc32c(payload)):
            raise ValueError(f"{path}: record {len(out)}: data CRC mismatch")
        out.append(payload)
        at += 16 + length
    return out


def fields(buf):
    """(field number, wire type, value) of a protobuf message."""
    at = 0

    def varint():
        nonlocal at
        shift = value = 0
        while True:
            b = buf[at]
            at += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return value

    while at < len(buf):
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            yield number, wire, varint()
        elif wire == 1:
            yield number, wire, buf[at:at + 8]
            at += 8
        elif wire == 2:
            n = varint()
            yield number, wire, buf[at:at + n]
            at += n
        elif wire == 5:
            yield number, wire, buf[at:at + 4]
            at += 4
        else:
            raise ValueError(f"wire type {wire}")


def event(payload):
    e = {"step": 0, "scalars": {}}
    for number, _, value in fields(payload):
        if number == 1:
            e["wall_time"] = struct.unpack("<d", value)[0]
        elif number == 2:
            e["step"] = value
        elif number == 3:
            e["file_version"] = value.decode()
        elif number == 5:
            for n, _, v in fields(value):
                if n != 1:
                    continue
                tag, x = None, None
                for vn, _, vv in fields(v):
                    if vn == 1:
                        tag = vv.decode()
                    elif vn == 2:
                        x = struct.unpack("<f", vv)[0]
                e["scalars"][tag] = x
        elif number == 6:
            e["session_log"] = dict((n, v) for n, _, v in fields(value))
    return e


def f32(text):
    return struct.unpack("<f", struct.pack("<f", float(text)))[0]


def same(a, b, tag):
    # The CSV prints the step's f32 values exactly; tokens/s is a double there
    # (9 digits), which rounded to f32 may land one f32 step off TensorBoard's.
    if tag == "train/tokens_per_s":
        return abs(a - b) <= 1e-6 * abs(b)
    return a == b or (math.isnan(a) and math.isnan(b))


def main(argv):
    directory, csv_path = argv[1], argv[2]
    files = []
    for name in os.listdir(directory):
        if "tfevents" in name:
            events = [event(r) for r in records(os.path.join(directory, name))]
            if not events or events[0].get("file_version") != "brain.Event:2":
                print(f"FAIL: {name}: the first record is not the file version")
                return 1
            files.append((events[0]["wall_time"], name, events))
    files.sort()
    points = {}  # step -> {tag: value}
    starts = 0
    for _, name, events in files:
        for e in events[1:]:
            if "session_log" in e:
                if e["session_log"].get(1) == 1:  # START: TensorBoard's purge
                    starts += 1
                    points = {s: p for s, p in points.items() if s < e["step"]}
                continue
            points.setdefault(e["step"], {}).update(e["scalars"])
    with open(csv_path) as f:
        rows = {int(r["step"]): r for r in csv.DictReader(f)}
    if sorted(points) != sorted(rows):
        print(f"FAIL: steps {sorted(points)} in the event files, {sorted(rows)} in the CSV")
        return 1
    columns = {"train/loss": "loss", "train/lr": "lr", "train/grad_norm": "grad_norm",
               "train/tokens_per_s": "tokens_per_s", "val/loss": "val_loss"}
    evals = 0
    for step, row in sorted(rows.items()):
        want = {tag: f32(row[col]) for tag, col in columns.items() if row[col] != ""}
        got = {t: v for t, v in points[step].items() if t != "train/loss_scale"}
        if sorted(want) != sorted(got) or not all(same(want[t], got[t], t) for t in want):
            print(f"FAIL: step {step}: {got} in the event files, {want} in the CSV")
            return 1
        evals += "val/loss" in got
    print(f"tensorboard: {len(files)} files, {len(rows)} steps, {evals} with val/loss, "
          f"{starts} resumed, all CRCs valid, equal to the CSV")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
