#!/usr/bin/env python3
"""The planner (lcc --shard=auto) on this machine, against an exhaustive sweep.

The small GPT (vocab 256, ctx 128, dim 128, 4 heads, 4 layers; 8 sequences of 128 tokens per
step) on 2 CPU ranks, with a --mem cap below what the unconstrained best needs. --mem bounds
the process: the compiled plan plus the `cpu` preset's runtime_bytes (RUNTIME below, what
lcc-run holds outside its plan). Every
configuration the planner considers (tp, pp, dp x ZeRO stage, micro-batch, schedule,
recomputation, sequence parallelism) is compiled with its explicit flags; those whose compiled
plan fits the cap are run, round-robin over --repeats (the machine's slow phases hit every row
alike), ms/step the median. Prints every fitting configuration's predicted and measured
ms/step, the planner's choice against the best measured, and the Spearman rank correlation of
predicted and measured times; and checks that the planner's train.bin runs within the cap:
its plan plus RUNTIME, and its measured peak RSS.

    python3 benchmarks/planner_sweep.py [--repeats 3] [--steps 6] [--mem 47MB]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_pipeline import lcc_rows  # noqa: E402
from cpu_train_step import ROOT  # noqa: E402

SETS = "vocab=256,dim=128,heads=4,layers=4,batch=8,seq=128,ctx=128"
BATCH = 8
# compiler/package/CostModel.cpp's cpu preset: lcc-run's peak RSS less its plan.
RUNTIME = 17.4e6


def planner(lcc, mem, out):
    """The planner's full ranked table [(description, predicted s)] and its chosen flags."""
    text = subprocess.run([lcc, os.path.join(ROOT, "examples/gpt-tiny.lcc"), "--quiet",
                           f"--set={SETS}", "--shard=auto", "--world=2",
                           f"--global-batch={BATCH}", f"--mem={mem}", "--plan-rows=10000",
                           "-o", out], capture_output=True, text=True, check=True).stdout
    rows = [(m.group(1).strip(), float(m.group(2)))
            for m in re.finditer(r"^ *[0-9]+  (.+?) +([0-9.e+-]+) +[0-9.e+-]+ +[0-9.]+%", text,
                                 re.M)]
    chosen = re.search(r"^compiling plan ([0-9]+): (.*)$", text, re.M)
    planned = re.search(r"planned in ([0-9.]+) s", text).group(1)
    return text, rows, int(chosen.group(1)), chosen.group(2).split(), planned


def flags_of(desc):
    """lcc flags of a plan's description ("tp1 pp2 dp1 b2 M4 zb-h1 full")."""
    words = desc.split()
    tp, pp, dp = (int(w[2:]) for w in words[:3])
    flags = [f"--tp={tp}", f"--pp={pp}", "--world=2"]
    rest = words[3:]
    shard = "none"
    if rest[0] in ("dp", "zero1", "zero2", "zero3"):
        shard = rest.pop(0)
    flags.append(f"--shard={shard}")
    b, m = int(rest.pop(0)[1:]), int(rest.pop(0)[1:])
    flags.append(f"--set=batch={b}")
    if pp > 1:
        kind = rest.pop(0)
        v = re.match(r"interleaved\(V=([0-9]+)\)", kind)
        flags += [f"--microbatches={m}",
                  f"--pp-schedule={'interleaved' if v else kind}"] + (
                      [f"--virtual={v.group(1)}"] if v else [])
    else:
        flags.append(f"--accum={m}")
    recompute = "none"
    if rest and rest[0] in ("selective", "full"):
        recompute = rest.pop(0)
    flags.append(f"--recompute={recompute}")
    if rest and rest[0] == "sp":
        flags.append("--sequence-parallel")
    return flags


def compiled_plan(lcc, flags, tmp):
    out = subprocess.run([lcc, os.path.join(ROOT, "examples/gpt-tiny.lcc"), "--quiet",
                          f"--set={SETS}", "--plan", "-o", os.path.join(tmp, "p.bin")] + flags,
                         capture_output=True, text=True)
    totals = [int(t.replace(",", "")) for t in re.findall(r"^  total +([0-9,]+) B", out.stdout,
                                                           re.M)]
    return max(totals) if out.returncode == 0 and totals else None


def spearman(xs, ys):
    def ranks(v):
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2
            i = j + 1
        return r
    rx, ry = ranks(xs), ranks(ys)
    n = len(xs)
    mx, my = sum(rx) / n, sum(ry) / n
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sx = sum((a - mx) ** 2 for a in rx) ** 0.5
    sy = sum((b - my) ** 2 for b in ry) ** 0.5
    return cov / (sx * sy)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--mem", default="47MB")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--skip", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    lcc = os.path.join(args.build, "bin", "lcc")
    cap = float(args.mem[:-2]) * 1e6
    with tempfile.TemporaryDirectory() as tmp:
        auto = os.path.join(tmp, "auto.bin")
        text, rows, chosen, chosen_flags, planned = planner(lcc, args.mem, auto)
        print(f"planner: {len(rows)} configurations, planned in {planned} s; chose plan {chosen}: "
              f"{' '.join(chosen_flags)}")
        # Each configuration compiled with explicit flags; the ones within the cap are run.
        sweep = []
        for desc, predicted in rows:
            flags = flags_of(desc)
            plan = compiled_plan(lcc, flags, tmp)
            if plan is not None and plan + RUNTIME <= cap:
                sweep.append((desc, predicted, flags, plan))
        print(f"{len(sweep)} of {len(rows)} configurations compile within {args.mem} "
              f"({(cap - RUNTIME) / 1e6:.2f} MB of plan)")
    model = os.path.join(ROOT, "examples/gpt-tiny.lcc")
    configs = [(desc, flags, 2, None) for desc, _, flags, _ in sweep]
    configs.append(("lcc --shard=auto", ["--shard=auto", "--world=2", f"--global-batch={BATCH}",
                                         f"--mem={args.mem}"], 2, None))
    measured = lcc_rows(args, model, SETS, configs)
    best = min(sweep, key=lambda s: measured[s[0]][0])
    auto_ms, auto_plan, auto_rss = measured["lcc --shard=auto"]
    print(f"| configuration | predicted ms/step | measured ms/step | plan (MB) |\n|---|---|---|---|")
    for desc, predicted, _, plan in sorted(sweep, key=lambda s: measured[s[0]][0]):
        print(f"| {desc} | {1e3 * predicted:.1f} | {measured[desc][0]:.1f} | {plan / 1e6:.2f} |")
    rho = spearman([s[1] for s in sweep], [measured[s[0]][0] for s in sweep])
    print(f"planner's choice: {auto_ms:.1f} ms/step measured, best of the sweep {best[0]}: "
          f"{measured[best[0]][0]:.1f} ms/step: ratio {auto_ms / measured[best[0]][0]:.3f}")
    plan_mb, rss_mb = max(auto_plan) / 1e6, auto_rss / 1e6
    print(f"planner's train.bin: plan {plan_mb:.2f} MB per rank as lcc-run allocates it, "
          f"+ {RUNTIME / 1e6:.2f} MB runtime = {plan_mb + RUNTIME / 1e6:.2f} MB; peak RSS "
          f"{rss_mb:.1f} MB (runtime measured {rss_mb - plan_mb:.1f} MB); cap {args.mem}: "
          f"{'within' if rss_mb * 1e6 <= cap and plan_mb * 1e6 + RUNTIME <= cap else 'OVER'}")
    print(f"Spearman rank correlation, predicted vs measured ms/step over {len(sweep)} "
          f"configurations: {rho:.3f}")


if __name__ == "__main__":
    sys.exit(main())
