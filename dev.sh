#!/usr/bin/env bash
# lcc developer entry point. On a fresh Debian 12 machine (root):
#   ./dev.sh demo   install dependencies, build, compile examples/gpt-tiny.lcc and run it on CPU
#   ./dev.sh test   install dependencies, build, run every test (ctest: lit + GoogleTest)
# Both are idempotent: a second run only rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")"

BUILD_DIR=${LCC_BUILD_DIR:-build}
JOBS=${LCC_JOBS:-$(nproc)}

# Debian packages the build and the tests need (see ../shared/TOOLCHAIN.md).
PACKAGES=(cmake ninja-build ccache clang-22 lld-22 llvm-22-dev llvm-22-tools libmlir-22-dev
          mlir-22-tools libabsl-dev libgtest-dev libgmock-dev python3)

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
  CCACHE_BASEDIR="$PWD" ninja -C "$BUILD_DIR" -j "$JOBS"
}

case "${1:-}" in
  demo)
    install_deps; build
    "$BUILD_DIR/bin/lcc" examples/gpt-tiny.lcc --run-forward
    ;;
  test)
    install_deps; build
    ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS"
    ;;
  *)
    echo "usage: ./dev.sh demo | test" >&2; exit 2 ;;
esac
