#!/usr/bin/env python3
"""The planner (lcc --shard=auto) against Megatron-LM's Table 1.

Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU
Clusters Using Megatron-LM" (arXiv 2104.04473), Table 1: GPT models on A100
80GB (Selene, 8 per node, NVLink 3 + 8 x 200 Gb/s HDR InfiniBand), mixed
precision, sequence 2048, vocabulary 51,200, full activation recomputation.
The rows were checked against three sources: the paper's text, the
Megatron-LM README of April 2021 (commit 50a4b5f, images/cases_april2021.png)
and examples/sc21/run_table_1.sh (which also gives the micro-batch sizes,
not stated in the paper). TFLOP/s per GPU is the paper's Eq. 3:
F = 96 B s l h^2 (1 + s / (6 h) + V / (16 l h)) per step, over GPUs x time.

For each row this asks lcc for the published (t, p, d, batch) with full
recomputation and bf16 on --cluster=a100-node (the planner picks the
micro-batch and schedule), and for its own best plan with those fixed only by
the world and batch. Prints the predictions, their errors and the planning
times; then plans GPT-3 175B for 1024 GPUs from scratch.

    python3 benchmarks/planner_megatron.py [--lcc build/bin/lcc] [--rows 1,2,3]
"""
import argparse
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# params (B), heads, hidden, layers, t, p, GPUs, batch, published TFLOP/s per GPU
ROWS = [
    (1.7, 24, 2304, 24, 1, 1, 32, 512, 137),
    (3.6, 32, 3072, 30, 2, 1, 64, 512, 138),
    (7.5, 32, 4096, 36, 4, 1, 128, 512, 142),
    (18.4, 48, 6144, 40, 8, 1, 256, 1024, 135),
    (39.1, 64, 8192, 48, 8, 2, 512, 1536, 138),
    (76.1, 80, 10240, 60, 8, 4, 1024, 1792, 140),
    (145.6, 96, 12288, 80, 8, 8, 1536, 2304, 148),
    (310.1, 128, 16384, 96, 8, 16, 1920, 2160, 155),
    (529.6, 128, 20480, 105, 8, 35, 2520, 2520, 163),
    (1008.0, 160, 25600, 128, 8, 64, 3072, 3072, 163),
]
SEQ, VOCAB = 2048, 51200


def megatron_flops(batch, layers, hidden):
    return 96 * batch * SEQ * layers * hidden**2 * (
        1 + SEQ / (6 * hidden) + VOCAB / (16 * layers * hidden))


def plan(lcc, heads, hidden, layers, world, batch, fixed, timeout):
    cmd = [lcc, os.path.join(ROOT, "examples/gpt-7.5b.lcc"), "--quiet", "--plan",
           "--set", f"dim={hidden},heads={heads},layers={layers},vocab={VOCAB},seq={SEQ},ctx={SEQ}",
           "--shard=auto", f"--world={world}", f"--global-batch={batch}",
           "--cluster=a100-node", "--precision=bf16"] + fixed
    start = time.time()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout).stdout
    except subprocess.TimeoutExpired:
        return None, None, time.time() - start, None
    seconds = time.time() - start
    m = re.search(r"^\s+1  (.+?)\s+([0-9.e+-]+)\s+[0-9.e+-]+\s+[0-9.]+%", out, re.M)
    planned = re.search(r"planned in ([0-9.]+) s", out)
    if not m:
        return None, None, seconds, None
    return m.group(1).strip(), float(m.group(2)), seconds, float(planned.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lcc", default=os.path.join(ROOT, "build/bin/lcc"))
    ap.add_argument("--rows", default=",".join(str(i + 1) for i in range(len(ROWS))))
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--no-search", action="store_true", help="only the published configurations")
    args = ap.parse_args()
    print(f"{'row':>3} {'model':>7} {'t':>2} {'p':>3} {'d':>4} {'B':>5} {'paper':>6} "
          f"{'lcc':>6} {'error':>7}  {'plan for the published t, p, d':<44} "
          f"{'best':>6}  {'lcc best plan':<44} {'s':>5}")
    errors = []
    for i in [int(r) - 1 for r in args.rows.split(",")]:
        size, heads, hidden, layers, t, p, gpus, batch, paper = ROWS[i]
        flops = megatron_flops(batch, layers, hidden)
        desc, step, _, planned = plan(args.lcc, heads, hidden, layers, gpus, batch,
                                      [f"--tp={t}", f"--pp={p}", "--recompute=full", "--sequence-parallel=false"], args.timeout)
        if step is None:
            print(f"{i + 1:>3} {size:>6}B  no prediction")
            continue
        tf = flops / (step * gpus) / 1e12
        err = (tf - paper) / paper
        errors.append(abs(err))
        best, bdesc, bplanned = "-", "-", 0.0
        if not args.no_search:
            bdesc, bstep, _, bplanned = plan(args.lcc, heads, hidden, layers, gpus, batch, [],
                                             args.timeout)
            best = f"{flops / (bstep * gpus) / 1e12:6.1f}" if bstep else "-"
        print(f"{i + 1:>3} {size:>6}B {t:>2} {p:>3} {gpus // (t * p):>4} {batch:>5} {paper:>6} "
              f"{tf:6.1f} {100 * err:+6.1f}%  {desc:<44} {best:>6}  {bdesc or '-':<44} "
              f"{planned + (bplanned or 0):5.1f}", flush=True)
    within = sum(e <= 0.15 for e in errors)
    print(f"{within} of {len(errors)} rows within 15% of the published TFLOP/s per GPU")
    desc, step, seconds, planned = plan(args.lcc, 96, 12288, 96, 1024, 1536, [], args.timeout)
    print(f"GPT-3 175B on 1024 A100s, batch 1536: {desc}, step {step} s predicted; planned in "
          f"{planned} s, lcc ran {seconds:.1f} s")


if __name__ == "__main__":
    sys.exit(main())
