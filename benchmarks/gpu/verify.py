"""The GPU verification of the CUDA target (issue 7), run by verify.sh on a
machine with an NVIDIA GPU after it built lcc-run there (runtime only):

 (a) gpt-tiny trained 50 steps on the GPU against the CPU target's losses
     (benchmarks/gpu/bins/gpt-tiny-cpu*.csv, from prepare.sh): fp32, relative
     difference at most 1e-4 per step; bf16 against the CPU's bf16 emulation,
     |difference| at most 0.02 + 0.5% of the loss per step (the tolerance the
     CPU's bf16 run keeps from fp32, lcc-precision.test: both sides round the
     same operands to bf16 and accumulate in f32, only the summation order
     differs, and a one-ulp bf16 flip is 2^-8 relative); the same with
     --no-graph (eager launches) against the graph run; fp16 (loss scaling)
     against the CPU's fp16 emulation with bf16's bound and the same skipped
     steps;
 (b) GPT-2 124M (batch 8, context 1024) tokens/s in lcc (fp32 and bf16) and
     in PyTorch eager and torch.compile (fp32, bf16 autocast) in the same run,
     MFU against the peak GEMM rate measured in the same run;
 (c) graph replay against --no-graph, tokens/s;
 (d) when time is left: compute-sanitizer's memcheck on gpt-tiny fp32 and
     racecheck on gpt-tiny bf16 with the fused attention (a few eager
     steps): out-of-bounds accesses in the generated kernels, shared-memory
     races in the flash kernels.

Every phase has a timeout and reports its failure instead of stopping the
others; the table is printed last."""
import argparse
import csv
import math
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
CORPUS = os.path.join(ROOT, "data", "kjv-genesis-exodus.txt")
GPT2 = dict(vocab=50257, dim=768, heads=12, layers=12, batch=8, seq=1024, ctx=1024)

rows = []  # (check, result, detail)
START = time.time()
SEEN_HEADERS = set()


def row(check, result, detail=""):
    rows.append((check, result, detail))
    print(f"[verify] {check}: {result} {detail}", flush=True)


def read_csv(path):
    with open(path) as f:
        return [r for r in csv.DictReader(f)]


def lcc_run(args, binary, steps, csv_path, extra=(), timeout=240, prefix=()):
    # Not --quiet: the header line says which GPU ran it and whether the
    # kernels came from the cubin or were compiled from PTX at load.
    cmd = list(prefix) + [args.lcc_run, binary, "--data", CORPUS, "--steps", str(steps), "--val-fraction", "0",
           "--log-every", "1000000", "--csv", csv_path] + list(extra)
    # No single run may carry the script past its budget by much.
    timeout = max(20, min(timeout, args.budget + 60 - (time.time() - START)))
    t0 = time.time()
    log = os.path.join(args.out, os.path.basename(csv_path) + ".log")
    out = ""
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        out = done.stdout + done.stderr
    except subprocess.TimeoutExpired as e:  # keep what it printed before the timeout
        out = "".join(x.decode() if isinstance(x, bytes) else (x or "") for x in (e.stdout, e.stderr))
        raise RuntimeError(f"timed out after {timeout} s: {out.strip()[-300:]}")
    finally:
        with open(log, "w") as f:
            f.write(" ".join(cmd) + "\n" + out)
    if done.returncode != 0:
        raise RuntimeError(f"exit {done.returncode}: {(done.stderr or done.stdout).strip()[-400:]}")
    header = next((l for l in done.stdout.splitlines() if l.startswith("training ")), "")
    if header and header not in SEEN_HEADERS:
        SEEN_HEADERS.add(header)
        print(f"[verify] {header}", flush=True)
    return read_csv(csv_path), time.time() - t0


def check(name, fn):
    """Runs one check; a failure is a row, and the other checks still run."""
    try:
        fn()
    except Exception as e:
        row(name, "FAILED", str(e).strip()[:400])


