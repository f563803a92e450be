#!/usr/bin/env python3
"""A randomized fault campaign over lcc-run's parallel modes (docs/reliability.md).

Each run trains a small GPT (examples/gpt-tiny.lcc, 4 layers) on CPU ranks in one mode (dp,
ZeRO-1/2/3, tp, pp and combinations) with checkpoints every 2 steps and injects one fault at a
random rank and step:

  kill   SIGKILL (LCC_RUN_KILL=R:S): the survivors must exit 4 within --timeout with a message
         naming a failed rank, the launcher must name the dead one;
  stop   SIGSTOP (R:S:stop): alive but silent; the same, and the launcher kills it;
  slow   every message delayed (LCC_DIST_LATENCY_MS): the run must finish, its losses bitwise
         those of the run without delay;
  term   SIGTERM to one rank (R:S:term, a preemption): every rank stops at one step with a
         checkpoint, exit 0.

After every run the newest checkpoint (if any) must load and verify (checksums, every rank's
file) in a one-process run, and lie at or after the last save before the fault: "data lost"
counts runs where it does not. A run that outlives 3 x --timeout + 60 s is a hang (killed).

  python3 benchmarks/fault_campaign.py [--runs 200] [--seed 1] [--build build] [--timeout 8]

Prints one table row per (mode, fault) and the totals; exits 1 if any run broke a rule.
"""
import argparse
import collections
import csv
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "data", "kjv-genesis-exodus.txt")
MODEL = os.path.join(ROOT, "examples", "gpt-tiny.lcc")

# name -> (lcc flags, world size)
MODES = {
    "dp": (["--set", "batch=2", "--shard=dp", "--world=2"], 2),
    "zero1": (["--set", "batch=2", "--shard=zero1", "--world=2"], 2),
    "zero2": (["--set", "batch=2", "--shard=zero2", "--world=2"], 2),
    "zero3": (["--set", "batch=1", "--shard=zero3", "--world=4"], 4),
    "tp": (["--tp=2"], 2),
    "pp": (["--pp=2", "--microbatches=4"], 2),
    "dp x tp": (["--set", "batch=2", "--tp=2", "--shard=dp", "--world=4"], 4),
    "zero3 x tp": (["--set", "batch=2", "--tp=2", "--shard=zero3", "--world=4"], 4),
    "pp x tp": (["--pp=2", "--microbatches=4", "--tp=2"], 4),
    "pp x zero1": (["--set", "batch=2", "--pp=2", "--virtual=2", "--microbatches=4",
                    "--shard=zero1", "--world=4"], 4),
}
FAULTS = ["kill", "stop", "slow", "term"]
STEPS, SAVE_EVERY = 8, 2


def losses(path):
    with open(path) as f:
        return [(r["step"], r["loss"], r["grad_norm"]) for r in csv.DictReader(f)]


