#!/usr/bin/env python3
"""Data-parallel training throughput on CPU: lcc's sharding modes against PyTorch DDP and FSDP,
measured in the same run.

The model, corpus and optimizer are cpu_train_step.py's (GPT-2 pre-LN, tanh-GELU, tied
embeddings; AdamW lr 6e-4, betas 0.9/0.95, wd 0.1 on matrices, clip 1.0; fp32). The model's
batch is the per-rank batch, so N ranks train on N x batch sequences per step. Every rank runs
one thread (--threads), and there are as many ranks as cores (--world, default 2); collectives
go over Gloo on loopback for everyone.
  - lcc, one rank:     `lcc MODEL -o train.bin`, `lcc-run train.bin --threads 1`;
  - lcc dp/zero1/2/3:  `lcc MODEL --shard=M --world=N -o train.bin`,
                       `lcc-run -n N train.bin --threads 1 --csv ...`;
  - torch, one rank:   cpu_train_step.py's eager model with 1 thread;
  - torch DDP:         the same model in DistributedDataParallel (gloo), N spawned processes;
  - torch FSDP:        FullyShardedDataParallel(FULL_SHARD) and FSDP2 (fully_shard, which
                       reshards after forward: the same strategy), one unit for the whole model;
                       reported as n/a with the reason where they do not run on CPU/gloo;
  - "Nx1 nocomm":      N independent one-rank trainings at once (lcc and torch): what N ranks
                       cost without any communication on this machine (shared caches, memory
                       bandwidth, clocks), so "+comm" = a sharded row's ms/step minus this.
ms/step is the steady state: lcc from the CSV's elapsed_s after --skip steps, PyTorch timed on
rank 0 between barriers after --skip warm-up steps; the median of --repeats runs. tok/s is
global (ranks x batch x seq). Memory per rank: lcc's model states from `lcc --plan --shard=M
--world=N` (parameters, gradients, optimizer state, ZeRO's accounting), its collectives per
step, the runtime plan lcc-run reports (model states + activations) and the ranks' peak RSS;
PyTorch's peak RSS (VmHWM) of each rank process. The machine may be shared: each row says
which share of the CPUs other processes took during its measurement. Last, the floor of one
Gloo collective here (torch.distributed all_reduce/all_gather, the same library as lcc's).

Usage: python3 benchmarks/cpu_distributed.py [--steps 30] [--configs tiny,small] [--world 2]
"""
import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_train_step import (CONFIGS, CORPUS, ROOT, ensure_torch, sample_batch,  # noqa: E402
                            torch_model, torch_run)

MODES = ["dp", "zero1", "zero2", "zero3"]


def vm_hwm():
    """This process's peak RSS in bytes (VmHWM: per address space, so unlike ru_maxrss it does
    not inherit the spawning process's peak across fork + exec)."""
    with open("/proc/self/status") as f:
        m = re.search(r"VmHWM:\s+([0-9]+) kB", f.read())
    return int(m.group(1)) * 1024 if m else 0


def cpu_seconds():
    """(CPU seconds the whole machine was busy, CPU seconds of this process and its waited-for
    children, wall time): around a measurement, the difference tells how much CPU other
    processes took on this shared machine."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:9]]
    t = os.times()
    busy = (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")  # minus idle, iowait
    return busy, t.user + t.system + t.children_user + t.children_system, time.time()


def others_share(start):
    """Share of the machine's CPUs that other processes used since cpu_seconds() gave start."""
    busy, mine, wall = (b - a for a, b in zip(start, cpu_seconds()))
    return max(0.0, busy - mine) / max(wall * os.cpu_count(), 1e-9)


# ---------------------------------------------------------------------------------------- lcc

def lcc_plan(build, model, sets, mode, world, flags=()):
    """Model states per rank (bytes) and collectives per step from `lcc --plan --shard`."""
    out = subprocess.run([os.path.join(build, "bin", "lcc"), model, "--quiet", f"--set={sets}",
                          "--plan", f"--shard={mode}", f"--world={world}"] + list(flags),
                         check=True, capture_output=True, text=True).stdout
    states = re.search(r"model states\s+([0-9,]+) B", out)
    comm = re.search(r"communication per step\s+([0-9,]+) B.* ([0-9]+) collectives", out)
    return (int(states.group(1).replace(",", "")), int(comm.group(1).replace(",", "")),
            int(comm.group(2)))


