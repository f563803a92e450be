#!/usr/bin/env python3
"""CPU training throughput: lcc's train.bin against PyTorch, measured in the same run.

For each model config, the same GPT-2 (pre-LN, tanh-GELU, tied embeddings: examples/gpt-tiny.lcc
with config overrides) trains on the same corpus with the same optimizer (AdamW lr 6e-4,
betas 0.9/0.95, wd 0.1 on matrices, clip 1.0):
  - lcc:            `lcc MODEL --set ... -o train.bin`, then `lcc-run` (its tokens/s excludes the
                    compile, which is printed separately);
  - PyTorch eager:  the model written with torch.nn.functional, torch.optim.AdamW;
  - torch.compile:  the same, compiled (skipped, with the reason, if inductor cannot run here).
Tokens/s are measured after warm-up steps (median of --repeat runs); every framework uses all cores (OpenBLAS and
PyTorch's own thread pool). Prints one table; ratios are lcc / other (> 1: lcc is faster).

Needs a built lcc (build/bin). PyTorch comes from PyPI into benchmarks/.venv (ignored by git),
which the script creates on first use (the CPU parts of the wheel only; not needed by CI).
Usage: python3 benchmarks/cpu_train_step.py [--steps 40] [--threads 2] [--repeat 3] [--configs tiny,small,gpt2]
"""
import argparse
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "data", "kjv-genesis-exodus.txt")
MODEL = os.path.join(ROOT, "examples", "gpt-tiny.lcc")

# name -> (model file, config overrides); the PyTorch side builds the same shape.
CONFIGS = {
    "tiny": ("gpt-tiny.lcc", dict(vocab=256, dim=64, heads=4, layers=2, batch=4, seq=32, ctx=64)),
    # The small GPT: vocab 256, ctx 128, dim 128, 4 heads, 4 layers, batch 8.
    "small": ("gpt-tiny.lcc", dict(vocab=256, dim=128, heads=4, layers=4, batch=8, seq=128,
                                   ctx=128)),
    # The GPT-2 124M shape, batch 1, context 1024 (slow on 2 cores: a few steps).
    "gpt2": ("gpt2-124m.lcc", dict(vocab=50257, dim=768, heads=12, layers=12, batch=1, seq=1024,
                                   ctx=1024)),
}
VENV = os.path.join(ROOT, "benchmarks", ".venv")


def ensure_torch():
    """Re-executes this script under benchmarks/.venv, creating it when needed. PyPI's torch
    wheel is the CUDA build: it does not import without its nvidia-* dependencies (even on a
    CPU-only machine), so they are installed too (a few GB, once)."""
    try:
        import torch  # noqa: F401
        return
    except ImportError:
        pass
    python = os.path.join(VENV, "bin", "python")
    # A venv's python is a symlink to the system one: compare prefixes, not binaries.
    if os.path.realpath(sys.prefix) == os.path.realpath(VENV):
        sys.exit("torch is not importable in " + VENV + "; delete it and rerun")
    if not os.path.exists(python):
        print("creating " + VENV + " with torch from PyPI (once)", flush=True)
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
        pip = [python, "-m", "pip", "install", "-q"]
        subprocess.run(pip + ["torch", "numpy"], check=True)
    os.execv(python, [python] + sys.argv)


def flops_per_token(cfg):
    """Training FLOPs per token, forward + backward (the PaLM / nanoGPT estimate): 6 per
    parameter (tied head included once) plus 12 * layers * seq * dim for attention."""
    d, L, V, C = cfg["dim"], cfg["layers"], cfg["vocab"], cfg["ctx"]
    params = V * d + C * d + L * (12 * d * d + 13 * d) + 2 * d
    return 6 * params + 12 * L * cfg["seq"] * d


def sgemm_peak(torch):
    """GFLOP/s of a large float32 GEMM with the same threads: the machine's practical peak."""
    a, b = torch.randn(2048, 2048), torch.randn(2048, 2048)
    for _ in range(2):
        a @ b
    t0 = time.time()
    for _ in range(5):
        a @ b
    return 5 * 2 * 2048 ** 3 / (time.time() - t0) / 1e9


