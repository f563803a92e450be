#!/usr/bin/env bash
# Trains small models with a sanitizer build of lcc-run (dev.sh runtime_sanitized):
# one process with the thread pool, and ranks of every parallel mode (the
# launcher, Gloo, the communication thread that runs started collectives),
# plus the paths that stop a run early: a preemption signal, a dead rank.
# Any report fails the run (halt_on_error: TSan races, UBSan; ASan always).
#   test/sanitize/runs.sh LCC LCC_RUN
set -euo pipefail
LCC=$1 RUN=$2
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DATA=$ROOT/data/kjv-genesis-exodus.txt
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

compile() { "$LCC" "$ROOT/examples/gpt-tiny.lcc" --quiet --set layers=4 "$@"; }
train() { # NAME RANKS THREADS [lcc-run flags]
  local name=$1 ranks=$2 threads=$3
  shift 3
  local n=()
  ((ranks > 1)) && n=(-n "$ranks")
  echo "runs: $name ($ranks ranks, $threads threads)"
  "$RUN" "${n[@]}" "$OUT/$name.bin" --data "$DATA" --threads "$threads" --quiet "$@"
}

compile -o "$OUT/one.bin"
compile --set batch=2 --shard=dp --world=2 -o "$OUT/dp.bin"
compile --set batch=2 --shard=zero1 --world=2 -o "$OUT/zero1.bin"
compile --set batch=2 --shard=zero2 --world=2 -o "$OUT/zero2.bin"
compile --set batch=2 --shard=zero3 --world=2 -o "$OUT/zero3.bin"
compile --tp=2 -o "$OUT/tp.bin"
compile --pp=2 --microbatches=4 -o "$OUT/pp.bin"
compile --set batch=2 --tp=2 --shard=zero3 --world=4 -o "$OUT/zero3-tp.bin"
compile --set batch=2 --pp=2 --virtual=2 --microbatches=4 --shard=zero1 --world=4 -o "$OUT/pp-zero1.bin"

train one 1 2 --steps 6 --eval-every 3 --save "$OUT/ck-one"
train one 1 2 --steps 8 --resume "$OUT/ck-one"
for mode in dp zero1 zero2 zero3 tp pp; do
  train "$mode" 2 2 --steps 4 --eval-every 2 --save "$OUT/ck-$mode"
done
train zero3-tp 4 1 --steps 3 --save "$OUT/ck-zero3-tp"
train pp-zero1 4 1 --steps 3 --save "$OUT/ck-pp-zero1"
# A preemption on one rank: the others agree to stop, all save, exit 0.
LCC_RUN_KILL=1:3:term train zero3 2 2 --steps 8 --save "$OUT/ck-term" --resume auto
train zero3 2 2 --steps 5 --save "$OUT/ck-term" --resume auto
# A dead rank: the survivors fail their collectives (exit 4), no race on the way.
set +e
LCC_RUN_KILL=1:3 train dp 2 2 --steps 8 --timeout 20 2> "$OUT/dead.err"
code=$?
set -e
if ((code == 0)) || grep -q "Sanitizer" "$OUT/dead.err"; then
  cat "$OUT/dead.err" >&2
  echo "runs: the dead-rank run should fail without a TSan report (exit $code)" >&2
  exit 1
fi
echo "runs: all runs clean"