def lcc_run(build, model, sets, mode, world, steps, skip, repeats, copies=(1,), flags=(),
            env=None):
    """Compiles once; for each entry k of copies, runs k concurrent lcc-run jobs (k > 1: that
    many independent one-rank trainings at once, the no-communication baseline). Returns
    {k: (ms/step median over repeats and jobs, runtime plan per rank, peak RSS of the largest
    rank, final loss, others_share)} and the compile seconds. flags: more lcc options; env:
    the ranks' environment (default: this process's)."""
    with tempfile.TemporaryDirectory() as tmp:
        binary = os.path.join(tmp, "train.bin")
        cmd = [os.path.join(build, "bin", "lcc"), model, "--quiet", f"--set={sets}", "-o", binary]
        if mode:
            cmd += [f"--shard={mode}", f"--world={world}"]
        cmd += list(flags)
        t0 = time.time()
        subprocess.run(cmd, check=True)
        compile_s = time.time() - t0
        # GNU time reports the launcher's peak RSS or its largest rank's (wait4 folds children
        # in); from this torch-sized process, a direct child would report this process's peak.
        timer = ["/usr/bin/time", "-f", "lcc-run-maxrss-kb %M"] if os.path.exists(
            "/usr/bin/time") else []
        results = {}
        for k in copies:
            times, rss, plan, start = [], 0, 0, cpu_seconds()
            for _ in range(repeats):
                jobs = []
                for j in range(k):
                    csv = os.path.join(tmp, f"m{j}.csv")
                    if os.path.exists(csv):
                        os.remove(csv)
                    run = [os.path.join(build, "bin", "lcc-run")] + (
                        ["-n", str(world), "--log-dir", tmp] if mode else []) + [
                        binary, "--data", CORPUS, "--val-fraction", "0", "--threads", "1",
                        "--steps", str(skip + steps), "--csv", csv, "--log-every", "1000"]
                    jobs.append((csv, subprocess.Popen(timer + run, stdout=subprocess.PIPE,
                                                       stderr=subprocess.PIPE, text=True,
                                                       env=env)))
                per_job = []
                for csv, job in jobs:
                    out, err = job.communicate()
                    if job.returncode:
                        sys.exit(f"lcc-run failed ({mode or 'one rank'}):\n{err}")
                    rows = [line.split(",") for line in open(csv).read().splitlines()[1:]]
                    elapsed = {int(r[0]): float(r[6]) for r in rows}
                    per_job.append(1000 * (elapsed[skip + steps] - elapsed[skip]) / steps)
                    kb = re.search(r"lcc-run-maxrss-kb ([0-9]+)", err)
                    rss = max(rss, int(kb.group(1)) * 1024 if kb else 0)
                    logs = out + "".join(open(os.path.join(tmp, f)).read()
                                         for f in os.listdir(tmp) if f.endswith(".log"))
                    plan = max([plan] + [int(b) for b in
                                         re.findall(r"memory: plan ([0-9]+) bytes", logs)])
                    loss = float(rows[-1][1])
                times.append(statistics.mean(per_job))
            results[k] = (statistics.median(times), plan, rss, loss, others_share(start))
    return results, compile_s


