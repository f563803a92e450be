#!/usr/bin/env python3
"""Checks of lcc-run's outputs, used by lcc-run.test (no third-party modules).

  check_training.py falls CSV CORPUS      the loss fell below the corpus' unigram entropy
                                          (CORPUS: bytes, or uint16 symbols if it ends in .u16)
  check_training.py same CSV_A CSV_B FROM TO   losses of steps FROM..TO are identical
  check_training.py same-tensors A.safetensors B.safetensors PREFIX
                                          every tensor of A equals B's PREFIX+name, bytewise
"""
import array
import collections
import csv
import json
import math
import sys


def rows(path):
    with open(path) as f:
        return {int(r["step"]): r for r in csv.DictReader(f)}


def main(argv):
    if argv[1] == "falls":
        data = open(argv[3], "rb").read()
        symbols = argv[3].endswith(".u16")
        if symbols:
            data = array.array("H", data)
        counts = collections.Counter(data)
        # A model that learned only byte frequencies reaches the unigram
        # entropy; below it (with margin) the model uses context.
        entropy = -sum(c / len(data) * math.log(c / len(data)) for c in counts.values())
        r = rows(argv[2])
        last = r[max(r)]
        first = r[min(r)]
        threshold = entropy - 0.25
        val = float(last["val_loss"])
        print(f"unigram entropy {entropy:.4f} nats, threshold {threshold:.4f}, "
              f"first loss {float(first['loss']):.4f}, final val loss {val:.4f}")
        # The untrained model must start above what it is asked to reach.
        start = entropy + 1.0 if symbols else 5.0
        if not (float(first["loss"]) > start and val < threshold):
            print("FAIL: the loss did not fall below the threshold")
            return 1
        return 0
    if argv[1] == "same":
        a, b = rows(argv[2]), rows(argv[3])
        lo, hi = int(argv[4]), int(argv[5])
        for step in range(lo, hi + 1):
            for key in ("loss", "grad_norm", "lr"):
                if a[step][key] != b[step][key]:
                    print(f"FAIL: step {step} {key}: {a[step][key]} != {b[step][key]}")
                    return 1
        print(f"steps {lo}..{hi}: identical")
        return 0
    if argv[1] == "same-tensors":
        a, b = safetensors(argv[2]), safetensors(argv[3])
        for name, (dtype, shape, data) in a.items():
            other = b.get(argv[4] + name)
            if other != (dtype, shape, data):
                print(f"FAIL: {name} differs from {argv[4] + name}")
                return 1
        print(f"{len(a)} tensors identical")
        return 0
    return 2


def safetensors(path):
    """name -> (dtype, shape, bytes) of a safetensors file."""
    raw = open(path, "rb").read()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        lo, hi = info["data_offsets"]
        out[name] = (info["dtype"], tuple(info["shape"]), raw[8 + n + lo:8 + n + hi])
    return out


if __name__ == "__main__":
    sys.exit(main(sys.argv))
