#!/usr/bin/env python3
"""Pipeline parallelism on CPU ranks: lcc --pp against PyTorch's torch.distributed.pipelining,
measured in the same run.

The model is cpu_train_step.py's GPT (pre-LN, tanh-GELU, fp32, AdamW) cut into --stages stages
of equal layers, the embedding with the first and the head with the last; one rank per stage,
one thread per rank, Gloo on loopback for both. A step is --microbatches micro-batches of the
config's batch.
  - lcc:   `lcc MODEL --pp=P --microbatches=M --pp-schedule=S -o pp.bin`,
           `lcc-run -n P pp.bin --threads 1`; ms/step from the CSV after --skip steps;
  - torch: PipelineStage per rank with Schedule1F1B / ScheduleGPipe, for the interleaved row
           --virtual PipelineStages per rank (stages r, r + P, ...) with
           ScheduleInterleaved1F1B, and for the zero-bubble row ScheduleInterleavedZeroBubble
           with one stage per rank (reported n/a if it does not run); the head is its own weight there (PipelineStage cannot tie across ranks:
           vocab x dim more parameters on the last stage, the same FLOPs); timed on rank 0
           between barriers after --skip steps.
The measured bubble is the step's time over a balanced stage's share of the one-rank step on
the same micro-batches (lcc: --accum=M; torch: the same loop eagerly), minus 1: idle time and
transfers over compute, what the formula (P - 1) / M predicts for 1F1B ((P - 1) / (V M)
interleaved, with --virtual V stages per rank). Memory per rank: lcc's
runtime plan (lcc-run prints it per rank), and every rank's peak RSS for both. With --latency,
LCC_DIST_LATENCY_MS makes each of lcc's messages leave that long after its send was issued (a
network's latency, paid once per message; receives are posted at once); torch has no such knob,
so its rows are at loopback latency only. lcc's rows are measured round-robin: every binary is
compiled first, then each repeat runs every configuration once.

With --compile-times M1,M2,..., it times instead `lcc MODEL --pp=P --microbatches=M` (every
stage, as a process) against `lcc MODEL --accum=M` (one rank) for each M, interleaved, median of
--repeats: a stage's compile should not grow with M.

Usage: python3 benchmarks/cpu_pipeline.py [--config small] [--stages 2] [--microbatches 8]
                                          [--schedules gpipe,1f1b,interleaved,zb-h1]
                                          [--virtual 2] [--latency 0,5]
       python3 benchmarks/cpu_pipeline.py --compile-times 4,8,16,32,64 [--config small]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_distributed import free_port, vm_hwm  # noqa: E402
from cpu_train_step import CONFIGS, CORPUS, ROOT, ensure_torch  # noqa: E402


# ---------------------------------------------------------------------------------------- lcc

def lcc_compile(build, model, sets, flags, tmp, name):
    binary = os.path.join(tmp, name + ".bin")
    subprocess.run([os.path.join(build, "bin", "lcc"), model, "--quiet", f"--set={sets}", "-o",
                    binary] + flags, check=True)
    return binary


def lcc_once(build, binary, ranks, steps, skip, env=None):
    """(ms/step, [plan bytes per rank], peak RSS) of one lcc-run of `binary`."""
    with tempfile.TemporaryDirectory() as tmp:
        csv = os.path.join(tmp, "m.csv")
        run = ["/usr/bin/time", "-f", "maxrss-kb %M", os.path.join(build, "bin", "lcc-run")]
        if ranks > 1:
            run += ["-n", str(ranks), "--log-dir", tmp]
        run += [binary, "--data", CORPUS, "--val-fraction", "0", "--threads", "1", "--steps",
                str(skip + steps), "--csv", csv, "--log-every", "1000"]
        job = subprocess.run(run, capture_output=True, text=True, env=env)
        if job.returncode:
            sys.exit("lcc-run failed:\n" + job.stderr)
        rows = [line.split(",") for line in open(csv).read().splitlines()[1:]]
        elapsed = {int(r[0]): float(r[6]) for r in rows}
        logs = job.stdout + "".join(open(os.path.join(tmp, f)).read()
                                    for f in sorted(os.listdir(tmp)) if f.endswith(".log"))
        plans = [int(b) for b in re.findall(r"memory: plan ([0-9]+) bytes", logs)]
        kb = re.search(r"maxrss-kb ([0-9]+)", job.stderr)
        return (1000 * (elapsed[skip + steps] - elapsed[skip]) / steps, plans,
                int(kb.group(1)) * 1024 if kb else 0)


def lcc_rows(args, model, sets, configs):
    """{name: (ms/step median, plans, max RSS)} for configs [(name, flags, ranks, env)]: every
    binary compiled first, then the repeats run round-robin over the configurations, so that
    the machine's slow phases hit every row alike."""
    with tempfile.TemporaryDirectory() as tmp:
        binaries = {}
        for name, flags, _, _ in configs:
            key = tuple(flags)
            if key not in binaries:
                binaries[key] = lcc_compile(args.build, model, sets, flags, tmp,
                                            f"b{len(binaries)}")
        runs = {name: [] for name, _, _, _ in configs}
        for _ in range(args.repeats):
            for name, flags, ranks, env in configs:
                runs[name].append(lcc_once(args.build, binaries[tuple(flags)], ranks, args.steps,
                                           args.skip, env))
        return {name: (statistics.median(r[0] for r in rs), rs[-1][1], max(r[2] for r in rs))
                for name, rs in runs.items()}