def steady_rate(records, skip=5):
    """Median tokens/s of single steps after the first `skip` (the CSV's
    tokens_per_s is a running average that includes the eager first step,
    cuBLASLt's plan search and the graph captures)."""
    first = records[0]
    tokens = float(first["tokens_per_s"]) * float(first["elapsed_s"])  # tokens per step
    rates = []
    for prev, cur in zip(records, records[1:]):
        dt = float(cur["elapsed_s"]) - float(prev["elapsed_s"])
        if dt > 0:
            rates.append(tokens / dt)
    return statistics.median(rates[skip:] or rates or [float(first["tokens_per_s"])])


def max_rel(a, b):
    return max(abs(float(x["loss"]) - float(y["loss"])) / abs(float(y["loss"]))
               for x, y in zip(a, b))


def phase_tiny(args, results):
    cpu = read_csv(os.path.join(args.bins, "gpt-tiny-cpu.csv"))
    graph = {}

    def fp32():
        gpu, _ = lcc_run(args, os.path.join(args.bins, "gpt-tiny-cuda.bin"), len(cpu),
                         os.path.join(args.out, "tiny-graph.csv"))
        graph["records"] = gpu
        rel = max_rel(gpu, cpu)
        row("(a) gpt-tiny fp32 GPU vs CPU losses, 50 steps", "PASS" if rel <= 1e-4 else "FAIL",
            f"max rel diff {rel:.2e} (tolerance 1e-4); final {float(gpu[-1]['loss']):.4f} vs "
            f"{float(cpu[-1]['loss']):.4f}")
        results["tiny graph"] = steady_rate(gpu)

    def eager():
        records, _ = lcc_run(args, os.path.join(args.bins, "gpt-tiny-cuda.bin"), len(cpu),
                             os.path.join(args.out, "tiny-eager.csv"), ["--no-graph"])
        rel = max_rel(records, graph["records"] if "records" in graph else cpu)
        against = "graph" if "records" in graph else "CPU (the graph run failed)"
        row(f"(a) gpt-tiny --no-graph vs {against} losses",
            "PASS" if rel <= (1e-6 if "records" in graph else 1e-4) else "FAIL",
            f"max rel diff {rel:.2e}")
        results["tiny eager"] = steady_rate(records)

    def half(precision, bound_name):
        # precision: bf16, fp16 or bf16-fused (--attention=fused: the flash kernels)
        oracle = read_csv(os.path.join(args.bins, f"gpt-tiny-cpu-{precision}.csv"))
        gpu, _ = lcc_run(args, os.path.join(args.bins, f"gpt-tiny-cuda-{precision}.bin"),
                         len(oracle), os.path.join(args.out, f"tiny-{precision}.csv"))
        worst = max(abs(float(x["loss"]) - float(y["loss"])) - 0.005 * float(y["loss"])
                    for x, y in zip(gpu, oracle))
        # fp16: the same steps must be skipped (a non-finite grad norm).
        skips = [math.isfinite(float(r["grad_norm"])) for r in gpu]
        same = skips == [math.isfinite(float(r["grad_norm"])) for r in oracle]
        row(f"(a) gpt-tiny {precision} GPU vs {bound_name}",
            "PASS" if worst <= 0.02 and same else "FAIL",
            f"max |diff| - 0.5% loss = {worst:.4f} (tolerance 0.02); skipped steps "
            f"{'match' if same else 'DIFFER'} ({skips.count(False)} skipped); final "
            f"{float(gpu[-1]['loss']):.4f} vs {float(oracle[-1]['loss']):.4f}")

    def zero3():
        # --shard=zero3 for 1 rank: the collectives on the GPU's streams.
        oracle = read_csv(os.path.join(args.bins, "gpt-tiny-cpu-zero3.csv"))
        gpu, _ = lcc_run(args, os.path.join(args.bins, "gpt-tiny-cuda-zero3.bin"), len(oracle),
                         os.path.join(args.out, "tiny-zero3.csv"))
        rel = max_rel(gpu, oracle)
        row("(a) gpt-tiny ZeRO-3 (1 rank) GPU vs CPU losses", "PASS" if rel <= 1e-4 else "FAIL",
            f"max rel diff {rel:.2e} (tolerance 1e-4)")

    def generate():
        # Text generation from the CPU run's checkpoint: @prefill, then each
        # @decode_step replayed as a CUDA graph per cache set; sampled with the
        # CPU run's seed, so the text must be the CPU's (a draw within rounding
        # of a boundary between two tokens could flip one).
        want = open(os.path.join(args.bins, "gpt-tiny-cpu-generate.txt"), "rb").read()
        cmd = [args.lcc_run, os.path.join(args.bins, "gpt-tiny-cuda.bin"), "--resume",
               os.path.join(args.bins, "gpt-tiny-ckpt"), "--generate", "--prompt", "And God said",
               "--temperature", "1", "--top-k", "0", "--top-p", "1", "--seed", "7", "--max-tokens", "48"]
        done = subprocess.run(cmd, capture_output=True, timeout=120)
        err = done.stderr.decode(errors="replace")
        with open(os.path.join(args.out, "tiny-generate.log"), "w") as f:
            f.write(" ".join(cmd) + "\n" + done.stdout.decode(errors="replace") + err)
        if done.returncode != 0:
            raise RuntimeError(f"exit {done.returncode}: {err.strip()[-400:]}")
        got = done.stdout
        first = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]),
                     None if len(got) == len(want) else min(len(got), len(want)))
        rate = next((l for l in err.splitlines() if l.startswith("prefill:")), "")
        row("(a) gpt-tiny generation GPU vs CPU, seeded (KV cache, decode graphs)",
            "PASS" if first is None else "FAIL",
            (rate if first is None else f"first difference at byte {first}") )

    check("(a) gpt-tiny fp32", fp32)
    check("(a) gpt-tiny generation", generate)
    check("(a) gpt-tiny ZeRO-3", zero3)
    check("(a) gpt-tiny --no-graph", eager)
    check("(a) gpt-tiny bf16", lambda: half("bf16", "CPU bf16 emulation"))
    check("(a) gpt-tiny fp16", lambda: half("fp16", "CPU fp16 emulation"))
    check("(a) gpt-tiny bf16 fused attention",
          lambda: half("bf16-fused", "CPU bf16 fused attention"))


