#!/usr/bin/env python3
"""Compile time of `lcc MODEL -o train.bin` (a process, wall clock) as models deepen, accumulate
micro-batches and shard, and what compiling repeated layers once and accumulating in a loop cost
at run time (issue 21).

Part 1, compile: GPT-2 124M at 12/24/48/96 layers; --accum=1/8/40; --shard=zero3 --world=2/64;
gpt-7.5b (d 4096, 36 layers); a GPT-3-shaped model (d 12288, 96 heads, 96 layers). Nothing is
run. Each row gives the total and lcc --timing's "MLIR lowering" part, and the ratio the issue
sets a goal for. --unrolled adds rows compiled with --unroll-accum (K copies of the backward, the
old form; slow: GPT-2 with --accum=8 took 329 s); --inline adds the layer rows compiled with
--inline-layers (every layer bufferized where it is used, the old form); --cuda adds the layer
rows and --accum=8 compiled with --target=cuda (sm_90 PTX and cubin through the toolkit's ptxas).

Part 2, step time: the same model with --accum=K compiled as today (layer functions, the
micro-batch loop) and as before (--inline-layers --unroll-accum: every layer inline, K unrolled
copies), trained by lcc-run in the same run, interleaved, median of --repeats; losses must be
bitwise equal (the script fails if not).

Usage: python3 benchmarks/compile_time.py [--part compile,step] [--quick] [--unrolled] [--inline] [--cuda]
                                         [--step-configs tiny,small,gpt2] [--repeats 3]
"""
import argparse
import csv
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_train_step import CONFIGS, CORPUS, ROOT  # noqa: E402

GPT2 = os.path.join(ROOT, "examples", "gpt2-124m.lcc")
GPT7B = os.path.join(ROOT, "examples", "gpt-7.5b.lcc")


def compile_rows(quick, unrolled, inline, cuda):
    """(label, model, flags, goal key) per compile row."""
    layers = [12, 24, 48] if quick else [12, 24, 48, 96]
    accums = [1, 8, 40]
    rows = [(f"GPT-2 124M, {n} layers", GPT2, [f"--set=layers={n}"], ("layers", n))
            for n in layers]
    if inline:
        rows += [(f"GPT-2 124M, {n} layers --inline-layers", GPT2,
                  [f"--set=layers={n}", "--inline-layers"], ("inline", n)) for n in layers]
    if cuda:
        rows += [(f"GPT-2 124M, {n} layers --target=cuda", GPT2,
                  [f"--set=layers={n}", "--target=cuda"], ("cuda", n)) for n in layers]
        rows += [("GPT-2 124M, --accum=8 --target=cuda", GPT2, ["--accum=8", "--target=cuda"],
                  ("cuda-accum", 8))]
    rows += [(f"GPT-2 124M, --accum={k}", GPT2, [f"--accum={k}"], ("accum", k)) for k in accums]
    if unrolled:
        rows += [(f"GPT-2 124M, --accum={k} --unroll-accum", GPT2,
                  [f"--accum={k}", "--unroll-accum"], ("unrolled", k)) for k in (2, 8)]
    rows += [(f"GPT-2 124M, --shard=zero3 --world={w}", GPT2,
              ["--shard=zero3", f"--world={w}"], ("world", w)) for w in (2, 64)]
    if not quick:
        rows += [("gpt-7.5b (d 4096, 36 layers)", GPT7B, [], ("big", "7.5b")),
                 ("GPT-3 shape (d 12288, 96 layers)", GPT7B,
                  ["--set=dim=12288,heads=96,layers=96"], ("big", "gpt3"))]
    return rows


def compile_once(build, model, flags, out):
    t0 = time.time()
    done = subprocess.run([os.path.join(build, "bin", "lcc"), model, "--quiet", "--timing",
                           "-o", out] + flags, capture_output=True, text=True)
    wall = time.time() - t0
    if done.returncode != 0:
        sys.exit(f"lcc {' '.join(flags)} failed:\n{done.stderr}")
    text = done.stdout + done.stderr
    lowering = re.search(r"([0-9.]+) s\s+MLIR lowering", text)
    return wall, float(lowering.group(1)) if lowering else float("nan")