def compile_times(args, model, sets):
    """Wall seconds of `lcc --pp=P --microbatches=M` and `lcc --accum=M`, interleaved."""
    lcc = os.path.join(args.build, "bin", "lcc")
    ms = [int(m) for m in args.compile_times.split(",")]
    runs = {(kind, m): [] for kind in ("pp", "accum") for m in ms}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeats):
            for m in ms:
                for kind, flags in (("pp", [f"--pp={args.stages}", f"--microbatches={m}"]),
                                    ("accum", [f"--accum={m}"])):
                    t0 = time.time()
                    subprocess.run([lcc, model, "--quiet", f"--set={sets}", "-o",
                                    os.path.join(tmp, "x.bin")] + flags, check=True)
                    runs[kind, m].append(time.time() - t0)
    print(f"| M | lcc --pp={args.stages} (all stages) | lcc --accum=M (one rank) |\n|---|---|---|")
    for m in ms:
        print(f"| {m} | {statistics.median(runs['pp', m]):.2f} s | "
              f"{statistics.median(runs['accum', m]):.2f} s |")


# ------------------------------------------------------------------------------------- torch

def torch_stage(torch, cfg, stage, stages):
    """Stage `stage` of the GPT as an nn.Module: the embedding on the first, the head on the
    last, layers split evenly."""
    nn, F = torch.nn, torch.nn.functional
    V, C, D, H, L = cfg["vocab"], cfg["ctx"], cfg["dim"], cfg["heads"], cfg["layers"]
    per = L // stages

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(D), nn.LayerNorm(D)
            self.c_attn, self.c_proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
            self.c_fc, self.c_out = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)

        def forward(self, x):
            B, T, _ = x.shape
            q, k, v = (t.reshape(B, T, H, D // H).transpose(1, 2)
                       for t in self.c_attn(self.ln_1(x)).split(D, -1))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.c_proj(y.transpose(1, 2).reshape(B, T, D))
            return x + self.c_out(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))

    class Stage(nn.Module):
        def __init__(self):
            super().__init__()
            self.first, self.last = stage == 0, stage == stages - 1
            if self.first:
                self.wte, self.wpe = nn.Embedding(V, D), nn.Embedding(C, D)
            self.blocks = nn.ModuleList(Block() for _ in range(per))
            if self.last:
                self.ln_f, self.head = nn.LayerNorm(D), nn.Linear(D, V, bias=False)

        def forward(self, x):
            if self.first:
                x = self.wte(x) + self.wpe(torch.arange(x.shape[1]))
            for b in self.blocks:
                x = b(x)
            return self.head(self.ln_f(x)) if self.last else x

    return Stage()