def phase_gpt2_lcc(args, results):
    binary = os.path.join(args.bins, "gpt2-cuda.bin")

    def fp32():
        graph, seconds = lcc_run(args, binary, args.gpt2_steps,
                                 os.path.join(args.out, "gpt2.csv"), timeout=300)
        results["gpt2 lcc graph"] = steady_rate(graph, skip=3)
        row("(b) GPT-2 124M lcc fp32 (graph)", "ran",
            f"{results['gpt2 lcc graph']:.0f} tok/s, loss {float(graph[0]['loss']):.3f} -> "
            f"{float(graph[-1]['loss']):.3f}, {seconds:.0f} s")

    def eager():
        records, _ = lcc_run(args, binary, 8, os.path.join(args.out, "gpt2-eager.csv"),
                             ["--no-graph"], timeout=300)
        results["gpt2 lcc eager"] = steady_rate(records, skip=3)

    def half(variant, key, label):
        # variant: the bin's and the CSV's suffix (bf16, bf16-fused)
        records, seconds = lcc_run(args, os.path.join(args.bins, f"gpt2-cuda-{variant}.bin"),
                                   args.gpt2_steps, os.path.join(args.out, f"gpt2-{variant}.csv"),
                                   timeout=300)
        results[key] = steady_rate(records, skip=3)
        row(f"(b) GPT-2 124M lcc {label} (graph)", "ran",
            f"{results[key]:.0f} tok/s, loss {float(records[0]['loss']):.3f} -> "
            f"{float(records[-1]['loss']):.3f}, {seconds:.0f} s")

    check("(b) GPT-2 124M lcc fp32", fp32)
    check("(c) GPT-2 124M lcc --no-graph", eager)
    check("(b) GPT-2 124M lcc bf16", lambda: half("bf16", "gpt2 lcc bf16 graph", "bf16"))
    check("(b) GPT-2 124M lcc bf16 fused attention",
          lambda: half("bf16-fused", "gpt2 lcc bf16 fused graph", "bf16, fused attention"))