def part_compile(args):
    print(f"Part 1: compile time, `lcc MODEL -o train.bin` as a process (wall); median of "
          f"{args.repeats} rounds over all rows (rows over 60 s: one)", flush=True)
    rows = compile_rows(args.quick, args.unrolled, args.inline, args.cuda)
    walls = [[] for _ in rows]
    lowerings = [[] for _ in rows]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "train.bin")
        for _ in range(args.repeats):
            for i, (label, model, flags, _) in enumerate(rows):
                if walls[i] and walls[i][0] > 60:
                    continue
                wall, lowering = compile_once(args.build, model, flags, out)
                walls[i].append(wall)
                lowerings[i].append(lowering)
    print(f"| model | compile s | MLIR lowering s | ratio |\n|---|---:|---:|---|", flush=True)
    base = {}
    for i, (label, _, _, (kind, key)) in enumerate(rows):
        wall, lowering = statistics.median(walls[i]), statistics.median(lowerings[i])
        ratio = ""
        if kind in ("layers", "inline", "cuda"):
            base.setdefault(kind, wall)
            ratio = f"{wall / base[kind]:.2f}x of 12 layers"
        elif kind == "cuda-accum":
            ratio = f"{wall / base['cuda']:.2f}x of accum=1"
        elif kind in ("accum", "unrolled"):
            base.setdefault("accum", wall)
            ratio = f"{wall / base['accum']:.2f}x of accum=1"
        print(f"| {label} | {wall:.1f} | {lowering:.1f} | {ratio} |", flush=True)


def train(build, binary, steps):
    """tokens/s of one run, and its (loss, grad_norm) per step as lcc-run's CSV writes them."""
    csv_path = binary + ".csv"
    done = subprocess.run([os.path.join(build, "bin", "lcc-run"), binary, "--data", CORPUS,
                           "--val-fraction", "0", "--steps", str(steps), "--csv", csv_path],
                          check=True, capture_output=True, text=True)
    rate = float(re.search(r"\(([0-9.]+) tokens/s\)", done.stdout).group(1))
    with open(csv_path) as f:
        losses = [(r["loss"], r["grad_norm"]) for r in csv.DictReader(f)]
    return rate, losses


def part_step(args):
    print(f"\nPart 2: step time, --accum={args.accum}, as compiled now against the previous "
          f"code (--inline-layers --unroll-accum); lcc-run, interleaved, median of "
          f"{args.repeats}", flush=True)
    print("| model | now tok/s | previous tok/s | now / previous | plan now | plan previous |"
          "\n|---|---:|---:|---:|---:|---:|", flush=True)
    failed = False
    for name in args.step_configs.split(","):
        model_file, cfg = CONFIGS[name]
        sets = ",".join(f"{k}={v}" for k, v in cfg.items() if k != "vocab")
        steps = {"tiny": 100, "small": 10, "gpt2": 2}.get(name, 10)
        with tempfile.TemporaryDirectory() as tmp:
            bins, plans = {}, {}
            for label, flags in (("loop", []),
                                 ("unrolled", ["--unroll-accum", "--inline-layers"])):
                bins[label] = os.path.join(tmp, label + ".bin")
                subprocess.run([os.path.join(args.build, "bin", "lcc"),
                                os.path.join(ROOT, "examples", model_file), "--quiet",
                                f"--set={sets}", f"--accum={args.accum}", "-o", bins[label]]
                               + flags, check=True)
                plan = subprocess.run([os.path.join(args.build, "bin", "lcc-run"), bins[label],
                                       "--data", CORPUS, "--steps", "1"],
                                      check=True, capture_output=True, text=True).stdout
                plans[label] = int(re.search(r"memory: plan ([0-9]+) bytes", plan).group(1))
            rates = {"loop": [], "unrolled": []}
            losses = {}
            for _ in range(args.repeats):
                for label in ("loop", "unrolled"):
                    rate, loss = train(args.build, bins[label], steps)
                    rates[label].append(rate)
                    losses[label] = loss
            if losses["loop"] != losses["unrolled"]:
                print(f"FAIL: {name}: losses differ: {losses['loop'][:3]} vs "
                      f"{losses['unrolled'][:3]}")
                failed = True
            loop, unrolled = statistics.median(rates["loop"]), statistics.median(rates["unrolled"])
            print(f"| {name} | {loop:,.0f} | {unrolled:,.0f} | {loop / unrolled:.3f} | "
                  f"{plans['loop'] / 2**20:.1f} MiB | {plans['unrolled'] / 2**20:.1f} MiB |",
                  flush=True)
    return failed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", default="compile,step")
    ap.add_argument("--quick", action="store_true", help="leave out the slowest compile rows (96 layers, gpt-7.5b, GPT-3)")
    ap.add_argument("--unrolled", action="store_true",
                    help="also compile --accum=2,8 --unroll-accum (slow)")
    ap.add_argument("--inline", action="store_true",
                    help="also compile the layer rows with --inline-layers (slow at 96 layers)")
    ap.add_argument("--cuda", action="store_true",
                    help="add GPT-2 rows compiled with --target=cuda (needs the CUDA toolkit)")
    ap.add_argument("--step-configs", default="tiny,small")
    ap.add_argument("--accum", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    args = ap.parse_args()
    for var in ("LCC_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(var, "2")
    parts = args.part.split(",")
    if "compile" in parts:
        part_compile(args)
    if "step" in parts and part_step(args):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
