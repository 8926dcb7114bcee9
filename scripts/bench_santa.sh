#!/usr/bin/env bash
# SANTA++ on the H200: preparation, validation, stage timings and comparisons, logs to OUTDIR.
#   bash scripts/bench_santa.sh OUTDIR [ROUNDS]
# ROUNDS defaults to the full protocol (20). Launch-config variants run in one comparison so
# they share rounds (and three or more methods avoid the two-method order artifact).
set -u
out=${1:?usage: scripts/bench_santa.sh OUTDIR [ROUNDS]}
rounds=${2:-20}
mkdir -p "$out"
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 COLUMNS=160
py=${PYTHON:-python3}
status=0
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
W=/tmp/kprof_qwen32k.safetensors
[ -f $W ] || kprof capture --synthetic qwen2.5-7b-l14-32k --out $W > "$out/capture.log" 2>&1 || status=1
step santa_prepare kprof santa prepare --workload $W
for seed in 0 1 2; do
  step santa_check_seed$seed kprof check --method santa:noise_seed=$seed --workload $W
done
step santa_check_k_eq_m kprof check --method santa:k=1000000 --workload $W
step santa_stages kprof stages --method santa --workload $W --rounds "$rounds" --out "$out/santa_stages.json"
variants=(--method santa --method santa:topk.BLOCK_T=2048)
if "$py" -c "import sys, triton.language as tl; sys.exit(0 if hasattr(tl, 'topk') else 1)"; then
  variants+=(--method santa:topk.SELECT=1,merge.SELECT=1)  # tl.topk selection (newer Triton)
fi
step santa_compare kprof compare "${variants[@]}" --method cudnn --baseline flash --workload $W \
  --rounds "$rounds" --out "$out/santa_compare.json"
echo "bench_santa: overall status $status (logs in $out)"
exit $status
