#!/usr/bin/env python3
"""CPU training throughput: lcc's train.bin against PyTorch, measured in the same run.

For each model config, the same GPT-2 (pre-LN, tanh-GELU, tied embeddings: examples/gpt-tiny.lcc
with config overrides) trains on the same corpus with the same optimizer (AdamW lr 6e-4,
betas 0.9/0.95, wd 0.1 on matrices, clip 1.0):
  - lcc:            `lcc MODEL --set ... -o train.bin`, then `lcc-run` (its tokens/s excludes the
                    compile, which is printed separately);
  - PyTorch eager:  the model written with torch.nn.functional, torch.optim.AdamW;
  - torch.compile:  the same, compiled (skipped, with the reason, if inductor cannot run here).
Tokens/s are measured after warm-up steps; every framework uses all cores (OpenBLAS and
PyTorch's own thread pool). Prints one table; ratios are lcc / other (> 1: lcc is faster).

Needs: a built lcc (build/bin), python3 with torch (PyPI; not needed by CI).
Usage: python3 benchmarks/cpu_train_step.py [--steps 60] [--build build] [--configs tiny,small]
"""
import argparse
import math
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "data", "kjv-genesis-exodus.txt")
MODEL = os.path.join(ROOT, "examples", "gpt-tiny.lcc")

# name -> overrides of examples/gpt-tiny.lcc's config (vocab 256, ctx 64 unless given)
CONFIGS = {
    "tiny": dict(dim=64, heads=4, layers=2, batch=4, seq=32, ctx=64),
    "small": dict(dim=128, heads=4, layers=4, batch=8, seq=64, ctx=64),
    "medium": dict(dim=256, heads=8, layers=4, batch=8, seq=128, ctx=128),
}


def lcc_run(build, cfg, steps):
    sets = ",".join(f"{k}={v}" for k, v in cfg.items())
    with tempfile.TemporaryDirectory() as tmp:
        binary = os.path.join(tmp, "model.bin")
        t0 = time.time()
        subprocess.run([os.path.join(build, "bin", "lcc"), MODEL, "--quiet", f"--set={sets}",
                        "-o", binary], check=True)
        compile_s = time.time() - t0
        # Warm-up run (page-in, BLAS thread start), then the measured one.
        # No validation split: the measured run is training steps only.
        run = [os.path.join(build, "bin", "lcc-run"), binary, "--data", CORPUS, "--quiet",
               "--val-fraction", "0"]
        subprocess.run(run + ["--steps", "3"], check=True, capture_output=True)
        out = subprocess.run(run + ["--steps", str(steps)], check=True, capture_output=True,
                             text=True).stdout
    m = re.search(r"\(([0-9.]+) tokens/s\), final loss ([0-9.]+)", out)
    return float(m.group(1)), float(m.group(2)), compile_s


def torch_model(torch, cfg):
    F = torch.nn.functional
    V, C, D, H, L = 256, cfg["ctx"], cfg["dim"], cfg["heads"], cfg["layers"]
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


def torch_run(torch, cfg, steps, compiled):
    p, forward, opt = torch_model(torch, cfg)
    data = torch.tensor(list(open(CORPUS, "rb").read()), dtype=torch.long)
    B, T = cfg["batch"], cfg["seq"]
    gen = torch.Generator().manual_seed(7)
    step_fn = forward
    if compiled:
        step_fn = torch.compile(forward)

    def step():
        starts = torch.randint(0, len(data) - T - 1, (B,), generator=gen)
        tokens = torch.stack([data[s:s + T] for s in starts])
        targets = torch.stack([data[s + 1:s + T + 1] for s in starts])
        loss = step_fn(tokens, targets)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(p.values()), 1.0)
        opt.step()
        return loss.item()

    for _ in range(5):  # warm-up (and compilation)
        step()
    t0 = time.time()
    for _ in range(steps):
        loss = step()
    return B * T * steps / (time.time() - t0), loss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--configs", default="tiny,small")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        sys.exit("benchmarks need torch (pip install torch); lcc itself does not")
    print(f"CPU: {os.cpu_count()} cores, torch {torch.__version__} ({torch.get_num_threads()} "
          f"threads), {args.steps} measured steps per run", flush=True)
    rows = []
    for name in args.configs.split(","):
        cfg = CONFIGS[name]
        lcc_tps, lcc_loss, compile_s = lcc_run(args.build, cfg, args.steps)
        eager_tps, _ = torch_run(torch, cfg, args.steps, compiled=False)
        try:
            comp_tps, _ = torch_run(torch, cfg, args.steps, compiled=True)
            comp = f"{comp_tps:10.0f}"
            comp_ratio = f"{lcc_tps / comp_tps:5.2f}x"
        except Exception as e:  # inductor needs a C++ toolchain; report, don't fail
            comp, comp_ratio = "    n/a   ", f"n/a ({type(e).__name__})"
        rows.append((name, cfg, lcc_tps, compile_s, eager_tps, comp, comp_ratio))
        print(f"  {name}: done", flush=True)
    print()
    print(f"{'model':8} {'config':42} {'lcc tok/s':>10} {'compile':>8} {'eager tok/s':>11} "
          f"{'lcc/eager':>9} {'compiled tok/s':>14} {'lcc/compiled':>12}")
    for name, cfg, lcc_tps, compile_s, eager_tps, comp, comp_ratio in rows:
        desc = "d{dim} h{heads} L{layers} B{batch} T{seq}".format(**cfg)
        print(f"{name:8} {desc:42} {lcc_tps:10.0f} {compile_s:7.1f}s {eager_tps:11.0f} "
              f"{lcc_tps / eager_tps:8.2f}x {comp:>14} {comp_ratio:>12}")


if __name__ == "__main__":
    main()
