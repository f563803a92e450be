#!/usr/bin/env python3
"""Upstream one-shot bufferization's cost per func.call grows with the square of the call's
operand count (issue 21: the step's layer calls pass 20-60 buffers each).

A reproducer for MLIR 22's `one-shot-bufferize{bufferize-function-boundaries}`, without anything
of lcc's but lcc-opt as a plain mlir-opt: @main makes N calls of @f, a function of K tensor
arguments that updates each in place and returns it; each call gets K fresh `tensor.empty`
destinations ("independent"), or the previous call's results ("chain"). Prints the pass's time
(lcc-opt --mlir-timing) per (pattern, N, K).

What a profile shows (perf, Debian's release build): most of the time is in the func::CallOp
model of FuncBufferizableOpInterfaceImpl.cpp and in malloc/free/memmove: each query
(bufferizesToMemoryRead/Write, getAliasingValues; asked per operand, many times during the
conflict analysis) looks the callee up by symbol and copies the callee's whole per-argument
set or map out of FuncAnalysisState (`readBbArgs.lookup(funcOp)`, `aliasingReturnVals.lookup(
funcOp)` return copies), so a call costs O(K) per query and O(K^2) in all. "chain" adds the
conflict analysis over alias sets that grow along the chain (superlinear in N).

  python3 benchmarks/bufferize_calls.py [--lcc-opt build/bin/lcc-opt]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
T = "tensor<64xf32>"


def module(n, k, chain):
    types = ", ".join([T] * k)
    lines = [f"func.func private @f({', '.join(f'%a{i}: {T}' for i in range(k))}) -> ({types}) {{"]
    for i in range(k):
        lines.append(
            f"  %r{i} = linalg.generic {{indexing_maps = [affine_map<(d) -> (d)>], "
            f"iterator_types = [\"parallel\"]}} outs(%a{i} : {T}) {{\n"
            f"  ^bb0(%x: f32):\n    %y = arith.addf %x, %x : f32\n    linalg.yield %y : f32\n"
            f"  }} -> {T}")
    lines.append(f"  return {', '.join(f'%r{i}' for i in range(k))} : {types}\n}}")
    lines.append(f"func.func @main({', '.join(f'%m{i}: {T}' for i in range(k))}) -> ({types}) {{")
    current = [f"%m{i}" for i in range(k)]
    for c in range(n):
        if not chain:
            for i in range(k):
                lines.append(f"  %e{c}_{i} = tensor.empty() : {T}")
            current = [f"%e{c}_{i}" for i in range(k)]
        lines.append(f"  %c{c}:{k} = call @f({', '.join(current)}) : ({types}) -> ({types})")
        current = [f"%c{c}#{i}" for i in range(k)]
    lines.append(f"  return {', '.join(current)} : {types}\n}}")
    return "\n".join(lines) + "\n"


def seconds(lcc_opt, text):
    with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as f:
        f.write(text)
    try:
        done = subprocess.run([lcc_opt, f.name, "--mlir-timing", "-o", "/dev/null",
                               "--pass-pipeline=builtin.module(one-shot-bufferize{"
                               "bufferize-function-boundaries=true})"],
                              capture_output=True, text=True, check=True)
    finally:
        os.unlink(f.name)
    m = re.search(r"([0-9.]+) \([ 0-9.]+%\)\s+OneShotBufferizePass", done.stderr)
    return float(m.group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lcc-opt", default=os.path.join(ROOT, "build", "bin", "lcc-opt"))
    args = parser.parse_args()
    print("| pattern | calls N | operands K | one-shot-bufferize s |\n|---|---:|---:|---:|")
    for chain, n, k in [(False, 200, 10), (False, 200, 20), (False, 200, 40), (False, 200, 80),
                        (False, 100, 40), (False, 400, 40),
                        (True, 50, 10), (True, 100, 10), (True, 200, 10)]:
        s = seconds(args.lcc_opt, module(n, k, chain))
        print(f"| {'chain' if chain else 'independent'} | {n} | {k} | {s:.3f} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