# ------------------------------------------------------------------------------------- torch

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torch_worker(rank, world, cfg, mode, steps, skip, port, outdir):
    """One rank of DDP/FSDP: writes {seconds, loss, hwm} or {error} to outdir/rank-R.json."""
    result = {}
    try:
        import datetime
        import torch
        import torch.distributed as dist
        torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))  # --threads
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        dist.init_process_group("gloo", rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=120))
        p, forward, _ = torch_model(torch, cfg)

        class Ref(torch.nn.Module):
            """cpu_train_step's model as a module; forward reads the parameters off the module
            (FSDP swaps in gathered ones) into the dict the reference forward closes over."""

            def __init__(self):
                super().__init__()
                self.names = list(p)
                self.ps = torch.nn.ParameterList(
                    [torch.nn.Parameter(p[n].detach().clone()) for n in self.names])

            def forward(self, tokens, targets):
                p.update(zip(self.names, self.ps))
                return forward(tokens, targets)

        model = Ref()
        ndim = [t.dim() for t in model.ps]
        clip = lambda: torch.nn.utils.clip_grad_norm_(list(model.parameters()), 1.0)  # noqa
        if mode == "solo":  # independent trainings at once (the process group only times)
            pass
        elif mode == "ddp":
            model = torch.nn.parallel.DistributedDataParallel(model)
        elif mode == "fsdp":
            from torch.distributed.fsdp import FullyShardedDataParallel, ShardingStrategy
            model = FullyShardedDataParallel(model, sharding_strategy=ShardingStrategy.FULL_SHARD,
                                             use_orig_params=True)
            clip = lambda: model.clip_grad_norm_(1.0)  # noqa: E731
        elif mode == "fsdp2":
            from torch.distributed.device_mesh import init_device_mesh
            from torch.distributed.fsdp import fully_shard
            model = fully_shard(model, mesh=init_device_mesh("cpu", (world,)),
                                reshard_after_forward=True)
        # Weight decay on the matrices, decided on the original shapes (FSDP flattens shards).
        groups = ([], [])
        for name, t in model.named_parameters():
            groups[ndim[int(name.rsplit(".", 1)[1])] >= 2].append(t)
        opt = torch.optim.AdamW([{"params": groups[1], "weight_decay": 0.1},
                                 {"params": groups[0], "weight_decay": 0.0}],
                                lr=6e-4, betas=(0.9, 0.95), eps=1e-8)
        V, B, T = cfg["vocab"], cfg["batch"], cfg["seq"]
        data = torch.tensor(list(open(CORPUS, "rb").read()), dtype=torch.long) % V
        gen = torch.Generator().manual_seed(7 + rank)

        def step():
            loss = model(*sample_batch(torch, data, B, T, gen))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            clip()
            opt.step()
            return loss.item()

        for _ in range(skip):
            step()
        dist.barrier()
        t0 = time.time()
        for _ in range(steps):
            loss = step()
        dist.barrier()
        result = dict(seconds=time.time() - t0, loss=loss, hwm=vm_hwm())
        dist.destroy_process_group()
    except Exception as e:  # reported by the parent as n/a
        result = dict(error=f"{type(e).__name__}: {str(e).strip().splitlines()[0][:160]}"
                      if str(e).strip() else type(e).__name__)
    with open(os.path.join(outdir, f"rank-{rank}.json"), "w") as f:
        json.dump(result, f)