def torch_worker(args):
    """One rank of the torch pipeline (or, with --stages 1, the one-rank reference); prints
    'result ms/step rss' on rank 0."""
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    cfg = dict(CONFIGS[args.config][1])
    M, B, T, V = args.microbatches, cfg["batch"], cfg["seq"], cfg["vocab"]
    torch.manual_seed(1337)
    data = torch.tensor(list(open(CORPUS, "rb").read()), dtype=torch.long) % V
    gen = torch.Generator().manual_seed(7)

    def batch():
        starts = torch.randint(0, len(data) - T - 1, (M * B,), generator=gen)
        return (torch.stack([data[s:s + T] for s in starts]),
                torch.stack([data[s + 1:s + T + 1] for s in starts]))

    def loss_fn(logits, target):
        return torch.nn.functional.cross_entropy(logits.reshape(-1, V), target.reshape(-1))

    if world == 1:
        module = torch.nn.Sequential(torch_stage(torch, cfg, 0, 1))
        opt = torch.optim.AdamW(module.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1)

        def step():
            x, y = batch()
            for k in range(M):
                (loss_fn(module(x[k * B:(k + 1) * B]), y[k * B:(k + 1) * B]) / M).backward()
            torch.nn.utils.clip_grad_norm_(module.parameters(), 1.0)
            opt.step()
            opt.zero_grad()
        barrier = lambda: None  # noqa: E731
    else:
        from torch.distributed import pipelining as pp
        dist.init_process_group("gloo", rank=rank, world_size=world)
        # Interleaved: this rank's stages r, r + P, ... of P x V.
        v = args.virtual if args.torch_schedule == "interleaved" else 1
        ids = [rank + c * world for c in range(v)]
        parts = [torch_stage(torch, cfg, i, world * v) for i in ids]
        module = torch.nn.ModuleList(parts)
        opt = torch.optim.AdamW(module.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1)
        stages = [pp.PipelineStage(m, i, world * v, torch.device("cpu")) for m, i in zip(parts, ids)]
        kind = {"gpipe": "ScheduleGPipe", "1f1b": "Schedule1F1B",
                "interleaved": "ScheduleInterleaved1F1B",
                "zb-h1": "ScheduleInterleavedZeroBubble"}[args.torch_schedule]
        cls = getattr(pp, kind)
        schedule = cls(stages if kind.startswith("ScheduleInterleaved") else stages[0], M,
                       loss_fn=loss_fn)

        def step():
            x, y = batch()
            if rank == 0:
                schedule.step(x)
            elif rank == world - 1:
                schedule.step(target=y, losses=[])
            else:
                schedule.step()
            torch.nn.utils.clip_grad_norm_(module.parameters(), 1.0)  # per stage, not global
            opt.step()
            opt.zero_grad()
        barrier = dist.barrier
    for _ in range(args.skip):
        step()
    barrier()
    t0 = time.time()
    for _ in range(args.steps):
        step()
    barrier()
    ms = 1000 * (time.time() - t0) / args.steps
    print(f"result {ms} {vm_hwm()} rank {rank}", flush=True)


