#!/usr/bin/env python3
"""Decode tokens/s on CPU: lcc-run --generate against PyTorch eager (transformers' GPT-2 with
its KV cache, the loop model.generate runs) on the same model shape, greedy, 2 threads each.

  python3 benchmarks/cpu_generate.py                  # tiny (gpt-tiny) and gpt2 (124M)
  python3 benchmarks/cpu_generate.py --configs tiny --repeat 5

Both sides start from fresh random weights of the same shapes (decode speed does not depend on
the values) and decode the same number of tokens after the same prompt length; the sides run
interleaved, each figure the median of --repeat runs. Prefill is reported too: lcc's runs over
the whole compiled context (one shape), PyTorch's over the prompt only.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build", "bin")
VENV = os.path.join(ROOT, "benchmarks", ".venv")

# name: (DSL file, lcc flags, transformers GPT2Config, prompt tokens, decoded tokens)
CONFIGS = {
    "tiny": ("examples/gpt-tiny.lcc", [],
             dict(vocab_size=256, n_positions=64, n_embd=64, n_layer=2, n_head=4), 16, 47),
    "gpt2": ("examples/gpt2-124m.lcc", ["--context=256"],
             dict(vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12, n_head=12), 16, 64),
}


def ensure_venv():
    py = os.path.join(VENV, "bin", "python")
    if sys.executable != py:
        if not os.path.exists(py):
            subprocess.check_call([sys.executable, "-m", "venv", VENV])
            subprocess.check_call([py, "-m", "pip", "install", "-q", "torch", "transformers"])
        os.execv(py, [py] + sys.argv)


def run_lcc(binary, vocab, prompt_len, new_tokens):
    prompt = ("x" * prompt_len) if vocab == 256 else " ".join(["50"] * prompt_len)
    out = subprocess.run([os.path.join(BIN, "lcc-run"), binary, "--generate", "--prompt", prompt,
                          "--temperature", "0", "--max-tokens", str(new_tokens + 1),
                          "--threads", "2"], capture_output=True, text=True, errors="replace")
    if out.returncode:
        sys.exit(out.stderr)
    m = re.search(r"prefill: (\d+) tokens in ([\d.]+) ms .*decode: (\d+) tokens in ([\d.]+) ms",
                  out.stderr)
    return float(m.group(2)), int(m.group(3)) / (float(m.group(4)) / 1e3)


def run_torch(model, prompt_len, new_tokens):
    import torch
    ids = torch.full((1, prompt_len), 50 % model.config.vocab_size, dtype=torch.long)
    with torch.no_grad():
        t0 = time.perf_counter()
        out = model(ids, use_cache=True)
        prefill = (time.perf_counter() - t0) * 1e3
        past, token = out.past_key_values, out.logits[:, -1:].argmax(-1)
        t0 = time.perf_counter()
        for _ in range(new_tokens):
            out = model(token, past_key_values=past, use_cache=True)
            past, token = out.past_key_values, out.logits[:, -1:].argmax(-1)
        decode = time.perf_counter() - t0
    return prefill, new_tokens / decode


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--configs", default="tiny,gpt2")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    ensure_venv()
    import warnings
    import torch
    import transformers
    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    torch.set_num_threads(2)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.configs.split(","):
            dsl, flags, cfg, prompt_len, new_tokens = CONFIGS[name]
            binary = os.path.join(tmp, name + ".bin")
            t0 = time.perf_counter()
            subprocess.check_call([os.path.join(BIN, "lcc"), os.path.join(ROOT, dsl), "--quiet",
                                   "-o", binary] + flags)
            compile_s = time.perf_counter() - t0
            config = transformers.GPT2Config(activation_function="gelu_new", **cfg)
            model = transformers.GPT2LMHeadModel(config).eval()
            lcc, ref = [], []
            run_lcc(binary, cfg["vocab_size"], prompt_len, new_tokens)  # warm-up both
            run_torch(model, prompt_len, new_tokens)
            for _ in range(args.repeat):
                lcc.append(run_lcc(binary, cfg["vocab_size"], prompt_len, new_tokens))
                ref.append(run_torch(model, prompt_len, new_tokens))
            med = lambda xs, i: statistics.median(x[i] for x in xs)
            rows.append((name, "lcc", med(lcc, 0), med(lcc, 1), compile_s))
            rows.append((name, "torch eager", med(ref, 0), med(ref, 1), None))
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, 2 threads, "
          f"median of {args.repeat}")
    print("| model | framework | prefill ms | decode tok/s | lcc / this |")
    print("|---|---|---:|---:|---:|")
    for name, fw, prefill, tps, compile_s in rows:
        lcc_tps = next(r[3] for r in rows if r[0] == name and r[1] == "lcc")
        note = f" (compile {compile_s:.1f} s)" if compile_s else ""
        print(f"| {name} | {fw}{note} | {prefill:.1f} | {tps:,.1f} | {lcc_tps / tps:.2f}x |")


if __name__ == "__main__":
    main()