def lcc_run(build, model, cfg, steps, repeat=1):
    overrides = {k: v for k, v in cfg.items() if k != "vocab"}
    sets = ",".join(f"{k}={v}" for k, v in overrides.items())
    with tempfile.TemporaryDirectory() as tmp:
        binary = os.path.join(tmp, "model.bin")
        t0 = time.time()
        subprocess.run([os.path.join(build, "bin", "lcc"), os.path.join(ROOT, "examples", model),
                        "--quiet", f"--set={sets}", "-o", binary], check=True)
        compile_s = time.time() - t0
        # Warm-up run (page-in, BLAS thread start), then the measured one. No validation
        # split: the measured run is training steps only.
        run = [os.path.join(build, "bin", "lcc-run"), binary, "--data", CORPUS,
               "--val-fraction", "0"]
        subprocess.run(run + ["--steps", "2", "--quiet"], check=True, capture_output=True)
        # Peak RSS through GNU time: a child forked from this (torch-sized) process would
        # report this process's peak too (Linux keeps ru_maxrss across fork + exec).
        timer = ["/usr/bin/time", "-f", "lcc-run-maxrss-kb %M"] if os.path.exists(
            "/usr/bin/time") else []
        rates, rss = [], 0
        for _ in range(repeat):
            done = subprocess.run(timer + run + ["--steps", str(steps)], check=True,
                                  capture_output=True, text=True)
            out = done.stdout
            kb = re.search(r"lcc-run-maxrss-kb ([0-9]+)", done.stderr)
            rss = max(rss, int(kb.group(1)) * 1024 if kb else 0)
            rates.append(float(re.search(r"\(([0-9.]+) tokens/s\)", out).group(1)))
    plan = re.search(r"memory: plan ([0-9]+) bytes", out)
    return statistics.median(rates), compile_s, int(plan.group(1)) if plan else 0, rss