def torch_row(args, ranks, schedule):
    """(ms/step, max peak RSS over ranks) of the torch pipeline, median of --repeats; None and
    the error when it does not run."""
    times, rss = [], 0
    for _ in range(args.repeats):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
                   WORLD_SIZE=str(ranks), OMP_NUM_THREADS="1")
        procs = [subprocess.Popen([sys.executable, __file__, "--torch-worker",
                                   f"--torch-schedule={schedule}"] + sys.argv[1:],
                                  env=dict(env, RANK=str(r)), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for r in range(ranks)]
        outs = [p.communicate() for p in procs]
        if any(p.returncode for p in procs):
            err = next(e for (o, e), p in zip(outs, procs) if p.returncode).strip().splitlines()
            return None, (err[-1] if err else "failed")
        ms = [float(m.group(1)) for o, _ in outs for m in re.finditer(r"result ([0-9.]+)", o)]
        rss = max([rss] + [int(m.group(1)) for o, _ in outs
                           for m in re.finditer(r"result [0-9.]+ ([0-9]+)", o)])
        times.append(ms[0])
    return statistics.median(times), rss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="small", choices=sorted(CONFIGS))
    ap.add_argument("--stages", type=int, default=2)
    ap.add_argument("--microbatches", type=int, default=8)
    ap.add_argument("--schedules", default="gpipe,1f1b,interleaved,zb-h1")
    ap.add_argument("--virtual", type=int, default=2, help="interleaved: stages per rank")
    ap.add_argument("--latency", default="0,5", help="lcc: emulated ms per transfer group")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--skip", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--compile-times", help="micro-batch counts: time the compile only")
    ap.add_argument("--torch-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--torch-schedule", default="1f1b", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.torch_worker:
        return torch_worker(args)
    if not args.no_torch and not args.compile_times:
        ensure_torch()
    for var in ("LCC_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        os.environ[var] = "1"
    model_file, cfg = CONFIGS[args.config]
    model = os.path.join(ROOT, "examples", model_file)
    sets = ",".join(f"{k}={v}" for k, v in cfg.items() if k != "vocab")
    P, M = args.stages, args.microbatches
    if args.compile_times:
        return compile_times(args, model, sets)
    print(f"{args.config} (layers {cfg['layers']}, batch {cfg['batch']} x seq {cfg['seq']} per "
          f"micro-batch), {P} stages x 1 thread, {M} micro-batches, Gloo on loopback; "
          f"{args.steps} steps after {args.skip}, median of {args.repeats} (lcc's rows taken "
          f"round-robin)", flush=True)
    formula = {"gpipe": (P - 1) / M, "1f1b": (P - 1) / M,
               "interleaved": (P - 1) / (args.virtual * M), "zb-h1": (P - 1) / (3 * M)}
    latencies = [float(x) for x in args.latency.split(",")]
    schedules = args.schedules.split(",")
    configs = [("one", [f"--accum={M}"], 1, None)]
    for latency in latencies:
        env = dict(os.environ, LCC_DIST_LATENCY_MS=str(latency))
        for s in schedules:
            flags = [f"--pp={P}", f"--microbatches={M}", f"--pp-schedule={s}"]
            if s == "interleaved":
                flags.append(f"--virtual={args.virtual}")
            configs.append(((s, latency), flags, P, env))
    lcc = lcc_rows(args, model, sets, configs)
    one = lcc["one"][0]
    torch_one = None if args.no_torch else torch_row(args, 1, "1f1b")[0]
    print(f"one rank, {M} micro-batches: lcc {one:.1f} ms/step"
          + (f", torch {torch_one:.1f} ms/step" if torch_one else ""), flush=True)
    print(f"{'schedule':8} {'latency':>8} {'lcc ms':>9} {'bubble':>7} {'formula':>7} "
          f"{'plan/rank':>11} {'rss/rank':>9} | {'torch ms':>9} {'bubble':>7} {'rss/rank':>9} "
          f"| {'lcc/torch':>9}")
    for latency in latencies:
        for s in schedules:
            ms, plans, rss = lcc[(s, latency)]
            row = (f"{s:8} {latency:>6.0f}ms {ms:>9.1f} {ms / (one / P) - 1:>7.3f} "
                   f"{formula[s]:>7.3f} {max(plans) / 2**20:>9.2f}Mi {rss / 2**20:>7.1f}Mi")
            if latency == 0 and not args.no_torch:
                tms, trss = torch_row(args, P, s)
                if tms is None:
                    row += f" | torch n/a: {trss[:60]}"
                else:
                    row += (f" | {tms:>9.1f} {tms / (torch_one / P) - 1:>7.3f} "
                            f"{trss / 2**20:>7.1f}Mi | {ms / tms:>9.2f}")
            print(row, flush=True)

if __name__ == "__main__":
    main()
