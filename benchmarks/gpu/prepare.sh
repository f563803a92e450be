#!/usr/bin/env bash
# Compiles what the GPU verification (verify.sh) runs, on this (GPU-less)
# machine: the GPU machine has no MLIR, so it only builds lcc-run and runs
# these train.bin files. Writes benchmarks/gpu/bins/ (git-ignored; carried to
# the GPU machine with the working tree):
#   gpt-tiny-cuda.bin   gpt-tiny for --target=cuda (sm_90)
#   gpt-tiny-cpu.csv    the CPU target's losses for the same 50 steps (the oracle)
#   gpt-tiny-ckpt/, gpt-tiny-cpu-generate.txt
#                       the CPU run's checkpoint and its continuation of a prompt (seeded)
#   gpt2-cuda.bin       GPT-2 124M, batch 8, context 1024, --target=cuda
#   *-bf16.*            the same with --precision=bf16 (the CPU run emulates bf16)
#   gpt-tiny-*-fp16.*   gpt-tiny with --precision=fp16 (loss scaling; CPU emulates f16)
#   *-bf16-fused.*      bf16 with --attention=fused (the GPU's flash kernels; the CPU's
#                       fused kernels give the oracle)
#   gpt-tiny-*-zero3.*  gpt-tiny with --shard=zero3 for 1 rank: the step's collectives
#                       (1-rank copies on the communication stream, events, graph capture)
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${LCC_BUILD_DIR:-build}
OUT=benchmarks/gpu/bins
STEPS=50
mkdir -p "$OUT"
# bf16-fused: --attention=fused (the GPU's flash kernels; the CPU's fused
# kernels give the oracle); the others decomposed (what auto picks for gpt-tiny
# on the CPU and for everything on CUDA, spelled out).
for v in fp32 bf16 fp16 bf16-fused; do
  p=${v%-fused}
  sfx=$([ $v = fp32 ] || echo "-$v")
  flags=(--precision=$p --attention=$([ $v = $p ] && echo decomposed || echo fused) --quiet)
  "$BUILD/bin/lcc" examples/gpt-tiny.lcc "${flags[@]}" -o "$OUT/gpt-tiny-cpu.bin"
  "$BUILD/bin/lcc-run" "$OUT/gpt-tiny-cpu.bin" --data data/kjv-genesis-exodus.txt --steps $STEPS \
    --val-fraction 0 --threads 2 --quiet --csv "$OUT/gpt-tiny-cpu$sfx.csv" \
    $([ $v = fp32 ] && echo --save "$OUT/gpt-tiny-ckpt")
  # fp32: the trained model's continuation on the CPU (sampled with a fixed seed), the oracle of
  # the GPU's generation (@prefill, @decode_step as CUDA graphs).
  if [ $v = fp32 ]; then
    "$BUILD/bin/lcc-run" "$OUT/gpt-tiny-cpu.bin" --resume "$OUT/gpt-tiny-ckpt" --generate \
      --prompt "And God said" --temperature 1 --top-k 0 --top-p 1 --seed 7 --max-tokens 48 > "$OUT/gpt-tiny-cpu-generate.txt"
  fi
  rm "$OUT/gpt-tiny-cpu.bin"
  "$BUILD/bin/lcc" examples/gpt-tiny.lcc --target=cuda "${flags[@]}" -o "$OUT/gpt-tiny-cuda$sfx.bin"
  [ $p = fp16 ] && continue # GPT-2 is timed in fp32 and bf16 (what PyTorch users run)
  "$BUILD/bin/lcc" examples/gpt2-124m.lcc --target=cuda "${flags[@]}" --set batch=8 \
    -o "$OUT/gpt2-cuda$sfx.bin"
done
# One GPU can only run one rank, but the 1-rank ZeRO-3 step still issues its
# collectives (stream forks and joins, device copies) inside the graph.
"$BUILD/bin/lcc" examples/gpt-tiny.lcc --shard=zero3 --world=1 --quiet -o "$OUT/gpt-tiny-cpu.bin"
"$BUILD/bin/lcc-run" "$OUT/gpt-tiny-cpu.bin" --data data/kjv-genesis-exodus.txt --steps $STEPS \
  --val-fraction 0 --threads 2 --quiet --csv "$OUT/gpt-tiny-cpu-zero3.csv"
rm "$OUT/gpt-tiny-cpu.bin"
"$BUILD/bin/lcc" examples/gpt-tiny.lcc --target=cuda --shard=zero3 --world=1 --quiet \
  -o "$OUT/gpt-tiny-cuda-zero3.bin"
ls -la "$OUT"