def torch_model(torch, cfg):
    F = torch.nn.functional
    V, C, D, H, L = cfg["vocab"], cfg["ctx"], cfg["dim"], cfg["heads"], cfg["layers"]
    B, T = cfg["batch"], cfg["seq"]
    g = torch.Generator().manual_seed(1337)
    p = {"wte": torch.randn(V, D, generator=g) * 0.02, "wpe": torch.randn(C, D, generator=g) * 0.02}
    for h in range(L):
        q = f"h.{h}."
        for n, shape in [("attn.c_attn.weight", (D, 3 * D)), ("attn.c_proj.weight", (D, D)),
                         ("mlp.c_fc.weight", (D, 4 * D)), ("mlp.c_proj.weight", (4 * D, D))]:
            p[q + n] = torch.randn(*shape, generator=g) * 0.02
        for n, size in [("attn.c_attn.bias", 3 * D), ("attn.c_proj.bias", D),
                        ("mlp.c_fc.bias", 4 * D), ("mlp.c_proj.bias", D),
                        ("ln_1.bias", D), ("ln_2.bias", D)]:
            p[q + n] = torch.zeros(size)
        p[q + "ln_1.weight"] = torch.ones(D)
        p[q + "ln_2.weight"] = torch.ones(D)
    p["ln_f.weight"], p["ln_f.bias"] = torch.ones(D), torch.zeros(D)
    for t in p.values():
        t.requires_grad_(True)

    def forward(tokens, targets):
        x = p["wte"][tokens] + p["wpe"][:T]
        for h in range(L):
            q = f"h.{h}."
            a = F.layer_norm(x, [D], p[q + "ln_1.weight"], p[q + "ln_1.bias"], 1e-5)
            qkv = a @ p[q + "attn.c_attn.weight"] + p[q + "attn.c_attn.bias"]
            qq, kk, vv = (t.reshape(B, T, H, D // H).transpose(1, 2) for t in qkv.split(D, -1))
            y = F.scaled_dot_product_attention(qq, kk, vv, is_causal=True)
            y = y.transpose(1, 2).reshape(B, T, D)
            x = x + y @ p[q + "attn.c_proj.weight"] + p[q + "attn.c_proj.bias"]
            m = F.layer_norm(x, [D], p[q + "ln_2.weight"], p[q + "ln_2.bias"], 1e-5)
            m = F.gelu(m @ p[q + "mlp.c_fc.weight"] + p[q + "mlp.c_fc.bias"], approximate="tanh")
            x = x + m @ p[q + "mlp.c_proj.weight"] + p[q + "mlp.c_proj.bias"]
        x = F.layer_norm(x, [D], p["ln_f.weight"], p["ln_f.bias"], 1e-5)
        return F.cross_entropy((x @ p["wte"].T).reshape(-1, V), targets.reshape(-1))

    decay = [t for n, t in p.items() if t.dim() >= 2]
    no_decay = [t for n, t in p.items() if t.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=6e-4, betas=(0.9, 0.95), eps=1e-8)
    return p, forward, opt


def sample_batch(torch, data, B, T, gen):
    """B random windows of T tokens from `data` and their next-token targets."""
    starts = torch.randint(0, len(data) - T - 1, (B,), generator=gen)
    tokens = torch.stack([data[s:s + T] for s in starts])
    targets = torch.stack([data[s + 1:s + T + 1] for s in starts])
    return tokens, targets


def torch_run(torch, cfg, steps, compiled, repeat=1):
    p, forward, opt = torch_model(torch, cfg)
    V = cfg["vocab"]
    data = torch.tensor(list(open(CORPUS, "rb").read()), dtype=torch.long) % V
    B, T = cfg["batch"], cfg["seq"]
    gen = torch.Generator().manual_seed(7)
    step_fn = forward
    if compiled:
        step_fn = torch.compile(forward)

    def step():
        loss = step_fn(*sample_batch(torch, data, B, T, gen))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(p.values()), 1.0)
        opt.step()
        return loss.item()

    for _ in range(5):  # warm-up (and compilation)
        step()
    rates = []
    for _ in range(repeat):
        t0 = time.time()
        for _ in range(steps):
            loss = step()
        rates.append(B * T * steps / (time.time() - t0))
    return statistics.median(rates), loss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--configs", default="tiny,small")
    ap.add_argument("--repeat", type=int, default=3,
                    help="measured runs per framework; the median is printed")
    args = ap.parse_args()
    # Same threads for everyone: lcc's pool (runtime/cpu/Parallel.h; its GEMMs run
    # single-threaded OpenBLAS inside it) and PyTorch's pool.
    os.environ["LCC_NUM_THREADS"] = str(args.threads)
    os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    ensure_torch()
    import resource
    import torch
    torch.set_num_threads(args.threads)
    peak = sgemm_peak(torch)
    print(f"CPU: {os.cpu_count()} cores, {args.threads} threads; torch {torch.__version__}; "
          f"sgemm peak {peak:.1f} GFLOP/s; median of {args.repeat} runs of {args.steps} "
          f"steps (tiny: 10x, gpt2: 1/10, at least 3)", flush=True)
    rows = []
    for name in args.configs.split(","):
        model, cfg = CONFIGS[name]
        # tiny's step takes milliseconds: 10x the steps, so that a measured run lasts
        # long enough (~1 s) for a scheduling hiccup not to decide the result.
        steps = {"tiny": 10 * args.steps, "gpt2": max(3, args.steps // 10)}.get(name, args.steps)
        tokens = cfg["batch"] * cfg["seq"]
        lcc_tps, compile_s, lcc_mem, lcc_rss = lcc_run(args.build, model, cfg, steps, args.repeat)
        eager_tps, _ = torch_run(torch, cfg, steps, False, args.repeat)
        torch_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        try:
            comp_tps, _ = torch_run(torch, cfg, steps, True, args.repeat)
        except Exception as e:  # inductor needs a C++ toolchain; report, don't fail
            comp_tps = None
            print(f"  torch.compile unavailable: {type(e).__name__}", flush=True)
        rows.append((name, cfg, tokens, lcc_tps, compile_s, lcc_mem, lcc_rss, eager_tps,
                     torch_rss, comp_tps))
        print(f"  {name}: done", flush=True)
    print()
    print(f"{'model':6} {'config':34} {'framework':14} {'ms/step':>9} {'tok/s':>9} "
          f"{'GFLOP/s':>8} {'%peak':>6} {'memory':>20} {'lcc/this':>9}")
    for name, cfg, tokens, lcc_tps, compile_s, lcc_mem, lcc_rss, eager_tps, torch_rss, comp_tps in rows:
        desc = "V{vocab} d{dim} h{heads} L{layers} B{batch} T{seq}".format(**cfg)
        fpt = flops_per_token(cfg)
        entries = [("lcc", lcc_tps, f"plan {lcc_mem / 2**20:.1f} MiB, rss {lcc_rss / 2**20:.0f} MiB"
                    if lcc_rss else f"plan {lcc_mem / 2**20:.1f} MiB"),
                   ("torch eager", eager_tps, f"rss {torch_rss / 2**20:.0f} MiB (process)"),
                   ("torch.compile", comp_tps, "")]
        for fw, tps, mem in entries:
            if tps is None:
                print(f"{name:6} {desc:34} {fw:14} {'n/a':>9}")
                continue
            gflops = tps * fpt / 1e9
            print(f"{name:6} {desc:34} {fw:14} {1000 * tokens / tps:9.1f} {tps:9.0f} "
                  f"{gflops:8.2f} {100 * gflops / peak:5.1f}% {mem:>20} {lcc_tps / tps:8.2f}x")
        print(f"{name:6} {'':34} {'lcc compile':14} {compile_s:8.1f}s")


if __name__ == "__main__":
    main()
