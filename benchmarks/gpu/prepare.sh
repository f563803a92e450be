#!/usr/bin/env bash
# Compiles what the GPU verification (verify.sh) runs, on this (GPU-less)
# machine: the GPU machine has no MLIR, so it only builds lcc-run and runs
# these train.bin files. Writes benchmarks/gpu/bins/ (git-ignored; carried to
# the GPU machine with the working tree):
#   gpt-tiny-cuda.bin   gpt-tiny for --target=cuda (sm_90)
#   gpt-tiny-cpu.csv    the CPU target's losses for the same 50 steps (the oracle)
#   gpt2-cuda.bin       GPT-2 124M, batch 8, context 1024, --target=cuda
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${LCC_BUILD_DIR:-build}
OUT=benchmarks/gpu/bins
STEPS=50
mkdir -p "$OUT"
"$BUILD/bin/lcc" examples/gpt-tiny.lcc --quiet -o "$OUT/gpt-tiny-cpu.bin"
"$BUILD/bin/lcc-run" "$OUT/gpt-tiny-cpu.bin" --data data/kjv-genesis-exodus.txt --steps $STEPS \
  --val-fraction 0 --threads 2 --quiet --csv "$OUT/gpt-tiny-cpu.csv"
rm "$OUT/gpt-tiny-cpu.bin"
"$BUILD/bin/lcc" examples/gpt-tiny.lcc --target=cuda --quiet -o "$OUT/gpt-tiny-cuda.bin"
"$BUILD/bin/lcc" examples/gpt2-124m.lcc --target=cuda --set batch=8 --quiet -o "$OUT/gpt2-cuda.bin"
ls -la "$OUT"