def phase_torch(args, results):
    import torch
    from cpu_train_step import flops_per_token, sample_batch, torch_model
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 means fp32, as in lcc
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")

    def peak(dtype):
        a = torch.randn(8192, 8192, device=dev, dtype=dtype)
        b = torch.randn(8192, 8192, device=dev, dtype=dtype)
        for _ in range(3):
            a @ b
        torch.cuda.synchronize()
        t0 = time.time()
        for _ in range(10):
            a @ b
        torch.cuda.synchronize()
        return 10 * 2 * 8192 ** 3 / (time.time() - t0)

    results["peak fp32"] = peak(torch.float32)
    results["peak bf16"] = peak(torch.bfloat16)
    results["flops/token"] = flops_per_token(GPT2)
    data = torch.tensor(list(open(CORPUS, "rb").read()), dtype=torch.long)
    B, T = GPT2["batch"], GPT2["seq"]
    for name, compiled, bf16 in [("eager fp32", False, False), ("compile fp32", True, False),
                                 ("eager bf16", False, True), ("compile bf16", True, True)]:
        if over_budget(args):
            row(f"(b) GPT-2 124M torch {name}", "SKIPPED", f"past the {args.budget} s budget")
            continue
        try:
            p, forward, _ = torch_model(torch, GPT2)
            for k in list(p):
                p[k] = p[k].detach().to(dev).requires_grad_(True)
            decay = [t for t in p.values() if t.dim() >= 2]
            no_decay = [t for t in p.values() if t.dim() < 2]
            opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                                     {"params": no_decay, "weight_decay": 0.0}],
                                    lr=6e-4, betas=(0.9, 0.95), eps=1e-8)
            fn = torch.compile(forward) if compiled else forward
            gen = torch.Generator().manual_seed(7)

            def step():
                tokens, targets = (t.to(dev) for t in sample_batch(torch, data, B, T, gen))
                with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
                    loss = fn(tokens, targets)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(list(p.values()), 1.0)
                opt.step()
                return loss

            for _ in range(3):
                step()
            torch.cuda.synchronize()
            t0 = time.time()
            for _ in range(args.torch_steps):
                loss = step()
            torch.cuda.synchronize()
            results["gpt2 torch " + name] = B * T * args.torch_steps / (time.time() - t0)
            row(f"(b) GPT-2 124M torch {name}", "ran",
                f"{results['gpt2 torch ' + name]:.0f} tok/s, loss {loss.item():.3f}")
            del p, opt, fn
            torch.cuda.empty_cache()
        except Exception as e:  # one variant failing must not hide the others
            row(f"(b) GPT-2 124M torch {name}", "FAILED", str(e).splitlines()[0][:200])


def phase_sanitizer(args, results):
    tool = shutil.which("compute-sanitizer") or next(
        (p for p in [os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin",
                                  "compute-sanitizer"),
                     "/usr/local/cuda/bin/compute-sanitizer"] if os.path.exists(p)), None)
    if not tool:
        row("(d) compute-sanitizer", "SKIPPED", "not installed")
        return

    def sanitize(check, binary, steps):
        log = os.path.join(args.out, f"sanitizer-{check}.csv")
        try:
            _, secs = lcc_run(args, os.path.join(args.bins, binary), steps, log, ["--no-graph"],
                              timeout=150, prefix=[tool, "--tool", check, "--error-exitcode", "9"])
            row(f"(d) {check} {binary}", "PASS", f"{steps} eager steps, {secs:.0f} s, no errors")
        except RuntimeError as e:
            row(f"(d) {check} {binary}", "FAIL", str(e)[:300])

    check("(d) memcheck", lambda: sanitize("memcheck", "gpt-tiny-cuda.bin", 2))
    check("(d) racecheck", lambda: sanitize("racecheck", "gpt-tiny-cuda-bf16-fused.bin", 2))