def gloo_worker(rank, world, numel, port, outdir):
    """The floor of one collective here: mean us of Gloo all_reduce (torch.distributed, the
    same library lcc's runtime uses) of 1 float and of `numel` floats, and all_gather of
    numel / world floats."""
    import datetime
    import torch
    import torch.distributed as dist
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=120))
    out = {}
    part = torch.zeros(numel // world)
    gathered = [torch.zeros(numel // world) for _ in range(world)]
    for name, op in [("all_reduce 4 B", lambda: dist.all_reduce(torch.zeros(1))),
                     (f"all_reduce {4 * numel:,} B", lambda: dist.all_reduce(torch.zeros(numel))),
                     (f"all_gather {4 * numel:,} B", lambda: dist.all_gather(gathered, part))]:
        for _ in range(20):
            op()
        dist.barrier()
        t0 = time.time()
        for _ in range(200):
            op()
        out[name] = 1e6 * (time.time() - t0) / 200
    dist.destroy_process_group()
    with open(os.path.join(outdir, f"rank-{rank}.json"), "w") as f:
        json.dump(out, f)


def gloo_latency(world, numel):
    import torch.multiprocessing as mp
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(gloo_worker, args=(world, numel, free_port(), tmp), nprocs=world, join=True)
        return json.load(open(os.path.join(tmp, "rank-0.json")))


def torch_dist(cfg, mode, world, steps, skip, repeats):
    """(ms/step median, peak RSS per rank list, loss) or raises RuntimeError(reason)."""
    import torch.multiprocessing as mp
    times, hwm, loss = [], [0] * world, None
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as tmp:
            try:
                mp.spawn(torch_worker, args=(world, cfg, mode, steps, skip, free_port(), tmp),
                         nprocs=world, join=True)
            except Exception as e:  # a rank died without writing its result
                raise RuntimeError(f"{type(e).__name__}: {str(e).strip().splitlines()[0][:160]}")
            res = [json.load(open(os.path.join(tmp, f"rank-{r}.json"))) for r in range(world)]
        errors = [r["error"] for r in res if "error" in r]
        if errors:
            raise RuntimeError(errors[0])
        times.append(1000 * res[0]["seconds"] / steps)
        hwm = [max(h, r["hwm"]) for h, r in zip(hwm, res)]
        loss = res[0]["loss"]
    return statistics.median(times), hwm, loss


# -------------------------------------------------------------------------------------- main

def mib(b):
    return f"{b / 2**20:.2f}" if b < 10 * 2**20 else f"{b / 2**20:.0f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30, help="measured steps per run")
    ap.add_argument("--skip", type=int, default=5, help="warm-up steps before measuring")
    ap.add_argument("--repeats", type=int, default=3, help="runs per variant (median)")
    ap.add_argument("--threads", type=int, default=1, help="threads per rank")
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--configs", default="tiny")
    args = ap.parse_args()
    # Inherited by lcc-run's ranks and by the spawned torch ranks (and OpenBLAS in both).
    for var in ("LCC_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")  # loopback Gloo for torch too
    ensure_torch()
    import torch
    torch.set_num_threads(args.threads)
    N = args.world
    print(f"CPU: {os.cpu_count()} cores; {N} ranks x {args.threads} thread(s), Gloo on loopback; "
          f"torch {torch.__version__}; {args.steps} measured steps after {args.skip}, median of "
          f"{args.repeats} runs", flush=True)
    rows, notes = [], []
    for name in args.configs.split(","):
        model_file, cfg = CONFIGS[name]
        model = os.path.join(ROOT, "examples", model_file)
        sets = ",".join(f"{k}={v}" for k, v in cfg.items() if k != "vocab")
        tok = cfg["batch"] * cfg["seq"]
        # (variant, ranks, ms/step, model states/rank, collectives, runtime memory text)
        states, _, coll = lcc_plan(args.build, model, sets, "dp", 1)
        res, comp = lcc_run(args.build, model, sets, None, 1, args.steps, args.skip,
                            args.repeats, copies=(1, N))
        for k, label in [(1, "lcc 1 rank"), (N, f"lcc {N}x1 nocomm")]:
            ms, plan, rss, loss, busy = res[k]
            rows.append((name, label, k, ms, states, coll,
                         f"plan {mib(plan)}, rss {mib(rss)}", loss, busy))
            print(f"  {name}: {label} {ms:.1f} ms/step (compile {comp:.1f} s)", flush=True)
        for mode in MODES:
            states, sent, coll = lcc_plan(args.build, model, sets, mode, N)
            res, comp = lcc_run(args.build, model, sets, mode, N, args.steps, args.skip,
                                args.repeats)
            ms, plan, rss, loss, busy = res[1]
            rows.append((name, f"lcc {mode}", N, ms, states, coll,
                         f"plan {mib(plan)}, rss {mib(rss)} (max rank)", loss, busy))
            print(f"  {name}: lcc {mode} {ms:.1f} ms/step, {coll} collectives, {sent:,} B sent "
                  f"per rank (compile {comp:.1f} s)", flush=True)
        start = cpu_seconds()
        tps, loss = torch_run(torch, cfg, args.steps, compiled=False)
        rows.append((name, "torch 1 rank", 1, 1000 * tok / tps, None, None, "", loss,
                     others_share(start)))
        for mode, label in [("solo", f"torch {N}x1 nocomm"), ("ddp", "torch DDP"),
                            ("fsdp", "torch FSDP"), ("fsdp2", "torch FSDP2")]:
            try:
                start = cpu_seconds()
                ms, hwm, loss = torch_dist(cfg, mode, N, args.steps, args.skip, args.repeats)
            except RuntimeError as e:
                rows.append((name, label, N, None, None, None, "", None, 0))
                notes.append(f"{name} {label}: n/a on CPU/gloo here: {e}")
                print(f"  {name}: {label} n/a: {e}", flush=True)
                continue
            rows.append((name, label, N, ms, None, None,
                         "rss " + " / ".join(mib(h) for h in hwm) + " (per rank)", loss,
                         others_share(start)))
            print(f"  {name}: {label} {ms:.1f} ms/step", flush=True)
    print()
    print(f"{'model':6} {'variant':16} {'ranks':>5} {'ms/step':>8} {'tok/s':>8} {'+comm':>6} "
          f"{'states/rank':>11} {'coll':>4} {'memory per rank (MiB)':>33} {'loss':>6} "
          f"{'vs DDP':>7} {'vs FSDP':>7} {'others':>6}")
    print(f"(tok/s: global; +comm: ms/step over {N} independent one-rank trainings run at once "
          "(nocomm); vs X: X's ms/step / this one's; vs FSDP uses FSDP2 where FSDP is n/a; others: "
          "share of the CPUs other processes used meanwhile, > 5% makes the row suspect; loss: the "
          "last step's, a sanity check (lcc: averaged over the ranks; torch: rank 0's))")
    for name in args.configs.split(","):
        mine = [r for r in rows if r[0] == name]
        ref = {r[1]: r for r in mine if r[3] is not None}
        tok = CONFIGS[name][1]["batch"] * CONFIGS[name][1]["seq"]
        for _, variant, ranks, ms, states, coll, mem, loss, busy in mine:
            if ms is None:
                print(f"{name:6} {variant:16} {ranks:5} {'n/a':>8}")
                continue
            tps = 1000 * ranks * tok / ms
            fw = variant.split()[0]
            solo = ref.get(f"{fw} {N}x1 nocomm")
            sharded = variant.split()[-1] in MODES + ["DDP", "FSDP", "FSDP2"]
            comm = f"{ms - solo[3]:+6.1f}" if solo and sharded else ""
            ratios = ""
            for r in (ref.get("torch DDP"), ref.get("torch FSDP") or ref.get("torch FSDP2")):
                ratios += f" {r[3] / ms:6.2f}x" if r and fw == "lcc" and sharded else f" {'':>7}"
            print(f"{name:6} {variant:16} {ranks:5} {ms:8.1f} {tps:8.0f} {comm:>6} "
                  f"{(mib(states) + ' MiB') if states else '':>11} "
                  f"{'' if coll is None else coll:>4} {mem:>33} {loss:6.3f}{ratios} "
                  f"{100 * busy:5.1f}%")
        # The comparable pairs: lcc's data parallelism vs DDP, lcc's ZeRO-3 vs FSDP FULL_SHARD.
        for a, b in [("lcc dp", "torch DDP"), ("lcc zero3", "torch FSDP"),
                     ("lcc zero3", "torch FSDP2"), ("lcc 1 rank", "torch 1 rank"),
                     (f"lcc {N}x1 nocomm", f"torch {N}x1 nocomm")]:
            if a in ref and b in ref:
                print(f"{name:6} {a} / {b}: {ref[b][3] / ref[a][3]:.2f}x (> 1: lcc is faster)")
        for a in ("lcc dp", "torch DDP", f"lcc {N}x1 nocomm", f"torch {N}x1 nocomm"):
            one = ref.get(a.split()[0] + " 1 rank")
            if a in ref and one:
                print(f"{name:6} {a}: {N} ranks give {one[3] / ref[a][3] * N:.2f}x the tokens/s "
                      f"of one rank alone")
    for n in notes:
        print("note: " + n)
    # Psi of the first config: what dp's one bucket all-reduces.
    cfg = CONFIGS[args.configs.split(",")[0]][1]
    d, L, V, C = cfg["dim"], cfg["layers"], cfg["vocab"], cfg["ctx"]
    psi = V * d + C * d + L * (12 * d * d + 13 * d) + 2 * d
    lat = gloo_latency(N, psi)
    print(f"Gloo floor (torch.distributed, {N} ranks, loopback, mean of 200): " +
          ", ".join(f"{k} {v:.0f} us" for k, v in lat.items()))


if __name__ == "__main__":
    main()
