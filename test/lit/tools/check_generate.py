#!/usr/bin/env python3
"""Compares lcc-run --generate's output (a byte-level model's text: the prompt's bytes, the
continuation's, a newline; a token-id model's ids, space-separated, where the reference has
"format": "ids") with transformers' greedy continuation in test/fixtures/hf/generate.json
(make_generate_reference.py) or test/fixtures/onnx/hf/generate.json (make_hf_models.py).

  check_generate.py REFERENCE.json MODEL OUTPUT
"""
import json
import sys


def main():
    ref_path, model, out_path = sys.argv[1:4]
    ref = json.load(open(ref_path))[model]
    got = open(out_path, "rb").read()
    want = bytes(ref["prompt"] + ref["tokens"]) + b"\n"
    if ref.get("format") == "ids":
        got = [int(t) for t in got.split()]
        want = ref["prompt"] + ref["tokens"]
    if got != want:
        n = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]),
                 min(len(got), len(want)))
        print(f"{model}: lcc-run's tokens differ from transformers' from position {n}: "
              f"got {list(got[n:n + 8])}, want {list(want[n:n + 8])}")
        sys.exit(1)
    print(f"{model}: {len(ref['tokens'])} tokens as transformers generates them")


if __name__ == "__main__":
    main()
