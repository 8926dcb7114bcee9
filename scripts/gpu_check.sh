#!/usr/bin/env bash
# Run every GPU check in one go on a CUDA machine; all logs go to OUTDIR.
#   bash scripts/gpu_check.sh OUTDIR
# Installs kprof without touching the machine's torch/triton, prints `kprof env`, runs the
# `-m gpu` tests and the benchmarks. Exits non-zero if any step failed (all steps still run).
set -u
out=${1:?usage: scripts/gpu_check.sh OUTDIR}
mkdir -p "$out"
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
py=${PYTHON:-python3}
status=0
step() {  # step NAME CMD...: run, tee to $out/NAME.log, remember failures
  local name=$1; shift
  echo "=== $name: $*"
  local t0=$SECONDS
  "$@" 2>&1 | tee "$out/$name.log"
  local rc=${PIPESTATUS[0]}
  echo "=== $name: rc=$rc ($((SECONDS - t0)) s)"
  [ "$rc" -eq 0 ] || status=1
}
step install "$py" -m pip install -q --no-deps --no-build-isolation -e .
step env "$py" -m kprof env
step env_json "$py" -m kprof env --json
step pytest_gpu "$py" -m pytest -m gpu -q -p no:cacheprovider tests
step check_dense "$py" -m kprof check --method triton-dense --workload qwen2.5-7b-l14-32k
step bench_dense "$py" scripts/bench_dense.py --workload qwen2.5-7b-l14-32k --calls 1000 --sweep --json "$out/bench_dense.json"
echo "gpu_check: overall status $status (logs in $out)"
exit $status
