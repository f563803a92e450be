#!/usr/bin/env python3
"""Runs one training job twice and checks that the runs are bitwise the same.

  check_reproducible.py LCC_RUN TRAIN.BIN RANKS THREADS OUTDIR -- LCC_RUN_ARGS...

Both runs use RANKS ranks (1: one process) of THREADS threads each, with
--csv and --save into OUTDIR/a and OUTDIR/b. Checked: every logged column but
the timings is identical at every step (loss, lr, gradient norm, validation
loss, printed with 9 significant digits) and every tensor of every rank's
final checkpoint file is identical byte for byte (parameters and optimizer
state). Standard library only.
"""
import csv
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from check_training import safetensors  # noqa: E402


def run(lcc_run, program, ranks, threads, out, extra):
    os.makedirs(out, exist_ok=True)
    cmd = [lcc_run]
    if ranks > 1:
        cmd += ["-n", str(ranks)]
    cmd += [program, "--threads", str(threads), "--quiet", "--csv", os.path.join(out, "m.csv"),
            "--save", os.path.join(out, "ck")] + extra
    subprocess.run(cmd, check=True)
    with open(os.path.join(out, "m.csv")) as f:
        rows = [{k: v for k, v in r.items() if k not in ("tokens_per_s", "elapsed_s")}
                for r in csv.DictReader(f)]
    ck = os.path.join(out, "ck")
    latest = open(os.path.join(ck, "latest")).read().strip()
    path = os.path.join(ck, latest)
    files = sorted(os.path.join(path, f) for f in os.listdir(path)) if os.path.isdir(path) else [path]
    return rows, {os.path.basename(f): safetensors(f) for f in files}


def main():
    split = sys.argv.index("--")
    lcc_run, program, ranks, threads, out = sys.argv[1:split]
    extra = sys.argv[split + 1:]
    a = run(lcc_run, program, int(ranks), int(threads), os.path.join(out, "a"), extra)
    b = run(lcc_run, program, int(ranks), int(threads), os.path.join(out, "b"), extra)
    if not a[0] or a[0] != b[0]:
        for ra, rb in zip(a[0], b[0]):
            if ra != rb:
                print(f"FAIL: step {ra.get('step')}: {ra} vs {rb}")
                return 1
        print("FAIL: the runs logged different steps")
        return 1
    if a[1].keys() != b[1].keys():
        print(f"FAIL: checkpoint files {sorted(a[1])} vs {sorted(b[1])}")
        return 1
    tensors = 0
    for name, ta in a[1].items():
        tb = b[1][name]
        for t in ta:
            if ta[t] != tb.get(t):
                print(f"FAIL: {name}: tensor {t} differs")
                return 1
        tensors += len(ta)
    print(f"reproducible: {len(a[0])} steps, {len(a[1])} checkpoint files, {tensors} tensors "
          "identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())