def run(cmd, env, limit):
    """(exit code or None on a hang, stdout+stderr, seconds)."""
    t0 = time.time()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=limit)
        return p.returncode, out, time.time() - t0
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        return None, out, time.time() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--timeout", type=float, default=8)
    ap.add_argument("--latency-ms", type=int, default=5)
    args = ap.parse_args()
    lcc = os.path.join(args.build, "bin", "lcc")
    lcc_run = os.path.join(args.build, "bin", "lcc-run")
    rng = random.Random(args.seed)
    work = tempfile.mkdtemp(prefix="lcc-faults-")
    env0 = dict(os.environ, LCC_NUM_THREADS="1")
    for k in ("LCC_RUN_KILL", "LCC_DIST_LATENCY_MS"):
        env0.pop(k, None)

    one = os.path.join(work, "one.bin")
    subprocess.run([lcc, MODEL, "--quiet", "--set", "layers=4", "-o", one], check=True)
    bins, reference = {}, {}
    for name, (flags, world) in MODES.items():
        b = os.path.join(work, name.replace(" ", "") + ".bin")
        subprocess.run([lcc, MODEL, "--quiet", "--set", "layers=4"] + flags + ["-o", b],
                       check=True)
        bins[name] = b
        ref = os.path.join(work, name.replace(" ", "") + "-ref.csv")
        subprocess.run([lcc_run, "-n", str(world), b, "--data", DATA, "--steps", str(STEPS),
                        "--quiet", "--csv", ref], check=True, env=env0)
        reference[name] = losses(ref)

    stats = collections.defaultdict(collections.Counter)
    problems = []
    for i in range(args.runs):
        mode = rng.choice(list(MODES))
        fault = rng.choice(FAULTS)
        world = MODES[mode][1]
        rank, step = rng.randrange(world), rng.randint(2, STEPS - 1)
        d = os.path.join(work, f"run{i}")
        os.makedirs(d)
        env = dict(env0)
        if fault == "slow":
            env["LCC_DIST_LATENCY_MS"] = str(args.latency_ms)
        else:
            env["LCC_RUN_KILL"] = f"{rank}:{step}" + {"kill": "", "stop": ":stop", "term": ":term"}[fault]
        cmd = [lcc_run, "-n", str(world), bins[mode], "--data", DATA, "--steps", str(STEPS),
               "--quiet", "--save", os.path.join(d, "ck"), "--save-every", str(SAVE_EVERY),
               "--keep", "10", "--timeout", str(args.timeout), "--log-dir", os.path.join(d, "logs"),
               "--csv", os.path.join(d, "m.csv")]
        code, out, took = run(cmd, env, 3 * args.timeout + 60)
        logs = out
        for f in sorted(os.listdir(os.path.join(d, "logs"))) if os.path.isdir(
                os.path.join(d, "logs")) else []:
            logs += open(os.path.join(d, "logs", f)).read()
        s = stats[(mode, fault)]
        s["runs"] += 1
        bad = []
        if code is None:
            s["hangs"] += 1
            bad.append("hang")
        elif fault in ("kill", "stop"):
            if code == 0:
                bad.append("exit 0 after a dead rank")
            how = "killed by signal 9" if fault == "kill" else "stopped by signal 19"
            if f"rank {rank} {'was ' + how}" not in logs:
                bad.append("the launcher did not name the failed rank")
            survivors = re.findall(r"lcc-run: rank (\d+): .*failed: (.*)", logs)
            if any(f"rank {rank}" in cause for _, cause in survivors):
                s["survivor named it"] += 1
            if took > args.timeout * 2 + 30:
                bad.append(f"took {took:.0f} s")
        elif fault == "slow":
            if code != 0:
                bad.append(f"exit {code}")
            elif losses(os.path.join(d, "m.csv")) != reference[mode]:
                bad.append("losses differ from the run without latency")
        elif fault == "term":
            if code != 0 or "stopped by SIGTERM" not in logs:
                bad.append(f"exit {code} after SIGTERM")
        # The newest checkpoint loads, verified, and nothing saved before the fault is lost.
        ck = os.path.join(d, "ck")
        latest = os.path.join(ck, "latest")
        expect = 0 if fault == "slow" else (step - 1) // SAVE_EVERY * SAVE_EVERY
        if fault in ("slow", "term"):
            expect = STEPS if fault == "slow" else step
        if os.path.exists(latest):
            name = open(latest).read().strip()
            saved = int(re.search(r"step-(\d+)", name).group(1))
            rc, o, _ = run([lcc_run, one, "--data", DATA, "--resume", ck, "--steps", str(saved),
                            "--quiet"], env0, 120)
            if rc != 0:
                bad.append("the checkpoint does not load: " + o.strip().splitlines()[-1])
            else:
                s["checkpoints verified"] += 1
        else:
            saved = 0
        if saved < expect:
            s["data lost"] += 1
            bad.append(f"newest checkpoint is step {saved}, expected >= {expect}")
        if bad:
            s["broken"] += 1
            problems.append(f"run {i} ({mode}, {fault} rank {rank} step {step}): " + "; ".join(bad))
        s["seconds"] += took
        print(f"run {i:3d}: {mode:10s} {fault:4s} rank {rank} step {step}: exit {code}, "
              f"{took:5.1f} s{'  BROKEN: ' + '; '.join(bad) if bad else ''}", flush=True)

    print()
    print("| mode | fault | runs | hangs | data lost | checkpoints verified | "
          "survivors named the rank | broken | mean s |")
    print("|---|---|---|---|---|---|---|---|---|")
    total = collections.Counter()
    for (mode, fault), s in sorted(stats.items()):
        total.update(s)
        named = str(s["survivor named it"]) if fault in ("kill", "stop") else "-"
        print(f"| {mode} | {fault} | {s['runs']} | {s['hangs']} | {s['data lost']} | "
              f"{s['checkpoints verified']} | {named} | {s['broken']} | "
              f"{s['seconds'] / s['runs']:.1f} |")
    print(f"| all | all | {total['runs']} | {total['hangs']} | {total['data lost']} | "
          f"{total['checkpoints verified']} | {total['survivor named it']} | {total['broken']} | "
          f"{total['seconds'] / max(total['runs'], 1):.1f} |")
    for p in problems:
        print("BROKEN:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
