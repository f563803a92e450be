#!/usr/bin/env python3
"""Decode tokens/s on CPU: lcc-run --generate against PyTorch eager (transformers' model with
its KV cache, the loop model.generate runs) on the same model shape, greedy, 2 threads each, and
against llama.cpp (llama-cpp-python from PyPI, which builds it) for the LLaMA shape.

  python3 benchmarks/cpu_generate.py                  # tiny (gpt-tiny), gpt2 (124M), llama (162M)
  python3 benchmarks/cpu_generate.py --configs tiny --repeat 5

Both sides start from fresh random weights of the same shapes (decode speed does not depend on
the values) and decode the same number of tokens after the same prompt length; the sides run
interleaved, each figure the median of --repeat runs. Prefill is reported too: lcc's runs over
the shortest compiled prefill that holds the prompt (with the default --prefill-lengths, 16
positions for these 16-token prompts), PyTorch's and llama.cpp's over the prompt.
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

# name: (DSL file, lcc flags, transformers config, prompt tokens, decoded tokens)
CONFIGS = {
    "tiny": ("examples/gpt-tiny.lcc", [],
             dict(model_type="gpt2", vocab_size=256, n_positions=64, n_embd=64, n_layer=2,
                  n_head=4), 16, 47),
    "gpt2": ("examples/gpt2-124m.lcc", ["--context=256"],
             dict(model_type="gpt2", vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12,
                  n_head=12), 16, 64),
    # GPT-2's sizes as a LLaMA (RMSNorm, RoPE, SwiGLU 2048 wide, untied head: 162M
    # parameters), the architecture llama.cpp's converter takes with a SentencePiece tokenizer.
    "llama": ("examples/llama-tiny.lcc",
              ["--set", "vocab=50257,dim=768,heads=12,kv_heads=12,n_layers=12,hidden=2048,seq=256"],
              dict(model_type="llama", vocab_size=50257, hidden_size=768, intermediate_size=2048,
                   num_hidden_layers=12, num_attention_heads=12, num_key_value_heads=12,
                   max_position_embeddings=256, rms_norm_eps=1e-5, tie_word_embeddings=False),
              16, 64),
}
LLAMA_CPP = "llama-cpp-python==0.3.36"


def ensure_venv():
    py = os.path.join(VENV, "bin", "python")
    if sys.executable != py:
        if not os.path.exists(py):
            subprocess.check_call([sys.executable, "-m", "venv", VENV])
            subprocess.check_call([py, "-m", "pip", "install", "-q", "torch", "transformers",
                                   "sentencepiece", LLAMA_CPP])
        os.execv(py, [py] + sys.argv)


def llama_cpp_model(binary, tmp):
    """The train.bin's fresh weights as a GGUF file (lcc-run --export-hf, then llama.cpp's own
    convert_hf_to_gguf.py from the llama-cpp-python source), or None without llama-cpp-python."""
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        return None
    src = os.path.join(VENV, "llama-cpp-src")
    if not os.path.isdir(src):
        subprocess.check_call([os.path.join(VENV, "bin", "pip"), "download", "-q", "--no-deps",
                               "--no-binary", ":all:", LLAMA_CPP, "-d", src])
        subprocess.check_call(["tar", "-xzf", next(os.path.join(src, f) for f in os.listdir(src)),
                               "-C", src])
    top = next(os.path.join(src, d) for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
    conv = os.path.join(top, "vendor", "llama.cpp")
    hf = os.path.join(tmp, "llama-hf")
    subprocess.check_call([os.path.join(BIN, "lcc-run"), binary, "--steps", "0", "--quiet", "--data",
                           os.path.join(ROOT, "data", "kjv-genesis-exodus.txt"), "--export-hf", hf])
    # Any SentencePiece model does: the converter pads its vocabulary to the model's.
    subprocess.check_call(["cp", os.path.join(ROOT, "test", "fixtures", "spm", "kjv-512.model"),
                           os.path.join(hf, "tokenizer.model")])
    gguf = os.path.join(tmp, "llama.gguf")
    env = dict(os.environ, PYTHONPATH=os.path.join(conv, "gguf-py") + ":" + conv)
    subprocess.check_call([sys.executable, os.path.join(conv, "convert_hf_to_gguf.py"), hf,
                           "--outfile", gguf, "--outtype", "f32"], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return gguf


def run_llama_cpp(llm, prompt_len, new_tokens):
    prompt = [50] * prompt_len
    times = []
    t0 = time.perf_counter()
    for _ in llm.generate(prompt, temp=0.0, top_k=1, top_p=1.0, repeat_penalty=1.0, reset=True):
        times.append(time.perf_counter())
        if len(times) == new_tokens + 1:
            break
    # The first token comes after the prompt's evaluation (prefill).
    return (times[0] - t0) * 1e3, new_tokens / (times[-1] - times[0])


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
    ap.add_argument("--configs", default="tiny,gpt2,llama")
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
            cfg = dict(cfg)
            kind = cfg.pop("model_type")
            if kind == "gpt2":
                model = transformers.GPT2LMHeadModel(
                    transformers.GPT2Config(activation_function="gelu_new", **cfg))
            else:
                model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**cfg))
            model.eval()
            llm = None
            if kind == "llama" and (gguf := llama_cpp_model(binary, tmp)):
                import llama_cpp
                llm = llama_cpp.Llama(model_path=gguf, n_ctx=cfg["max_position_embeddings"],
                                      n_threads=2, n_threads_batch=2, verbose=False)
            lcc, ref, cpp = [], [], []
            run_lcc(binary, cfg["vocab_size"], prompt_len, new_tokens)  # warm-up everyone
            run_torch(model, prompt_len, new_tokens)
            if llm:
                run_llama_cpp(llm, prompt_len, new_tokens)
            for _ in range(args.repeat):
                lcc.append(run_lcc(binary, cfg["vocab_size"], prompt_len, new_tokens))
                ref.append(run_torch(model, prompt_len, new_tokens))
                if llm:
                    cpp.append(run_llama_cpp(llm, prompt_len, new_tokens))
            med = lambda xs, i: statistics.median(x[i] for x in xs)
            rows.append((name, "lcc", med(lcc, 0), med(lcc, 1), compile_s))
            rows.append((name, "torch eager", med(ref, 0), med(ref, 1), None))
            if cpp:
                rows.append((name, "llama.cpp (f32)", med(cpp, 0), med(cpp, 1), None))
            del model, llm
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
