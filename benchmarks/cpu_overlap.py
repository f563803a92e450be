#!/usr/bin/env python3
"""What overlapping collectives with computation buys (lcc-overlap-collectives, lcc --overlap).

For each sharding mode, one train.bin with synchronous collectives (--overlap=0) and one with the
default (2 in flight), trained on 2 CPU ranks (Gloo on loopback) in the same run, each at the
emulated network latencies given: LCC_DIST_LATENCY_MS makes every collective first wait that long
(runtime/dist/Collectives.cpp), as on a network with that latency. Loopback has next to none, and
on this 2-core machine the ranks' compute already fills the cores, so latency 0 shows the cost of
the communication thread, and a latency shows what overlap hides on a real network.

Prints ms/step (median of --repeats runs) and sync / overlap. Losses must be bitwise equal (the
schedule changes when collectives run, not what they compute): the script fails if not.

Usage: python3 benchmarks/cpu_overlap.py [--config small] [--modes dp,zero2,zero3]
                                         [--latency 0,10] [--steps 15] [--repeats 3]
                                         [--lcc-flags=--bucket-mb=0.5]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_distributed import lcc_plan, lcc_run  # noqa: E402
from cpu_train_step import CONFIGS, ROOT  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="small", choices=sorted(CONFIGS))
    ap.add_argument("--modes", default="dp,zero2,zero3")
    ap.add_argument("--latency", default="0,10", help="emulated ms per collective, a list")
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--steps", type=int, default=15)
    ap.add_argument("--skip", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--lcc-flags", default="",
                    help="more lcc options, space-separated (e.g. --bucket-mb=0.5)")
    args = ap.parse_args()
    extra = args.lcc_flags.split()
    for var in ("LCC_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        os.environ[var] = "1"
    model_file, cfg = CONFIGS[args.config]
    model = os.path.join(ROOT, "examples", model_file)
    sets = ",".join(f"{k}={v}" for k, v in cfg.items() if k != "vocab")
    latencies = [float(x) for x in args.latency.split(",")]
    print(f"{args.config} on {args.world} ranks x 1 thread, Gloo on loopback; {args.steps} "
          f"measured steps after {args.skip}, median of {args.repeats}; lcc {' '.join(extra)}",
          flush=True)
    rows = []
    for mode in args.modes.split(","):
        _, _, coll = lcc_plan(args.build, model, sets, mode, args.world, extra)
        for latency in latencies:
            env = dict(os.environ, LCC_DIST_LATENCY_MS=str(latency))
            ms, loss = {}, {}
            for label, depth in (("sync", 0), ("overlap", 2)):
                res, _ = lcc_run(args.build, model, sets, mode, args.world, args.steps,
                                 args.skip, args.repeats, flags=[f"--overlap={depth}"] + extra,
                                 env=env)
                ms[label], loss[label] = res[1][0], res[1][3]
                print(f"  {mode} latency {latency:g} ms: {label} {ms[label]:.1f} ms/step",
                      flush=True)
            if loss["sync"] != loss["overlap"]:
                sys.exit(f"{mode}: losses differ: sync {loss['sync']!r}, overlap "
                         f"{loss['overlap']!r}")
            rows.append((mode, coll, latency, ms["sync"], ms["overlap"]))
    print()
    print(f"{'mode':6} {'coll':>4} {'latency':>8} {'sync ms':>8} {'overlap ms':>10} "
          f"{'sync/overlap':>12}")
    for mode, coll, latency, sync, over in rows:
        print(f"{mode:6} {coll:4} {latency:6g} ms {sync:8.1f} {over:10.1f} {sync / over:11.2f}x")


if __name__ == "__main__":
    main()
