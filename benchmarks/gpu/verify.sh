#!/usr/bin/env bash
# The CUDA target's verification, one command on a machine with an NVIDIA GPU
# (docs/cuda.md). Needs CMake, Ninja, a C++17 compiler, the CUDA toolkit's
# headers and PyTorch; not MLIR: the train.bin files come from prepare.sh,
# run on a development machine and carried here with the working tree.
#   benchmarks/gpu/verify.sh            build lcc-run (runtime only), then verify.py
# Output: progress lines, then the table; logs in $OUT (default /tmp/lcc-gpu).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/lcc-gpu}
BUILD=${LCC_GPU_BUILD_DIR:-build-gpu}
mkdir -p "$OUT"
if [ ! -f benchmarks/gpu/bins/gpt-tiny-cuda.bin ]; then
  echo "verify.sh: benchmarks/gpu/bins/ is missing: run benchmarks/gpu/prepare.sh on a" \
       "development machine (it has the compiler) and bring the folder along" >&2
  exit 2
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
start=$(date +%s)
if ! cmake -S . -B "$BUILD" -G Ninja -DLCC_RUNTIME_ONLY=ON -DLCC_REQUIRE_CUDA=ON \
     -DCMAKE_BUILD_TYPE=Release \
     > "$OUT/cmake.log" 2>&1 || ! ninja -C "$BUILD" lcc-run > "$OUT/ninja.log" 2>&1; then
  echo "verify.sh: building lcc-run failed:" >&2
  tail -30 "$OUT/cmake.log" "$OUT/ninja.log" >&2
  exit 3
fi
echo "[verify] built lcc-run (runtime only) in $(( $(date +%s) - start )) s"
python3 benchmarks/gpu/verify.py --lcc-run "$BUILD/bin/lcc-run" --out "$OUT" "$@"
