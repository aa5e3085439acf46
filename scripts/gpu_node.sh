#!/usr/bin/env bash
# The one script to run on the GPU test node per session, from anywhere (it cds to the repository root):
#
#   OUT=/some/dir bash scripts/gpu_node.sh        # OUT defaults to ./gpu-out
#
# The node has Python 3.12 with torch, triton, llvmlite, numpy, cuda-bindings, pytest ... but no package index,
# so nothing is installed: the repository goes on PYTHONPATH, and the offline bundle built by
# ../shared/gpu-node/bundle.sh (ray, pydantic, ...) is unpacked to /tmp/site when .gpu-node/site.tar.xz exists.
#
# Steps (each logged to $OUT/<step>.log, exit code and seconds recorded in $OUT/steps.txt; a failing step
# does not stop the next one; the script exits non-zero when any step failed). Time limits keep the whole run
# under about 8 minutes:
#   1. gpu-tests      python3 -m pytest -m gpu -x -q tests              (limit 180 s)
#   2. runtime-check  scripts/gpu_runtime_check.py, when it exists      (limit  60 s)
#   3. bench-memory   scripts/bench_memory.py --out $OUT                (limit 240 s; writes memory-<date>.json/.md)
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${OUT:-$ROOT/gpu-out}
mkdir -p "$OUT"
STEPS="$OUT/steps.txt"
: > "$STEPS"

if [ -f .gpu-node/site.tar.xz ]; then
  mkdir -p /tmp/site
  tar -xJf .gpu-node/site.tar.xz -C /tmp/site && export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
export TILEFARM_CACHE_DIR=${TILEFARM_CACHE_DIR:-/tmp/tilefarm-cache}
export PYTHONUNBUFFERED=1

{
  echo "date: $(date -Is)"; echo "host: $(hostname)"; echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)"
  python3 -c 'import sys, torch, triton, numpy; print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__, "numpy", numpy.__version__)' 2>&1
  nvidia-smi 2>&1 | head -20
} > "$OUT/environment.txt"

failed=0
step() {  # step NAME LIMIT_S CMD...
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS rc
  echo "== $name: $*" >&2
  timeout --kill-after=10 "$limit" "$@" 2>&1 | tee "$OUT/$name.log"
  rc=${PIPESTATUS[0]}
  [ "$rc" = 124 ] && echo "== $name: timed out after ${limit}s" | tee -a "$OUT/$name.log" >&2
  echo "$name rc=$rc seconds=$((SECONDS - t0))" | tee -a "$STEPS" >&2
  [ "$rc" = 0 ] || failed=1
}

step gpu-tests 180 python3 -m pytest -m gpu -x -q tests
if [ -f scripts/gpu_runtime_check.py ]; then
  step runtime-check 60 python3 scripts/gpu_runtime_check.py
else
  echo "runtime-check skipped (no scripts/gpu_runtime_check.py)" | tee -a "$STEPS" >&2
fi
step bench-memory 240 python3 scripts/bench_memory.py --out "$OUT"

echo "== steps:" >&2
cat "$STEPS" >&2
exit $failed
