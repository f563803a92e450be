#!/usr/bin/env python3
"""What memory decisions cost in time on CPU ranks, measured in the same run: recomputation
(--recompute=none|selective|full) on one rank, and sequence parallelism (--tp=2 with and without
--sequence-parallel) on two.

The model is cpu_train_step.py's GPT (pre-LN, tanh-GELU, fp32, AdamW), one thread per rank.
Every binary is compiled first (with --report: the FLOPs lcc-recompute adds per micro-batch),
then each repeat runs every configuration once (round-robin, so the machine's slow phases hit
every row alike); ms/step is the median over --repeats of the mean over --steps after --skip.
Memory: lcc-run's plan (what it allocates) and the peak RSS of the run. lcc only: PyTorch's
activation checkpointing is not measured here yet.

Usage: python3 benchmarks/cpu_recompute.py [--config small] [--repeats 5]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_pipeline import lcc_rows  # noqa: E402
from cpu_train_step import CONFIGS, ROOT  # noqa: E402

ROWS = [("none", ["--recompute=none"], 1), ("selective", ["--recompute=selective"], 1),
        ("full", ["--recompute=full"], 1), ("tp=2", ["--tp=2"], 2),
        ("tp=2 + sequence-parallel", ["--tp=2", "--sequence-parallel"], 2)]


def recomputed_flops(build, model, sets, flags):
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run([os.path.join(build, "bin", "lcc"), model, "--quiet", "--report",
                              f"--set={sets}", "-o", os.path.join(tmp, "x.bin")] + flags,
                             capture_output=True, text=True, check=True).stdout
    m = re.search(r"recomputed +[0-9]+ ops, ([0-9]+) FLOPs", out)
    return int(m.group(1)) if m else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="small", choices=sorted(CONFIGS))
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--skip", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    args = ap.parse_args()
    name, cfg = CONFIGS[args.config]
    model = os.path.join(ROOT, "examples", name)
    sets = ",".join(f"{k}={v}" for k, v in cfg.items() if k != "vocab")
    rows = lcc_rows(args, model, sets, [(n, f, r, None) for n, f, r in ROWS])
    base = {1: rows["none"][0], 2: rows["tp=2"][0]}
    print(f"config {args.config} ({sets}), median of {args.repeats} repeats, ms/step")
    print(f"| {'configuration':<26} | ranks | ms/step | vs baseline | plan per rank (MB) "
          f"| peak RSS (MB) | recomputed GFLOP per step |")
    print("|---|---|---|---|---|---|---|")
    for n, flags, ranks in ROWS:
        ms, plans, rss = rows[n]
        gflop = recomputed_flops(args.build, model, sets, flags) / 1e9
        print(f"| {n:<26} | {ranks} | {ms:7.1f} | {ms / base[ranks]:.3f} | "
              f"{max(plans) / 1e6:.2f} | {rss / 1e6:.0f} | {gflop:.3f} |")


if __name__ == "__main__":
    main()