def over_budget(args):
    """Past the time budget: later phases are skipped so that the table still
    prints before the device tool's limit (verify.sh's build comes first)."""
    return time.time() - START > args.budget


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lcc-run", required=True)
    ap.add_argument("--bins", default=os.path.join(HERE, "bins"))
    ap.add_argument("--out", default="/tmp/lcc-gpu")
    ap.add_argument("--gpt2-steps", type=int, default=20)
    ap.add_argument("--torch-steps", type=int, default=10)
    ap.add_argument("--budget", type=float, default=420,
                    help="seconds after which remaining phases are skipped (the table prints)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    results = {}
    for name, phase in [("gpt-tiny", phase_tiny), ("GPT-2 lcc", phase_gpt2_lcc),
                        ("GPT-2 torch", phase_torch), ("sanitizer", phase_sanitizer)]:
        t0 = time.time()
        if over_budget(args):
            row(name, "SKIPPED", f"past the {args.budget} s budget")
            continue
        try:
            phase(args, results)
        except Exception as e:
            row(f"{name}", "FAILED", str(e).strip()[:400])
        print(f"[verify] phase {name}: {time.time() - t0:.0f} s", flush=True)

    print("\n## lcc GPU verification\n")
    print("| check | result | detail |\n|---|---|---|")
    for check, result, detail in rows:
        print(f"| {check} | {result} | {detail} |")
    fpt = results.get("flops/token")
    print("\n| GPT-2 124M, B=8 T=1024 | tokens/s | MFU | lcc / this (same precision) |\n"
          "|---|---:|---:|---:|")
    # lcc's bf16 is its faster attention (fused or decomposed), as a user would pick.
    bf16_runs = [results[k] for k in ["gpt2 lcc bf16 graph", "gpt2 lcc bf16 fused graph"]
                 if k in results]
    for key in ["gpt2 lcc graph", "gpt2 lcc eager", "gpt2 lcc bf16 graph",
                "gpt2 lcc bf16 fused graph", "gpt2 torch eager fp32", "gpt2 torch compile fp32",
                "gpt2 torch eager bf16", "gpt2 torch compile bf16"]:
        if key not in results:
            print(f"| {key[5:]} | - | - | - |")
            continue
        peak = results.get("peak bf16" if "bf16" in key else "peak fp32")
        mfu = f"{100 * fpt * results[key] / peak:.1f}%" if fpt and peak else "-"
        lcc = (max(bf16_runs) if bf16_runs else None) if "bf16" in key else \
            results.get("gpt2 lcc graph")
        ratio = f"{lcc / results[key]:.2f}x" if lcc else "-"
        print(f"| {key[5:]} | {results[key]:,.0f} | {mfu} | {ratio} |")
    if "peak fp32" in results:
        print(f"\nmeasured GEMM peaks: fp32 {results['peak fp32'] / 1e12:.1f} TFLOP/s, "
              f"bf16 {results['peak bf16'] / 1e12:.1f} TFLOP/s (8192^3)")
    for pair in [("tiny graph", "tiny eager"), ("gpt2 lcc graph", "gpt2 lcc eager")]:
        if all(k in results for k in pair):
            print(f"(c) {pair[0]} vs --no-graph: {results[pair[0]]:,.0f} vs "
                  f"{results[pair[1]]:,.0f} tok/s = {results[pair[0]] / results[pair[1]]:.2f}x")


main()
