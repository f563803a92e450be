#!/usr/bin/env bash
# lcc developer entry point. On a fresh Debian 12 machine (root):
#   ./dev.sh demo   install dependencies, build, compile examples/gpt-tiny.lcc into a train.bin,
#                   train it on CPU on the shipped corpus (data/) and print a sample from it
#   ./dev.sh test   install dependencies, build, run every test (ctest: lit + GoogleTest)
#   ./dev.sh sanitize  the same tests built with ASan + UBSan, in build-asan/ (docs/reliability.md)
#   ./dev.sh tsan      the runtime, its tests and training runs in every mode under TSan
#                      (build-thread/; `test` runs this and the same under ASan + UBSan)
# All are idempotent: a second run only rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")"

BUILD_DIR=${LCC_BUILD_DIR:-build}
JOBS=${LCC_JOBS:-$(nproc)}

# Debian packages the build and the tests need (see ../shared/TOOLCHAIN.md).
PACKAGES=(cmake ninja-build ccache clang-22 lld-22 llvm-22-dev llvm-22-tools libmlir-22-dev
          mlir-22-tools libabsl-dev libgtest-dev libgmock-dev libpng-dev python3 libsentencepiece-dev sentencepiece
          libopenblas-dev libgloo-dev protobuf-compiler libprotobuf-dev libonnx-dev libonnx-testdata)

install_deps() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "dev.sh: installing ${missing[*]}"
    local sudo=""; [[ $(id -u) -ne 0 ]] && sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

build() {
  if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
    cmake -G Ninja -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
      -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
      -DLLVM_USE_LINKER=lld -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
      -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit ${LCC_CMAKE_ARGS:-}
  fi
  # Targets, if given: the demo builds only the two tools it runs (152 of
  # the 242 compile steps: no tests, no lcc-opt), the tests build everything.
  CCACHE_BASEDIR="$PWD" ninja -C "$BUILD_DIR" -j "$JOBS" "$@"
}

# The runtime and lcc-run alone (no MLIR: minutes to build), instrumented
# with the sanitizers $1 names, in build-<name>/: the runtime's and the
# collectives' unit tests, then training runs in every parallel mode
# (test/sanitize/runs.sh) with train.bins the normal build's lcc compiles.
# Under `thread` these exercise the thread pool, the communication thread,
# the launcher and Gloo; under `address,undefined` the runtime's memory.
runtime_sanitized() {
  local dir=${LCC_SANITIZED_DIR:-build-${1//,/-}}
  if [[ ! -f "$dir/build.ninja" ]]; then
    cmake -G Ninja -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
      -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
      -DLCC_RUNTIME_ONLY=ON -DLCC_ENABLE_SANITIZERS=ON "-DLCC_SANITIZERS=$1" >/dev/null
  fi
  CCACHE_BASEDIR="$PWD" ninja -C "$dir" -j "$JOBS"
  (
    export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-22/bin/llvm-symbolizer
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
    export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/test/sanitize/tsan.supp}
    "$dir/bin/lcc-runtime-test" --gtest_brief=1
    # One process per test: the tests fork their ranks, and TSan cannot
    # follow a fork of a process whose earlier tests left threads behind.
    local t
    for t in $("$dir/bin/lcc-dist-test" --gtest_list_tests | awk '/^[^ ]/ {s=$1} /^  / {print s $1}'); do
      "$dir/bin/lcc-dist-test" --gtest_brief=1 --gtest_filter="$t" >/dev/null || {
        "$dir/bin/lcc-dist-test" --gtest_filter="$t"; return 1; }
    done
    test/sanitize/runs.sh "$BUILD_DIR/bin/lcc" "$dir/bin/lcc-run"
  )
}

case "${1:-}" in
  demo)
    install_deps; build lcc lcc-run
    # The main job: compile the built-in model into one train.bin, then train
    # it on the built-in corpus (public-domain KJV text, data/README.md).
    "$BUILD_DIR/bin/lcc" examples/gpt-tiny.lcc -o "$BUILD_DIR/gpt-tiny.bin"
    "$BUILD_DIR/bin/lcc-run" "$BUILD_DIR/gpt-tiny.bin" --data data/kjv-genesis-exodus.txt \
      --steps 300 --log-every 25 --eval-every 100 --csv "$BUILD_DIR/gpt-tiny.csv" \
      --plot "$BUILD_DIR/gpt-tiny-loss.png" --save "$BUILD_DIR/gpt-tiny-ckpt" --save-every 100 \
      --export "$BUILD_DIR/gpt-tiny.safetensors" --tensorboard "$BUILD_DIR/gpt-tiny-tb" \
      --export-hf "$BUILD_DIR/gpt-tiny-hf"
    # And what it learned: a sample from the trained model (docs/generate.md).
    "$BUILD_DIR/bin/lcc-run" "$BUILD_DIR/gpt-tiny.bin" --resume "$BUILD_DIR/gpt-tiny-ckpt" \
      --generate --prompt "And God said" --max-tokens 48
    ;;
  test)
    install_deps; build
    ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS"
    # The runtime under ASan + UBSan and under TSan (docs/reliability.md;
    # the whole suite under ASan is ./dev.sh sanitize).
    if [[ -z "${LCC_SKIP_SANITIZERS:-}" ]]; then
      runtime_sanitized address,undefined
      runtime_sanitized thread
    fi
    ;;
  sanitize)
    # Compiled train.bin code is not instrumented; the compiler, runtime,
    # tools and tests are. Leak checking is on: the tools free what they own.
    install_deps
    BUILD_DIR=${LCC_SANITIZE_DIR:-build-asan}
    LCC_CMAKE_ARGS="-DLCC_ENABLE_SANITIZERS=ON ${LCC_CMAKE_ARGS:-}" build
    export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-22/bin/llvm-symbolizer
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:detect_stack_use_after_return=0}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
    ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS" "${@:2}"
    ;;
  tsan)
    install_deps; build lcc
    runtime_sanitized thread
    ;;
  *)
    echo "usage: ./dev.sh demo | test | sanitize | tsan" >&2; exit 2 ;;
esac
